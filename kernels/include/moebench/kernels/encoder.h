#pragma once
// Token + position embedding on the device: model/encoder.h's functions with the same names
// and argument order plus the stream. F = float or bf16 (math in fp32). The element type is
// called F here because T is the sequence length.
#include <cuda_runtime.h>

namespace moebench::cuda {

// out[B,T,C] = wte[inp[b,t], :] + wpe[t, :]; inp[B,T] token ids in [0, V) (device memory).
template <typename F>
void encoder_forward(F* out, const int* inp, const F* wte, const F* wpe, int B, int T, int C,
                     cudaStream_t stream = nullptr);

// Accumulates (+=): dwte[inp[b,t], :] += dout[b,t,:];  dwpe[t, :] += sum_b dout[b,t,:].
// Deterministic without atomics, and in the CPU function's order: every element receives its
// updates in (b,t) order, summed in fp32 from its old value and rounded once (fp32: the same
// bits as the CPU function). dwpe: one thread per (t,c). dwte: one block per position i and
// slice of 1024 channels; only the block of a token's first position writes that token's
// row, gathering the later positions of the same token in order. Cost of the gather: about
// (B*T)^2 integer comparisons of inp (L2-resident; tens of microseconds at B*T = 8k).
template <typename F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const int* inp, int B, int T, int C,
                      cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
