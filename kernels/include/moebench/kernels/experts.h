#pragma once
// The expert FFNs of an MoE block on the device: core's ExpertBank (moe/expert_bank.h) as
// launchers. Rows [offsets[e], offsets[e+1]) of the permuted activations belong to expert e;
// expert(x) = W2 gelu(W1 x + b1) + b2. Two paths compute it (expert_gemm_tuner.h; `path`, by
// default the measured choice):
//   grouped     each matrix product over all experts is ONE grouped cuBLAS call
//               (cublasGemmGroupedBatchedEx, built by grouped_gemm_args.h; experts with no rows
//               are left out); between them one kernel adds b1 and applies GeLU, one applies
//               GeLU's derivative and sums b1's gradient, one sums b2's gradient;
//   per_expert  one cuBLASLt matmul per expert and product (the same grouped_gemm_args.h
//               problems), spread over 4 streams of the calling thread that fork from and join
//               `stream` by events, with the epilogues fused: bias + GeLU into the first GEMM
//               (GELU_AUX_BIAS, keeping h), bias into the second (BIAS), the GeLU derivative
//               and b1's gradient into the input gradient's GEMM (DGELU_BGRAD). Where cuBLASLt
//               has no algorithm for an epilogue (asked once per call) or an operand is not
//               16-byte aligned, that step runs with the grouped path's kernels. b2's gradient
//               is the bias kernel on both paths.
//
// Weights: one contiguous block per tensor over the E local experts, expert e's part at offset
// e * (size of one expert's tensor):
//   w1 [E, F, C], b1 [E, F], w2 [E, C, F], b2 [E, C]
// or, with ExpertWeights::stride, expert e's part of every tensor at e * stride: the parameter
// arena's layout (model/param_arena.h: w1, b1, w2, b2 of expert 0, then of expert 1, ...;
// stride 2FC + F + C). Gradients have the same layout and type. T = float (fp32 GEMMs, CUBLAS_COMPUTE_32F, no
// TF32) or bf16 (bf16 storage, CUBLAS_COMPUTE_32F accumulation; bias sums in fp32).
//
// offsets is a HOST array [E+1] with offsets[0] = 0 (the rows per expert are needed on the
// host to size the GEMMs; the caller has them from the counts it downloaded to size the
// exchange). Each call uploads its pointer arrays and a copy of the offsets into a
// stream-ordered allocation (cudaMallocAsync / cudaFreeAsync); the upload is from pageable
// memory, so these launchers cannot be captured into a CUDA graph.
// For bf16, cuBLAS wants 16-byte aligned matrices: C and F must be multiples of 8 (else
// std::invalid_argument).
// cuBLAS runs on cublas_handle() (blas_handle.h) with the caller's stream and host pointer
// mode; fp32 GEMMs follow the handle's math mode (the default keeps full fp32, no TF32).
//
// Determinism: cuBLAS GEMMs with a fixed configuration, bias sums row by row in order.
#include <cuda_runtime.h>

#include "moebench/kernels/expert_gemm_tuner.h"

namespace moebench::cuda {

// Per-expert FFN parameters (or their gradients): contiguous [E, ...] blocks, see above.
template <typename T>
struct ExpertWeights {
  T* w1 = nullptr;  // [E, F, C]
  T* b1 = nullptr;  // [E, F]
  T* w2 = nullptr;  // [E, C, F]
  T* b2 = nullptr;  // [E, C]
  long stride = 0;  // elements from expert e's part of a tensor to e+1's; 0: the tensor's own size
  long step(long own) const { return stride ? stride : own; }
};

// y[S,C] (overwritten) = expert rows of x[S,C], S = offsets[E]; h[S,F] (pre-GeLU) and
// a[S,F] (post-GeLU) are written and must be kept for experts_backward.
template <typename T>
void experts_forward(T* y, T* h, T* a, const T* x, const int* offsets, const ExpertWeights<T>& w,
                     int E, int C, int F, cudaStream_t stream = nullptr,
                     ExpertGemmPath path = ExpertGemmPath::automatic);

// dx[S,C] (overwritten) and the gradients dw (accumulated, += as ExpertBank) from dy[S,C],
// given the forward's x, h, a. da and dh are scratch [S,F] (overwritten). Experts with no
// rows keep their gradients unchanged.
template <typename T>
void experts_backward(T* dx, const ExpertWeights<T>& dw, T* da, T* dh, const T* dy, const T* x,
                      const T* h, const T* a, const int* offsets, const ExpertWeights<T>& w, int E,
                      int C, int F, cudaStream_t stream = nullptr,
                      ExpertGemmPath path = ExpertGemmPath::automatic);

}  // namespace moebench::cuda
