#include "moebench/model/vocab_parallel.h"

#include <algorithm>
#include <cmath>

namespace moebench {

void vocab_slice_embed(float* out, const int* tok, const float* wte_slice, long N, int C, int lo, int Vt) {
#pragma omp parallel for schedule(static)
  for (long n = 0; n < N; ++n) {
    float* o = out + n * C;
    const int r = tok[n] - lo;
    if (r >= 0 && r < Vt) std::copy_n(wte_slice + (long)r * C, C, o);
    else std::fill(o, o + C, 0.0f);
  }
}

void vocab_slice_embed_backward(float* dwte_slice, const float* dout, const int* tok, long N, int C, int lo, int Vt) {
  // Threads split the channels, so every element gets its updates in n order.
#pragma omp parallel for schedule(static)
  for (int c = 0; c < C; ++c)
    for (long n = 0; n < N; ++n) {
      const int r = tok[n] - lo;
      if (r >= 0 && r < Vt) dwte_slice[(long)r * C + c] += dout[n * C + c];
    }
}

void vocab_ce_row_max(float* rowmax, const float* logits, int N, int Vt) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) rowmax[n] = *std::max_element(logits + (long)n * Vt, logits + (long)(n + 1) * Vt);
}

void vocab_ce_exp(float* probs, float* stats, const float* logits, const float* rowmax, const int* targets, int N,
                  int Vt, int lo) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* l = logits + (long)n * Vt;
    float* p = probs + (long)n * Vt;
    double sum = 0.0;
    for (int j = 0; j < Vt; ++j) {
      p[j] = std::exp(l[j] - rowmax[n]);
      sum += p[j];
    }
    stats[n] = (float)sum;
    const int t = targets[n] - lo;
    stats[N + n] = t >= 0 && t < Vt ? l[t] : 0.0f;
  }
}

void vocab_ce_finish(float* losses, float* probs, const float* stats, const float* rowmax, int N, int Vt) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float inv = 1.0f / stats[n];
    for (int j = 0; j < Vt; ++j) probs[(long)n * Vt + j] *= inv;
    losses[n] = std::log(stats[n]) + rowmax[n] - stats[N + n];
  }
}

void vocab_ce_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int Vt, int lo) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    float* d = dlogits + (long)n * Vt;
    const float* p = probs + (long)n * Vt;
    for (int j = 0; j < Vt; ++j) d[j] += dloss * (p[j] - (lo + j == targets[n] ? 1.0f : 0.0f));
  }
}

}  // namespace moebench
