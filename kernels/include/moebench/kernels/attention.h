#pragma once
// Causal multi-head self-attention core on the device: model/attention.h's functions with the
// same names and argument order plus the stream, for the CPU layout (no permuted copies, so
// no workspace): qkv[B,T,3C] = (q | k | v), head h in columns h*hs .. (h+1)*hs of each part,
// hs = C/NH; preatt, att, dpreatt, datt [B,NH,T,T]; out, dout [B,T,C]. F = float or bf16
// for every array (the [B,NH,T,T] ones included); fp32 softmax math and GEMM accumulation.
//
// The products are cuBLAS strided-batched GEMMs (cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F,
// cublas_handle()) reading q, k, v and writing out / dqkv in place through leading dimension
// 3C or C: batched over the larger of B and NH, looped over the other. QK^T is computed for the
// full T x T square; the softmax kernels (one warp per (b,h,t) row) then set the entries
// above the diagonal (t2 > t) of preatt and att to 0, as on the CPU. Deterministic.
// The element type is called F here because T is the sequence length.
#include <cuda_runtime.h>

namespace moebench::cuda {

// preatt = q.k / sqrt(hs); att = causal softmax of it; out[b,t,h*hs+i] = sum_{t2<=t}
// att[b,h,t,t2] * v[b,t2,h*hs+i]. C must be divisible by NH.
template <typename F>
void attention_forward(F* out, F* preatt, F* att, const F* qkv, int B, int T, int C, int NH,
                       cudaStream_t stream = nullptr);

// Accumulates (+=) dqkv[B,T,3C] from dout[B,T,C] (GEMMs with beta = 1). dpreatt and datt are
// scratch [B,NH,T,T] arrays that this function overwrites entirely, with the CPU's contents
// (0 above the diagonal). att must be attention_forward's (0 above the diagonal).
template <typename F>
void attention_backward(F* dqkv, F* dpreatt, F* datt, const F* dout, const F* qkv, const F* att,
                        int B, int T, int C, int NH, cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
