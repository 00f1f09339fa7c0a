#pragma once
// Error checks for CUDA runtime and cuBLAS calls: a failing call throws std::runtime_error
// naming the call, the file and line, the device and the error string, so a rank that
// fails stops with that message (the executor's error path stops the others).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace moebench::cuda {

[[noreturn]] inline void throw_cuda_error(const char* call, const char* file, int line,
                                          const std::string& what) {
  int dev = -1;
  cudaGetDevice(&dev);
  throw std::runtime_error(std::string(call) + " failed on CUDA device " + std::to_string(dev) +
                           " (" + file + ":" + std::to_string(line) + "): " + what);
}

inline void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) throw_cuda_error(call, file, line, cudaGetErrorString(e));
}

inline void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) throw_cuda_error(call, file, line, cublasGetStatusString(s));
}

}  // namespace moebench::cuda

#define MOEBENCH_CUDA_CHECK(call) ::moebench::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define MOEBENCH_CUBLAS_CHECK(call) \
  ::moebench::cuda::check_cublas((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports launch-configuration errors at the launch site.
#define MOEBENCH_CUDA_CHECK_LAUNCH() MOEBENCH_CUDA_CHECK(cudaGetLastError())
