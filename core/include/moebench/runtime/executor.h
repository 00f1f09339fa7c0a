#pragma once
// Executor: runs task graphs (runtime/task_graph.h) on one rank. Two implementations run the
// same graphs:
//   ThreadExecutor  (runtime/thread_executor.h) the CPU: a worker thread per stream role;
//   StreamExecutor  (runtime/stream_executor.h) a device: a stream per stream role, event
//                   waits between them, the host enqueuing ahead.
// The rank's main thread builds a graph, submits its new tasks (a graph may grow while it runs:
// a block's tasks once its routing is known), waits for one task (the MoE routing point) or for
// everything at the step's end. Errors of tasks reach the main thread through wait() /
// synchronize() (or submit(), for a device action that fails while enqueuing). Every executed
// task with a name records a Span (runtime/span.h).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "moebench/runtime/span.h"
#include "moebench/runtime/task_graph.h"

namespace moebench {

class Executor {
 public:
  virtual ~Executor() = default;

  // Runs (enqueues) tasks [g.submitted(), g.size()) in a topological order. The graph must stay
  // alive until they completed and must not be submitted to another executor. Throws
  // std::logic_error for a cycle.
  virtual void submit(TaskGraph& g) = 0;
  // The host waits for one submitted task; rethrows its error (or its failed dependency's).
  virtual void wait(const TaskGraph& g, TaskId id) = 0;
  // Waits for every submitted task of g, then forgets them; rethrows the first error among
  // them. For graphs that end before the step does (an MoE block's pass).
  virtual void release(const TaskGraph& g) = 0;
  // Waits for every submitted task of every graph; rethrows the earliest error. Forgets the
  // graphs (call at step boundaries; their tasks cannot be waited on after).
  virtual void synchronize() = 0;

  // Runs fn on the calling thread, recording a span of `role`: the main thread's work outside a
  // step's graph (an evaluation's loss reductions, a checkpoint's gathers).
  virtual void run_inline(const std::string& name, StreamRole role, TaskCategory category,
                          const std::function<void()>& fn, int layer = -1, double flops = 0.0,
                          uint64_t bytes = 0) = 0;

  // Serial mode (`bench overlap`'s baseline): every task submitted from now on runs where the
  // compute tasks run (the compute worker, the compute stream), in the submission (topological)
  // order, its span keeping its own role.
  virtual void set_serial(bool serial) = 0;

  // Spans recorded since the last take_spans().
  virtual std::vector<Span> take_spans() = 0;
  // Records a span measured by the caller (start/end from now()); rank and step are filled in.
  virtual void add_span(Span span) = 0;
  virtual void set_step(long step) = 0;
  virtual double now() const = 0;  // seconds since the executor's epoch (the spans' clock)
  virtual int rank() const = 0;
};

}  // namespace moebench
