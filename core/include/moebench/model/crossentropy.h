#pragma once
// Fused softmax + cross-entropy over a vocabulary, llm.c argument order.

namespace moebench {

// For each of the N rows of logits[N,V], with targets[N] in [0, V):
//   probs[n,:] = softmax(logits[n,:])   (saved for the backward)
//   losses[n]  = -log probs[n, targets[n]]  (computed as logsumexp - logit, max subtracted)
void crossentropy_softmax_forward(float* losses, float* probs, const float* logits,
                                  const int* targets, int N, int V);

// Accumulates (+=): dlogits[n,:] += dloss * (probs[n,:] - onehot(targets[n])).
// dloss is d(total loss)/d(losses[n]), the same for every row (e.g. 1/N for a mean).
void crossentropy_softmax_backward(float* dlogits, const float* probs, const int* targets,
                                   float dloss, int N, int V);

}  // namespace moebench
