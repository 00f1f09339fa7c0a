// fill_normal (random_fill.h): SplitMix64 of (key, index), Box-Muller, grid-stride.
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/precision.h"
#include "moebench/kernels/random_fill.h"

namespace moebench::cuda {
namespace {

__device__ inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <typename T>
__global__ void fill_normal_kernel(T* dst, long n, float scale, uint64_t key) {
  const uint64_t k = splitmix64(key);
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    const uint64_t bits = splitmix64(k ^ splitmix64((uint64_t)i));
    // u1 in (0, 1] (never 0: log is finite), u2 in [0, 1).
    const float u1 = ((float)(uint32_t)(bits >> 40) + 1.0f) * (1.0f / 16777216.0f);
    const float u2 = (float)(uint32_t)(bits & 0xFFFFFFu) * (1.0f / 16777216.0f);
    const float z = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
    dst[i] = from_float<T>(scale * z);
  }
}

}  // namespace

template <typename T>
void fill_normal(T* dst, long n, float scale, uint64_t key, cudaStream_t stream) {
  const Launch1d l = launch_1d(n);
  if (l.grid == 0) return;
  fill_normal_kernel<T><<<l.grid, l.block, 0, stream>>>(dst, n, scale, key);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template void fill_normal<float>(float*, long, float, uint64_t, cudaStream_t);
template void fill_normal<bf16>(bf16*, long, float, uint64_t, cudaStream_t);

}  // namespace moebench::cuda
