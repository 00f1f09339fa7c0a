// One lazily created cuBLAS handle per host thread and CUDA device.
#include "moebench/kernels/blas_handle.h"

#include <cuda_runtime.h>

#include <vector>

#include "moebench/kernels/cuda_check.h"

namespace moebench::cuda {
namespace {

// Destroyed at thread exit (for the main thread: before static destructors and the CUDA
// runtime's own exit handlers). Errors at that point are ignored.
struct ThreadHandles {
  std::vector<cublasHandle_t> per_device;
  ~ThreadHandles() {
    for (cublasHandle_t h : per_device)
      if (h) (void)cublasDestroy(h);
  }
};

thread_local ThreadHandles t_handles;

}  // namespace

cublasHandle_t cublas_handle() {
  int device = 0;
  MOEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  std::vector<cublasHandle_t>& handles = t_handles.per_device;
  if ((size_t)device >= handles.size()) handles.resize((size_t)device + 1, nullptr);
  if (!handles[(size_t)device]) {
    cublasHandle_t h = nullptr;
    MOEBENCH_CUBLAS_CHECK(cublasCreate(&h));
    handles[(size_t)device] = h;
  }
  return handles[(size_t)device];
}

}  // namespace moebench::cuda
