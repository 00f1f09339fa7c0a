#include "moebench/tensor/adamw_update.h"

#include <cmath>

namespace moebench {

void adamw_update(float* p, const float* g, float* m, float* v, long n, const AdamWHyper& h, float lr, long t,
                  float wd) {
  const float bc1 = 1.0f - std::pow(h.beta1, (float)t);
  const float bc2 = 1.0f - std::pow(h.beta2, (float)t);
#pragma omp parallel for schedule(static) if (n > 65536)
  for (long j = 0; j < n; ++j) {
    m[j] = h.beta1 * m[j] + (1.0f - h.beta1) * g[j];
    v[j] = h.beta2 * v[j] + (1.0f - h.beta2) * g[j] * g[j];
    const float mhat = m[j] / bc1;
    const float vhat = v[j] / bc2;
    p[j] -= lr * (mhat / (std::sqrt(vhat) + h.eps) + wd * p[j]);
  }
}

}  // namespace moebench
