#pragma once
// Vocabulary-parallel embedding and cross-entropy on the device: model/vocab_parallel.h's
// functions with the same names and argument order plus the stream (fp32). The group's
// reductions between the cross-entropy steps stay the caller's (the model's TP all-reduces).
#include <cuda_runtime.h>

namespace moebench::cuda {

// out[n,:] = wte_slice[tok[n] - lo, :] when lo <= tok[n] < lo + Vt, else 0.
void vocab_slice_embed(float* out, const int* tok, const float* wte_slice, long N, int C, int lo, int Vt,
                       cudaStream_t stream = nullptr);
// dwte_slice[tok[n] - lo, :] += dout[n, :] for this rank's tokens, every element in n order
// (one thread per channel, as the CPU's: the same bits).
void vocab_slice_embed_backward(float* dwte_slice, const float* dout, const int* tok, long N, int C, int lo, int Vt,
                                cudaStream_t stream = nullptr);
// rowmax[n] = max of logits[n, 0..Vt) (a warp per row).
void vocab_ce_row_max(float* rowmax, const float* logits, int N, int Vt, cudaStream_t stream = nullptr);
// probs = exp(logits - rowmax); stats[n] = their sum (fp64 partial sums, as the CPU's fp64 sum),
// stats[N + n] = the target's logit when this rank holds it, else 0.
void vocab_ce_exp(float* probs, float* stats, const float* logits, const float* rowmax, const int* targets, int N,
                  int Vt, int lo, cudaStream_t stream = nullptr);
// probs /= stats[n]; losses[n] = log stats[n] + rowmax[n] - stats[N + n].
void vocab_ce_finish(float* losses, float* probs, const float* stats, const float* rowmax, int N, int Vt,
                     cudaStream_t stream = nullptr);
// Accumulates (+=): dlogits[n, j] += dloss * (probs[n, j] - [lo + j == targets[n]]).
void vocab_ce_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int Vt, int lo,
                       cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
