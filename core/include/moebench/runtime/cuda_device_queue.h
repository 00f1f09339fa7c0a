#pragma once
// CudaDeviceQueue: the DeviceQueue of one GPU (runtime/device_queue.h) — a stream is a
// cudaStream_t (non-blocking; high priority: the device's greatest stream priority), an event a
// cudaEvent_t with timing, wait() cudaStreamWaitEvent, synchronize() cudaEventSynchronize.
// Built with the CUDA build only (MOEBENCH_HAVE_CUDA); the header has no CUDA types, so core
// code names it everywhere and the launchers take cuda_stream()'s handle.
#include <memory>

#include "moebench/runtime/device_queue.h"

namespace moebench {

class CudaDeviceQueue : public DeviceQueue {
 public:
  // Makes `device` current on the calling thread; throws naming the device when it fails.
  explicit CudaDeviceQueue(int device);
  ~CudaDeviceQueue() override;
  CudaDeviceQueue(const CudaDeviceQueue&) = delete;
  CudaDeviceQueue& operator=(const CudaDeviceQueue&) = delete;

  Stream create_stream(bool high_priority) override;
  Event record(Stream s) override;
  void wait(Stream s, Event e) override;
  void synchronize(Event e) override;
  double seconds_between(Event a, Event b) override;
  void retire_events() override;

  void* cuda_stream(Stream s) const;  // the cudaStream_t
  int device() const { return device_; }

 private:
  struct Handles;  // the streams and events (cuda_device_queue.cpp)
  int device_;
  std::unique_ptr<Handles> h_;
};

}  // namespace moebench
