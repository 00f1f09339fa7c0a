#pragma once
// Permute (dispatch gather) and unpermute (gate-weighted combine) of an MoE block on the
// device, with their backwards: the row movements of core's MoeLayer (route's gather,
// combine, combine_backward, the scatter-add of scatter_router_backward), given the dispatch
// layout (dispatch_layout.h) and the routing (router.h).
//
// T = float or bf16 for the activations (math in fp32: a sum over k is accumulated in fp32
// and rounded once); gates and gate gradients are fp32. Each output row is written by one
// block or warp, summing over k in order: deterministic, no atomics. All arrays are device
// memory; slots follow the layout: expert e owns [offsets[e], offsets[e+1]), S = offsets[E].
#include <cuda_runtime.h>

namespace moebench::cuda {

// xg[S,C] (overwritten): xg[slot] = x[token_of[slot]].
template <typename T>
void moe_permute_forward(T* xg, const T* x, const int* token_of, int S, int C,
                         cudaStream_t stream = nullptr);

// Accumulates (+=) dx[N,C] += sum over the kept k of dxg[slot_of[n*K+k]] (k in order;
// slot_of = -1 skips a dropped assignment).
template <typename T>
void moe_permute_backward(T* dx, const T* dxg, const int* slot_of, int N, int K, int C,
                          cudaStream_t stream = nullptr);

// out[N,C] (overwritten) = sum over the kept k of gate[n*K+k] * y[slot_of[n*K+k]]; a token
// whose assignments were all dropped gets zeros.
template <typename T>
void moe_unpermute_forward(T* out, const T* y, const float* gate, const int* slot_of, int N, int K,
                           int C, cudaStream_t stream = nullptr);

// The backward of moe_unpermute_forward, both outputs overwritten: dy[slot] = gate[n,k] *
// dout[n] for every kept (n,k) (each slot has exactly one), dgate[n*K+k] = dot(dout[n],
// y[slot]) (fp32), 0 for a dropped assignment.
template <typename T>
void moe_unpermute_backward(float* dgate, T* dy, const T* dout, const T* y, const float* gate,
                            const int* slot_of, int N, int K, int C, cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
