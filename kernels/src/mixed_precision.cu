// Casts between fp32 and bf16 and the bf16 gradient's accumulation (mixed_precision.h); the
// mixed products are matmul.cu's.
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/mixed_precision.h"

namespace moebench::cuda {
namespace {

template <typename To, typename From>
__global__ void cast_kernel(To* out, const From* in, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    out[i] = from_float<To>(to_float(in[i]));
}

__global__ void accumulate_kernel(float* acc, const bf16* x, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    acc[i] += __bfloat162float(x[i]);
}

template <typename To, typename From>
void launch_cast(To* out, const From* in, long n, cudaStream_t stream) {
  if (n <= 0) return;
  const Launch1d l = launch_1d(n);
  cast_kernel<<<l.grid, l.block, 0, stream>>>(out, in, n);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace

void cast(bf16* out, const float* in, long n, cudaStream_t stream) { launch_cast(out, in, n, stream); }
void cast(float* out, const bf16* in, long n, cudaStream_t stream) { launch_cast(out, in, n, stream); }

void accumulate(float* acc, const bf16* x, long n, cudaStream_t stream) {
  if (n <= 0) return;
  const Launch1d l = launch_1d(n);
  accumulate_kernel<<<l.grid, l.block, 0, stream>>>(acc, x, n);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace moebench::cuda
