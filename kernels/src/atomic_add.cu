// The IPC windows' accumulate (atomic_add.h): a grid-stride loop of system-scope atomic adds.
#include "moebench/kernels/atomic_add.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"

namespace moebench::cuda {
namespace {

__global__ void atomic_add_kernel(float* dst, const float* src, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    atomicAdd_system(dst + i, src[i]);  // other GPUs add into the same memory: system scope
}

}  // namespace

void atomic_add(float* dst, const float* src, long n, cudaStream_t stream) {
  if (n <= 0) return;
  const Launch1d l = launch_1d(n);
  atomic_add_kernel<<<l.grid, l.block, 0, stream>>>(dst, src, n);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace moebench::cuda
