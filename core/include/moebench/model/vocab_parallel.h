#pragma once
// Vocabulary-parallel embedding and cross-entropy (Megatron): a tensor-parallel rank holds rows
// [lo, lo + Vt) of the token embedding (and of the LM head, tied or not). The lookup gives zero
// rows for other ranks' tokens and the group sums the rows; the head computes logits of its
// vocabulary slice only, and the softmax statistics (row max, sum of exponentials, the target's
// logit) are reduced over the group between the steps below, so no rank holds [N, V] logits.
namespace moebench {

// out[n,:] = wte_slice[tok[n] - lo, :] when lo <= tok[n] < lo + Vt, else 0.
void vocab_slice_embed(float* out, const int* tok, const float* wte_slice, long N, int C, int lo, int Vt);
// dwte_slice[tok[n] - lo, :] += dout[n, :] for this rank's tokens, in n order (deterministic).
void vocab_slice_embed_backward(float* dwte_slice, const float* dout, const int* tok, long N, int C, int lo, int Vt);

// Step 1: rowmax[n] = max of logits[n, 0..Vt). (Then: max over the group.)
void vocab_ce_row_max(float* rowmax, const float* logits, int N, int Vt);
// Step 2: probs = exp(logits - rowmax); stats[n] = sum of them, stats[N + n] = the target's
// logit when this rank holds it, else 0. (Then: sum of stats over the group.)
void vocab_ce_exp(float* probs, float* stats, const float* logits, const float* rowmax, const int* targets, int N,
                  int Vt, int lo);
// Step 3: probs /= stats[n]; losses[n] = log stats[n] + rowmax[n] - stats[N + n].
void vocab_ce_finish(float* losses, float* probs, const float* stats, const float* rowmax, int N, int Vt);
// Accumulates (+=): dlogits[n, j] += dloss * (probs[n, j] - [lo + j == targets[n]]).
void vocab_ce_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int Vt, int lo);

}  // namespace moebench
