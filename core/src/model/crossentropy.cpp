#include "moebench/model/crossentropy.h"

#include <cmath>

namespace moebench {

void crossentropy_softmax_forward(float* losses, float* probs, const float* logits,
                                  const int* targets, int N, int V) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* l = logits + (long)n * V;
    float* p = probs + (long)n * V;
    float maxval = -INFINITY;
    for (int v = 0; v < V; ++v)
      if (l[v] > maxval) maxval = l[v];
    float sum = 0.0f;
    for (int v = 0; v < V; ++v) {
      p[v] = std::exp(l[v] - maxval);
      sum += p[v];
    }
    const float inv = 1.0f / sum;
    for (int v = 0; v < V; ++v) p[v] *= inv;
    // -log softmax[target] = log(sum) - (logit[target] - max): no log(0) when probs underflow.
    losses[n] = std::log(sum) - (l[targets[n]] - maxval);
  }
}

void crossentropy_softmax_backward(float* dlogits, const float* probs, const int* targets,
                                   float dloss, int N, int V) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* p = probs + (long)n * V;
    float* d = dlogits + (long)n * V;
    const int target = targets[n];
    for (int v = 0; v < V; ++v) d[v] += dloss * (p[v] - (v == target ? 1.0f : 0.0f));
  }
}

}  // namespace moebench
