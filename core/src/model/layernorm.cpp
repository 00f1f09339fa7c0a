#include "moebench/model/layernorm.h"

#include <algorithm>
#include <cmath>

namespace moebench {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int N, int C) {
  const float eps = 1e-5f;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + (long)n * C;
    float m = 0.0f;
    for (int c = 0; c < C; ++c) m += x[c];
    m /= C;
    float v = 0.0f;
    for (int c = 0; c < C; ++c) {
      const float d = x[c] - m;
      v += d * d;
    }
    v /= C;
    const float s = 1.0f / std::sqrt(v + eps);
    float* o = out + (long)n * C;
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int N, int C) {
  // dinp: rows are independent.
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + (long)n * C;
    const float* d = dout + (long)n * C;
    const float m = mean[n], s = rstd[n];
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int c = 0; c < C; ++c) {
      const float dnorm = weight[c] * d[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * (x[c] - m) * s;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    float* di = dinp + (long)n * C;
    for (int c = 0; c < C; ++c) {
      const float norm = (x[c] - m) * s;
      di[c] += (weight[c] * d[c] - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
  // dweight, dbias: threads own channel blocks and sum rows in order (deterministic).
  constexpr int kBlock = 64;
  const int nblocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < nblocks; ++blk) {
    const int c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
    for (int n = 0; n < N; ++n) {
      const float* x = inp + (long)n * C;
      const float* d = dout + (long)n * C;
      const float m = mean[n], s = rstd[n];
      for (int c = c0; c < c1; ++c) {
        dbias[c] += d[c];
        dweight[c] += (x[c] - m) * s * d[c];
      }
    }
  }
}

}  // namespace moebench
