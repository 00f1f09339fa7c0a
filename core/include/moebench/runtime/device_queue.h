#pragma once
// DeviceQueue: the device a StreamExecutor enqueues on (runtime/stream_executor.h) — ordered
// streams of work, events recorded on them, waits of one stream for another's event, and the
// host's waits. The CUDA implementation maps them to cudaStream_t / cudaEvent_t
// (kernels/cuda_device_queue.h); the tests' fake (tests/fake_device_queue.h) runs the streams
// on a virtual clock in random interleavings and records every call.
//
// The contract both keep (CUDA's stream semantics):
//   * work enqueued on one stream runs in enqueue order;
//   * wait(s, e) makes the work enqueued on s afterwards start after e has completed;
//   * an event completes when the work enqueued on its stream before record() has completed;
//   * nothing here blocks the host except synchronize().
// A task's action enqueues its device work on current_stream() (set by the executor around
// the action): kernels and NCCL calls take the stream from there, so the graph's actions stay
// std::function<void()> on the CPU and the GPU.
#include <cstdint>

namespace moebench {

class DeviceQueue {
 public:
  using Stream = int;  // a stream of this queue (0, 1, ...)
  using Event = int64_t;

  virtual ~DeviceQueue() = default;
  // A new stream; high priority: its work is scheduled ahead of the other streams' (CUDA's
  // stream priorities: the roles MoNTA's ep_priority lifts).
  virtual Stream create_stream(bool high_priority) = 0;
  // An event completing when the work enqueued on s so far has completed.
  virtual Event record(Stream s) = 0;
  // Work enqueued on s from now on starts after e has completed (no host wait).
  virtual void wait(Stream s, Event e) = 0;
  // The host waits until e has completed; throws the device's error (a failed kernel, an
  // out-of-memory) naming what failed.
  virtual void synchronize(Event e) = 0;
  // Seconds from a's completion to b's (both completed).
  virtual double seconds_between(Event a, Event b) = 0;
  // Every event recorded so far has completed and is not used again: their handles are reused,
  // and the next record() returns 0 again.
  virtual void retire_events() = 0;

  // The stream the running action enqueues on (-1 outside an action).
  Stream current_stream() const { return current_; }
  void set_current_stream(Stream s) { current_ = s; }

 private:
  Stream current_ = -1;
};

}  // namespace moebench
