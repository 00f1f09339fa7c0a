// Attention: cuBLAS GEMMs on the [B,T,3C] layout (column-major views: a row-major [T,hs] head
// slice with row stride 3C is a column-major hs x T matrix with ld 3C, a row-major [T,T]
// score matrix S is the column-major S^T with ld T) plus warp-per-row causal softmax kernels.
#include <cmath>
#include <stdexcept>
#include <string>

#include "gemm_ex.h"
#include "moebench/kernels/attention.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/precision.h"
#include "reduce.cuh"

namespace moebench::cuda {
namespace {

// Row r = (b*NH + h)*T + t of preatt -> att: softmax over t2 <= t, zeros above.
template <typename F>
__global__ void causal_softmax_forward_kernel(F* att, F* preatt, long rows, int T) {
  const long r = blockIdx.x * (long)(blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (r >= rows) return;
  const int lane = threadIdx.x % kWarp;
  const int t = (int)(r % T);
  F* pre = preatt + r * T;
  F* a = att + r * T;
  float maxval = -INFINITY;
  for (int t2 = lane; t2 <= t; t2 += kWarp) maxval = fmaxf(maxval, to_float(pre[t2]));
  maxval = warp_max(maxval);
  float sum = 0.0f;
  for (int t2 = lane; t2 <= t; t2 += kWarp) sum += expf(to_float(pre[t2]) - maxval);
  const float inv = 1.0f / warp_sum(sum);
  for (int t2 = lane; t2 < T; t2 += kWarp) {
    if (t2 <= t) {
      a[t2] = from_float<F>(expf(to_float(pre[t2]) - maxval) * inv);
    } else {
      a[t2] = from_float<F>(0.0f);
      pre[t2] = from_float<F>(0.0f);
    }
  }
}

// dpreatt = att * (datt - sum_{t2<=t} att * datt) for t2 <= t; dpreatt and datt 0 above.
template <typename F>
__global__ void causal_softmax_backward_kernel(F* dpreatt, F* datt, const F* att, long rows, int T) {
  const long r = blockIdx.x * (long)(blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (r >= rows) return;
  const int lane = threadIdx.x % kWarp;
  const int t = (int)(r % T);
  const F* a = att + r * T;
  F* da = datt + r * T;
  F* dpre = dpreatt + r * T;
  float dot = 0.0f;
  for (int t2 = lane; t2 <= t; t2 += kWarp) dot += to_float(a[t2]) * to_float(da[t2]);
  dot = warp_sum(dot);
  for (int t2 = lane; t2 < T; t2 += kWarp) {
    if (t2 <= t) {
      dpre[t2] = from_float<F>(to_float(a[t2]) * (to_float(da[t2]) - dot));
    } else {
      dpre[t2] = from_float<F>(0.0f);
      da[t2] = from_float<F>(0.0f);
    }
  }
}

// A GEMM operand of head (b, h): base + b*per_b + h*per_h, leading dimension ld.
template <typename P>
struct HeadOperand {
  P* base;
  int ld;
  long long per_b, per_h;
};

// One column-major GEMM per (b, h) pair: cuBLAS-batched over the larger of B and NH, looped
// over the other.
template <typename F>
void head_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
               HeadOperand<const F> A, HeadOperand<const F> Bop, float beta, HeadOperand<F> Cop,
               int B, int NH, cudaStream_t stream) {
  if (NH >= B) {
    for (int b = 0; b < B; ++b)
      detail::gemm<F>(ta, tb, m, n, k, alpha, A.base + b * A.per_b, A.ld, A.per_h,
                      Bop.base + b * Bop.per_b, Bop.ld, Bop.per_h, beta, Cop.base + b * Cop.per_b,
                      Cop.ld, Cop.per_h, NH, stream);
  } else {
    for (int h = 0; h < NH; ++h)
      detail::gemm<F>(ta, tb, m, n, k, alpha, A.base + h * A.per_h, A.ld, A.per_b,
                      Bop.base + h * Bop.per_h, Bop.ld, Bop.per_b, beta, Cop.base + h * Cop.per_h,
                      Cop.ld, Cop.per_b, B, stream);
  }
}

void check_heads(const char* what, int C, int NH) {
  if (NH <= 0 || C % NH != 0)
    throw std::invalid_argument(std::string(what) + ": C = " + std::to_string(C) +
                                " is not divisible by NH = " + std::to_string(NH));
}

}  // namespace

template <typename F>
void attention_forward(F* out, F* preatt, F* att, const F* qkv, int B, int T, int C, int NH,
                       cudaStream_t stream) {
  check_heads("attention_forward", C, NH);
  if (B <= 0 || T <= 0 || C <= 0) return;
  const int hs = C / NH;
  const int C3 = 3 * C;
  const long long qkv_b = (long long)T * C3, tt = (long long)T * T, tt_b = tt * NH;
  const float scale = 1.0f / std::sqrt((float)hs);
  const HeadOperand<const F> q{qkv, C3, qkv_b, hs}, k{qkv + C, C3, qkv_b, hs},
      v{qkv + 2 * C, C3, qkv_b, hs};
  // preatt^T[t2,t] = scale * k[t2,:] . q[t,:]   (m = n = T, k = hs)
  head_gemm<F>(CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, scale, k, q, 0.0f,
               HeadOperand<F>{preatt, T, tt_b, tt}, B, NH, stream);
  const long rows = (long)B * NH * T;
  const Launch1d l = launch_rows(rows);
  causal_softmax_forward_kernel<<<l.grid, l.block, 0, stream>>>(att, preatt, rows, T);
  MOEBENCH_CUDA_CHECK_LAUNCH();
  // out^T[i,t] = sum_t2 v^T[i,t2] att^T[t2,t]   (m = hs, n = T, k = T)
  head_gemm<F>(CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, v,
               HeadOperand<const F>{att, T, tt_b, tt}, 0.0f,
               HeadOperand<F>{out, C, (long long)T * C, hs}, B, NH, stream);
}

template <typename F>
void attention_backward(F* dqkv, F* dpreatt, F* datt, const F* dout, const F* qkv, const F* att,
                        int B, int T, int C, int NH, cudaStream_t stream) {
  check_heads("attention_backward", C, NH);
  if (B <= 0 || T <= 0 || C <= 0) return;
  const int hs = C / NH;
  const int C3 = 3 * C;
  const long long qkv_b = (long long)T * C3, tt = (long long)T * T, tt_b = tt * NH;
  const float scale = 1.0f / std::sqrt((float)hs);
  const HeadOperand<const F> q{qkv, C3, qkv_b, hs}, k{qkv + C, C3, qkv_b, hs},
      v{qkv + 2 * C, C3, qkv_b, hs};
  const HeadOperand<F> dq{dqkv, C3, qkv_b, hs}, dk{dqkv + C, C3, qkv_b, hs},
      dv{dqkv + 2 * C, C3, qkv_b, hs};
  const HeadOperand<const F> dout_h{dout, C, (long long)T * C, hs};
  const HeadOperand<const F> att_h{att, T, tt_b, tt}, dpre_h{dpreatt, T, tt_b, tt};
  // dv^T[i,t2] += sum_t dout^T[i,t] att[t,t2]
  head_gemm<F>(CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, dout_h, att_h, 1.0f, dv, B, NH, stream);
  // datt^T[t2,t] = v[t2,:] . dout[t,:]   (the full square; the softmax kernel zeroes t2 > t)
  head_gemm<F>(CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, 1.0f, v, dout_h, 0.0f,
               HeadOperand<F>{datt, T, tt_b, tt}, B, NH, stream);
  const long rows = (long)B * NH * T;
  const Launch1d l = launch_rows(rows);
  causal_softmax_backward_kernel<<<l.grid, l.block, 0, stream>>>(dpreatt, datt, att, rows, T);
  MOEBENCH_CUDA_CHECK_LAUNCH();
  // dq^T[i,t] += scale * sum_t2 k^T[i,t2] dpreatt^T[t2,t]
  head_gemm<F>(CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, scale, k, dpre_h, 1.0f, dq, B, NH, stream);
  // dk^T[i,t2] += scale * sum_t q^T[i,t] dpreatt[t,t2]
  head_gemm<F>(CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, scale, q, dpre_h, 1.0f, dk, B, NH, stream);
}

template void attention_forward<float>(float*, float*, float*, const float*, int, int, int, int,
                                       cudaStream_t);
template void attention_forward<bf16>(bf16*, bf16*, bf16*, const bf16*, int, int, int, int,
                                      cudaStream_t);
template void attention_backward<float>(float*, float*, float*, const float*, const float*,
                                        const float*, int, int, int, int, cudaStream_t);
template void attention_backward<bf16>(bf16*, bf16*, bf16*, const bf16*, const bf16*,
                                       const bf16*, int, int, int, int, cudaStream_t);

}  // namespace moebench::cuda
