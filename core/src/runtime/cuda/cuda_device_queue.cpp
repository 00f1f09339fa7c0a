// Built only with the CUDA build (core/CMakeLists.txt: src/runtime/cuda/).
#include "moebench/runtime/cuda_device_queue.h"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace moebench {
namespace {

void check(cudaError_t e, const char* call, int device) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(call) + " failed on GPU " + std::to_string(device) + ": " +
                             cudaGetErrorString(e));
}

}  // namespace

struct CudaDeviceQueue::Handles {
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> events;  // event e of this cycle (retire_events() starts a new one)
  std::vector<cudaEvent_t> free;    // retired, reused by record()
};

CudaDeviceQueue::CudaDeviceQueue(int device) : device_(device), h_(std::make_unique<Handles>()) {
  check(cudaSetDevice(device), "cudaSetDevice", device);
}

CudaDeviceQueue::~CudaDeviceQueue() {
  cudaSetDevice(device_);
  for (cudaEvent_t e : h_->events) cudaEventDestroy(e);
  for (cudaEvent_t e : h_->free) cudaEventDestroy(e);
  for (cudaStream_t s : h_->streams) cudaStreamDestroy(s);
}

DeviceQueue::Stream CudaDeviceQueue::create_stream(bool high_priority) {
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange", device_);
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, high_priority ? greatest : least),
        "cudaStreamCreateWithPriority", device_);
  h_->streams.push_back(s);
  return (Stream)h_->streams.size() - 1;
}

DeviceQueue::Event CudaDeviceQueue::record(Stream s) {
  cudaEvent_t e = nullptr;
  if (!h_->free.empty()) {
    e = h_->free.back();
    h_->free.pop_back();
  } else {
    check(cudaEventCreate(&e), "cudaEventCreate", device_);
  }
  h_->events.push_back(e);
  check(cudaEventRecord(e, (cudaStream_t)cuda_stream(s)), "cudaEventRecord", device_);
  return (Event)h_->events.size() - 1;
}

void CudaDeviceQueue::wait(Stream s, Event e) {
  check(cudaStreamWaitEvent((cudaStream_t)cuda_stream(s), h_->events.at((size_t)e), 0), "cudaStreamWaitEvent",
        device_);
}

void CudaDeviceQueue::synchronize(Event e) {
  check(cudaEventSynchronize(h_->events.at((size_t)e)), "cudaEventSynchronize (a kernel or copy before it failed)",
        device_);
}

double CudaDeviceQueue::seconds_between(Event a, Event b) {
  float ms = 0.0f;
  check(cudaEventElapsedTime(&ms, h_->events.at((size_t)a), h_->events.at((size_t)b)), "cudaEventElapsedTime",
        device_);
  return ms / 1e3;
}

void CudaDeviceQueue::retire_events() {
  h_->free.insert(h_->free.end(), h_->events.begin(), h_->events.end());
  h_->events.clear();
}

void* CudaDeviceQueue::cuda_stream(Stream s) const {
  if (s < 0 || s >= (Stream)h_->streams.size())
    throw std::out_of_range("CudaDeviceQueue: no stream " + std::to_string(s));
  return h_->streams[(size_t)s];
}

}  // namespace moebench
