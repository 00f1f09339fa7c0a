#pragma once
// StreamExecutor: the Executor (runtime/executor.h) of a device (runtime/device_queue.h) — the
// GPU path's counterpart of ThreadExecutor, for the same graphs.
//   streams  one per stream role and lane (a task with `priority` gets its role's second,
//            high-priority stream); a task of role host runs on the compute stream, in
//            submission order with the compute tasks (as Executor runs it on the compute worker);
//            in serial mode (set_serial) every task goes on the compute stream.
//   submit   the host thread enqueues the graph's new tasks in a topological order, ahead of
//            the device: per task, for each dependency on another stream a wait on that
//            dependency's end event (one per producer stream: the latest needed), a start
//            event, the action (it enqueues on current_stream()), an end event. No host wait.
//   wait     the host waits for one task's end event (the MoE routing point: the counts), or
//            synchronize() for everything submitted, or release() for one graph's tasks.
//   outside  device work enqueued outside a task (between steps: zeroing the gradients, a
//            checkpoint's copies; run_inline's fn) goes on the compute stream, which is the
//            queue's current stream whenever no task's action runs: in order with the step's
//            compute tasks, and complete once synchronize() returned.
// Spans come from the events: the first task after a synchronize() records an epoch event and
// reads the host clock; a span's start and end are that clock reading plus the seconds from the
// epoch event to the task's events (read by synchronize(), which then retires the events). An action that throws while enqueuing
// fails the submit with its task's name; the device's errors come from synchronize().
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "moebench/runtime/device_queue.h"
#include "moebench/runtime/executor.h"

namespace moebench {

class StreamExecutor final : public Executor {
 public:
  // now: the host clock spans are placed on (seconds; default: since construction). Makes the
  // compute stream the queue's current stream (see "outside" above).
  StreamExecutor(DeviceQueue& queue, int rank, std::function<double()> now = {});
  ~StreamExecutor() override;
  StreamExecutor(const StreamExecutor&) = delete;
  StreamExecutor& operator=(const StreamExecutor&) = delete;

  // Enqueues tasks [g.submitted(), g.size()); g must stay alive until they completed.
  void submit(TaskGraph& g) override;
  // The host waits until task `id` of g has completed on the device.
  void wait(const TaskGraph& g, TaskId id) override;
  // The host waits for g's tasks; their spans become available to take_spans().
  void release(const TaskGraph& g) override;
  // The host waits for every submitted task; their spans become available to take_spans().
  void synchronize() override;
  void set_serial(bool serial) override { serial_ = serial; }  // every task on the compute stream
  void run_inline(const std::string& name, StreamRole role, TaskCategory category, const std::function<void()>& fn,
                  int layer = -1, double flops = 0.0, uint64_t bytes = 0) override;
  // Spans of the tasks completed by release() / synchronize() (in submission order per graph),
  // and those added.
  std::vector<Span> take_spans() override;
  void add_span(Span span) override;
  void set_step(long step) override { step_ = step; }
  double now() const override { return now_(); }
  int rank() const override { return rank_; }

  // The stream a task of (role, priority) is enqueued on (created on first use).
  DeviceQueue::Stream stream_of(StreamRole role, bool priority);

 private:
  struct Done {  // a submitted task: its stream and events, and its span's labels
    DeviceQueue::Stream stream = -1;
    DeviceQueue::Event start = -1, end = -1;
    Span span;
  };
  Done& done(const TaskGraph& g, int index);
  // Waits for the last task of each stream among `tasks`, then adds their spans.
  void complete(const std::vector<Done>& tasks);

  DeviceQueue& q_;
  int rank_;
  long step_ = -1;
  std::function<double()> now_;
  DeviceQueue::Event epoch_ = -1;  // the cycle's first event: spans are timed from it ...
  double anchor_ = 0.0;            // ... and placed at this host time
  std::map<std::pair<int, bool>, DeviceQueue::Stream> streams_;  // (role, priority) -> stream
  bool serial_ = false;
  // Per graph (its serial), per task index: what submit enqueued.
  std::map<uint64_t, std::vector<Done>> graphs_;
  // Per consumer stream, per producer stream: the latest producer event it already waits for.
  std::map<DeviceQueue::Stream, std::map<DeviceQueue::Stream, DeviceQueue::Event>> waited_;
  std::vector<Span> spans_;
};

}  // namespace moebench
