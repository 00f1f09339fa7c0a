#include "moebench/optim/adamw.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

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

AdamW::AdamW(const ParamArena& params, AdamWHyper h, const std::function<bool(const ParamView&)>& keep) : h_(h) {
  size_t n = 0;
  for (const ParamView& view : params.views()) {
    const bool kept = !keep || keep(view);
    at_.push_back(kept ? n : kOffloaded);
    numel_.push_back(view.numel);
    if (kept) n += view.numel;
  }
  m_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
}

void AdamW::step(ParamArena& params, float lr, long t) {
  for (size_t i = 0; i < params.views().size(); ++i) {
    if (!keeps(i)) continue;
    const ParamView& view = params.views()[i];
    adamw_update(params.param(i), params.grad(i), m_.data() + at_[i], v_.data() + at_[i], (long)view.numel, h_, lr,
                 t, view.decay ? h_.weight_decay : 0.0f);
  }
}

OffloadedMoments& AdamW::holder(size_t view) const {
  if (!offloaded_) throw std::logic_error("AdamW: view " + std::to_string(view) + " is offloaded without a holder");
  return *offloaded_;
}

void AdamW::read_moments(size_t view, float* m, float* v) const {
  if (!keeps(view)) return holder(view).read_moments(view, m, v);
  std::copy_n(m_.data() + at_[view], numel_[view], m);
  std::copy_n(v_.data() + at_[view], numel_[view], v);
}

void AdamW::load_moments(size_t view, const float* w, const float* m, const float* v) {
  if (!keeps(view)) return holder(view).load_moments(view, w, m, v);
  std::copy_n(m, numel_[view], m_.data() + at_[view]);
  std::copy_n(v, numel_[view], v_.data() + at_[view]);
}

double grad_norm(const ParamArena& params) {
  double sum = 0.0;
  const float* g = params.grads();
  for (size_t i = 0; i < params.size(); ++i) sum += (double)g[i] * g[i];
  return std::sqrt(sum);
}

double clip_grad_norm(ParamArena& params, float max_norm) {
  const double norm = grad_norm(params);
  if (max_norm > 0 && norm > max_norm) {
    const float scale = (float)(max_norm / (norm + 1e-6));
    float* g = params.grads();
    for (size_t i = 0; i < params.size(); ++i) g[i] *= scale;
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
