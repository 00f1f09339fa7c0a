#include "moebench/optim/adamw.h"

#include <cmath>

namespace moebench {

AdamW::AdamW(size_t num_params, AdamWHyper h) : h_(h), m_(num_params, 0.0f), v_(num_params, 0.0f) {}

void AdamW::step(ParamArena& params, float lr, long t) {
  const float bc1 = 1.0f - std::pow(h_.beta1, (float)t);
  const float bc2 = 1.0f - std::pow(h_.beta2, (float)t);
  for (size_t i = 0; i < params.views().size(); ++i) {
    const ParamView& view = params.views()[i];
    float* p = params.param(i);
    const float* g = params.grad(i);
    float* m = m_.data() + view.offset;
    float* v = v_.data() + view.offset;
    const float wd = view.decay ? h_.weight_decay : 0.0f;
    const long n = (long)view.numel;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (long j = 0; j < n; ++j) {
      m[j] = h_.beta1 * m[j] + (1.0f - h_.beta1) * g[j];
      v[j] = h_.beta2 * v[j] + (1.0f - h_.beta2) * g[j] * g[j];
      const float mhat = m[j] / bc1;
      const float vhat = v[j] / bc2;
      p[j] -= lr * (mhat / (std::sqrt(vhat) + h_.eps) + wd * p[j]);
    }
  }
}

double grad_norm(const ParamArena& params) {
  double sum = 0.0;
  for (float g : params.grads()) sum += (double)g * g;
  return std::sqrt(sum);
}

double clip_grad_norm(ParamArena& params, float max_norm) {
  const double norm = grad_norm(params);
  if (max_norm > 0 && norm > max_norm) {
    const float scale = (float)(max_norm / (norm + 1e-6));
    for (float& g : params.grads()) g *= scale;
  }
  return norm;
}

float lr_at(long step, float lr, long warmup, long total_steps, float min_ratio) {
  if (warmup > 0 && step < warmup) return lr * (float)(step + 1) / (float)warmup;
  const long decay_steps = total_steps - 1 - warmup;
  if (decay_steps <= 0) return lr;
  double progress = (double)(step - warmup) / (double)decay_steps;
  if (progress > 1.0) progress = 1.0;
  const double min_lr = lr * (double)min_ratio;
  return (float)(min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(M_PI * progress)));
}

}  // namespace moebench
