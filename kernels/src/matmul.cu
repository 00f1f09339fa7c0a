// Dense matmul through cuBLAS: row-major out = inp @ weight^T is the column-major
// out^T = weight^T(op T) @ inp^T, and likewise for the gradients; bias kernels beside. Also the
// mixed-precision products of mixed_precision.h (bf16 operands, fp32 results).
#include "gemm_ex.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/matmul.h"
#include "moebench/kernels/mixed_precision.h"
#include "moebench/kernels/precision.h"
#include "reduce.cuh"

namespace moebench::cuda {
namespace {

template <typename T>
__global__ void broadcast_bias_kernel(T* out, const T* bias, int OC, long total) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x)
    out[i] = bias[i % OC];
}

// Block (32, 32) owns columns blockIdx.x*32 .. +32; thread (x, y) sums rows y, y+32, ...
template <typename T>
__global__ void bias_backward_kernel(T* dbias, const T* dout, int N, int OC) {
  const int o = blockIdx.x * kWarp + threadIdx.x;
  float acc = 0.0f;
  if (o < OC)
    for (int n = threadIdx.y; n < N; n += kWarp) acc += to_float(dout[(long)n * OC + o]);
  const float sum = tile_column_sum(acc);
  const int col = blockIdx.x * kWarp + threadIdx.y;
  if (threadIdx.x == 0 && col < OC) dbias[col] = from_float<T>(to_float(dbias[col]) + sum);
}

int ld(int n) { return n > 0 ? n : 1; }

// The products with operands of T and results of TC (T itself, or fp32 for bf16 operands:
// mixed_precision.h); the bias is of the result's type.
template <typename T, typename TC>
void forward_impl(TC* out, const T* inp, const T* weight, const TC* bias, int N, int C, int OC, cudaStream_t stream) {
  if (N <= 0 || OC <= 0) return;
  if (bias) {
    const long total = (long)N * OC;
    const Launch1d l = launch_1d(total);
    broadcast_bias_kernel<<<l.grid, l.block, 0, stream>>>(out, bias, OC, total);
    MOEBENCH_CUDA_CHECK_LAUNCH();
  }
  detail::gemm<T, TC>(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, 1.0f, weight, ld(C), 0, inp, ld(C), 0,
                      bias ? 1.0f : 0.0f, out, OC, 0, 1, stream);
}

// dinp and dweight (+=); dbias from dout_bias (the result type's dout).
template <typename T, typename TC>
void backward_impl(TC* dinp, TC* dweight, TC* dbias, const TC* dout_bias, const T* dout, const T* inp,
                   const T* weight, int N, int C, int OC, cudaStream_t stream) {
  if (N <= 0) return;
  // dinp^T[C,N] += weight^T[C,OC] @ dout^T[OC,N]  (column-major views of the row-major arrays)
  if (dinp && C > 0)
    detail::gemm<T, TC>(CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, 1.0f, weight, ld(C), 0, dout, ld(OC), 0,
                        1.0f, dinp, ld(C), 0, 1, stream);
  // dweight^T[C,OC] += inp^T[C,N] @ dout[N,OC]
  if (dweight && C > 0 && OC > 0)
    detail::gemm<T, TC>(CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, 1.0f, inp, ld(C), 0, dout, ld(OC), 0,
                        1.0f, dweight, ld(C), 0, 1, stream);
  if (dbias && OC > 0) {
    bias_backward_kernel<<<(unsigned)ceil_div(OC, kWarp), dim3(kWarp, kWarp), 0, stream>>>(
        dbias, dout_bias, N, OC);
    MOEBENCH_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

template <typename T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int N, int C, int OC,
                    cudaStream_t stream) {
  forward_impl<T, T>(out, inp, weight, bias, N, C, OC, stream);
}

template <typename T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                     int N, int C, int OC, cudaStream_t stream) {
  backward_impl<T, T>(dinp, dweight, dbias, dout, dout, inp, weight, N, C, OC, stream);
}

void matmul_forward_mixed(float* out, const bf16* inp16, const bf16* weight16, const float* bias, int N, int C,
                          int OC, cudaStream_t stream) {
  forward_impl<bf16, float>(out, inp16, weight16, bias, N, C, OC, stream);
}

void matmul_backward_mixed(float* dinp, float* dweight, float* dbias, const float* dout, const bf16* dout16,
                           const bf16* inp16, const bf16* weight16, int N, int C, int OC, cudaStream_t stream) {
  backward_impl<bf16, float>(dinp, dweight, dbias, dout, dout16, inp16, weight16, N, C, OC, stream);
}

template void matmul_forward<float>(float*, const float*, const float*, const float*, int, int,
                                    int, cudaStream_t);
template void matmul_forward<bf16>(bf16*, const bf16*, const bf16*, const bf16*, int, int, int,
                                   cudaStream_t);
template void matmul_backward<float>(float*, float*, float*, const float*, const float*,
                                     const float*, int, int, int, cudaStream_t);
template void matmul_backward<bf16>(bf16*, bf16*, bf16*, const bf16*, const bf16*, const bf16*,
                                    int, int, int, cudaStream_t);

}  // namespace moebench::cuda
