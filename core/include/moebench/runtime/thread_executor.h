#pragma once
// ThreadExecutor: the CPU's Executor (runtime/executor.h): runs task graphs on one rank, one
// worker thread per stream role.
//   worker  a CPU thread per role (created on first use) running its tasks in submission
//           order (a device's counterpart: StreamExecutor's streams). Tasks of different roles run concurrently:
//           overlap is real. A comm task uses the communicator of its role (the builder binds
//           it), so concurrent collectives never share matching. A task of role host (a blocking
//           collective in the rank's chain of compute tasks: a TP all-reduce) runs on the
//           compute worker, in submission order with the compute tasks. A task with `priority` runs on
//           its role's priority lane, a second thread of the role: it never queues behind
//           the role's other tasks (MoNTA: the EP AllToAll before DP gradient buckets).
//   submit  the rank's main thread submits a graph's new tasks (those added since the last
//           submit) in a topological order, then waits for a task or for everything. A graph
//           may grow while it runs (a block's tasks once its routing is known).
// A task waits for its dependencies' completion. An exception thrown by a task is captured;
// tasks depending on it are skipped (no action, no span) and fail with the same error, which
// wait() / synchronize() rethrow on the main thread: a failing rank reports it, never hangs.
// Every executed task records a Span (runtime/span.h), except a task with an empty name (a
// join point with no work of its own).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "moebench/runtime/executor.h"

namespace moebench {

class ThreadExecutor final : public Executor {
 public:
  explicit ThreadExecutor(int rank);
  ~ThreadExecutor() override;  // drains and joins the workers
  ThreadExecutor(const ThreadExecutor&) = delete;
  ThreadExecutor& operator=(const ThreadExecutor&) = delete;

  void submit(TaskGraph& g) override;
  void wait(const TaskGraph& g, TaskId id) override;
  void release(const TaskGraph& g) override;
  void synchronize() override;

  void set_serial(bool serial) override { serial_ = serial; }

  void run_inline(const std::string& name, StreamRole role, TaskCategory category, const std::function<void()>& fn,
                  int layer = -1, double flops = 0.0, uint64_t bytes = 0) override;
  std::vector<Span> take_spans() override;  // in completion order
  void add_span(Span span) override;
  void set_step(long step) override { step_ = step; }
  double now() const override;  // seconds since construction
  int rank() const override { return rank_; }

 private:
  struct State;   // completion of one task
  struct Item;    // one queued task
  class Worker;
  Worker& worker(StreamRole role, bool priority);
  void record(Span span);

  int rank_;
  std::atomic<long> step_{-1};
  bool serial_ = false;
  std::chrono::steady_clock::time_point epoch_;
  std::mutex m_;
  std::unique_ptr<Worker> workers_[2 * kStreamRoles];  // per role, then per role's priority lane
  // Completion state per submitted graph (by serial), index = task index.
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<State>>> states_;
  std::vector<Span> spans_;
};

}  // namespace moebench
