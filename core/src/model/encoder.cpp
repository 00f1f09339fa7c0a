#include "moebench/model/encoder.h"

#include <algorithm>

namespace moebench {

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe,
                     int B, int T, int C) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      float* o = out + ((long)b * T + t) * C;
      const float* we = wte + (long)inp[(long)b * T + t] * C;
      const float* wp = wpe + (long)t * C;
      for (int c = 0; c < C; ++c) o[c] = we[c] + wp[c];
    }
  }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp,
                      int B, int T, int C) {
  // Threads own disjoint channel blocks; within a block, updates arrive in (b,t) order, so
  // repeated tokens are summed in the same order whatever the thread count.
  constexpr int kBlock = 64;
  const int nblocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < nblocks; ++blk) {
    const int c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t < T; ++t) {
        const float* d = dout + ((long)b * T + t) * C;
        float* we = dwte + (long)inp[(long)b * T + t] * C;
        float* wp = dwpe + (long)t * C;
        for (int c = c0; c < c1; ++c) {
          we[c] += d[c];
          wp[c] += d[c];
        }
      }
    }
  }
}

}  // namespace moebench
