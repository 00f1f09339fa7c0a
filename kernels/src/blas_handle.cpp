// cublas_handle(): a thread_local map device -> handle. Each host thread gets its own handles
// (cuBLAS handles must not be used by two threads at once), created with cublasCreate on first
// use on a device and destroyed when the thread exits.
#include "moebench/kernels/blas_handle.h"

#include <cuda_runtime.h>

#include <map>

#include "moebench/kernels/cuda_check.h"

namespace moebench::cuda {
namespace {

struct ThreadHandles {
  std::map<int, cublasHandle_t> by_device;
  ThreadHandles() = default;
  ThreadHandles(const ThreadHandles&) = delete;
  ThreadHandles& operator=(const ThreadHandles&) = delete;
  // At thread exit. Errors are ignored: at process exit the CUDA runtime may already be
  // shutting down, and a destructor must not throw.
  ~ThreadHandles() {
    int current = -1;
    const bool have_current = cudaGetDevice(&current) == cudaSuccess;
    for (auto& [device, handle] : by_device) {
      if (cudaSetDevice(device) == cudaSuccess) (void)cublasDestroy(handle);
    }
    if (have_current) (void)cudaSetDevice(current);
    (void)cudaGetLastError();
  }
};

}  // namespace

cublasHandle_t cublas_handle() {
  thread_local ThreadHandles handles;
  int device = 0;
  MOEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  const auto it = handles.by_device.find(device);
  if (it != handles.by_device.end()) return it->second;
  cublasHandle_t handle = nullptr;
  MOEBENCH_CUBLAS_CHECK(cublasCreate(&handle));
  handles.by_device.emplace(device, handle);
  return handle;
}

}  // namespace moebench::cuda
