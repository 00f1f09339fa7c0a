// Casts between fp32 and bf16 and the GEMMs of bf16 operands into fp32 results
// (mixed_precision.h); row-major products as matmul.cu maps them onto column-major cuBLAS.
#include "gemm_ex.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/matmul.h"
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

__global__ void broadcast_bias_kernel(float* out, const float* bias, int OC, long total) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x)
    out[i] = bias[i % OC];
}

template <typename To, typename From>
void launch_cast(To* out, const From* in, long n, cudaStream_t stream) {
  if (n <= 0) return;
  const Launch1d l = launch_1d(n);
  cast_kernel<<<l.grid, l.block, 0, stream>>>(out, in, n);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

int ld(int n) { return n > 0 ? n : 1; }

}  // namespace

void cast(bf16* out, const float* in, long n, cudaStream_t stream) { launch_cast(out, in, n, stream); }
void cast(float* out, const bf16* in, long n, cudaStream_t stream) { launch_cast(out, in, n, stream); }

void accumulate(float* acc, const bf16* x, long n, cudaStream_t stream) {
  if (n <= 0) return;
  const Launch1d l = launch_1d(n);
  accumulate_kernel<<<l.grid, l.block, 0, stream>>>(acc, x, n);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

void matmul_forward_mixed(float* out, const bf16* inp16, const bf16* weight16, const float* bias, int N, int C,
                          int OC, cudaStream_t stream) {
  if (N <= 0 || OC <= 0) return;
  if (bias) {
    const long total = (long)N * OC;
    const Launch1d l = launch_1d(total);
    broadcast_bias_kernel<<<l.grid, l.block, 0, stream>>>(out, bias, OC, total);
    MOEBENCH_CUDA_CHECK_LAUNCH();
  }
  detail::gemm<bf16, float>(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, 1.0f, weight16, ld(C), 0, inp16, ld(C), 0,
                            bias ? 1.0f : 0.0f, out, OC, 0, 1, stream);
}

void matmul_backward_mixed(float* dinp, float* dweight, float* dbias, const float* dout, const bf16* dout16,
                           const bf16* inp16, const bf16* weight16, int N, int C, int OC, cudaStream_t stream) {
  if (N <= 0) return;
  if (dinp && C > 0)  // dinp^T[C,N] += weight^T[C,OC] @ dout^T[OC,N]
    detail::gemm<bf16, float>(CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, 1.0f, weight16, ld(C), 0, dout16, ld(OC), 0,
                              1.0f, dinp, ld(C), 0, 1, stream);
  if (dweight && C > 0 && OC > 0)  // dweight^T[C,OC] += inp^T[C,N] @ dout[N,OC]
    detail::gemm<bf16, float>(CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, 1.0f, inp16, ld(C), 0, dout16, ld(OC), 0,
                              1.0f, dweight, ld(C), 0, 1, stream);
  if (dbias) matmul_backward<float>(nullptr, nullptr, dbias, dout, nullptr, nullptr, N, C, OC, stream);
}

}  // namespace moebench::cuda
