#include "moebench/optim/adamw.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace moebench {

AdamW::AdamW(const ParamArena& params, AdamWHyper h, const std::function<bool(const ParamView&)>& keep)
    : h_(h), m_(params.backend(), "the AdamW first moments"), v_(params.backend(), "the AdamW second moments") {
  for (const ParamView& view : params.views()) {
    const bool kept = !keep || keep(view);
    at_.push_back(kept ? kept_ : kOffloaded);
    numel_.push_back(view.numel);
    if (kept) kept_ += view.numel;
  }
  m_.ensure(kept_);  // zeroed
  v_.ensure(kept_);
}

// One update per run of kept views that follow each other in the arena and the moments with one
// decay flag (the update is elementwise, so runs give the same bits as views; on the GPU they
// are fewer launches).
void AdamW::step(ParamArena& params, float lr, long t) {
  Backend& be = params.backend();
  const std::vector<ParamView>& views = params.views();
  for (size_t i = 0; i < views.size();) {
    if (!keeps(i)) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < views.size() && keeps(end) && views[end].decay == views[i].decay &&
           views[end].offset == views[end - 1].offset + views[end - 1].numel && at_[end] == at_[end - 1] + numel_[end - 1])
      ++end;
    const long n = (long)(views[end - 1].offset + views[end - 1].numel - views[i].offset);
    be.adamw_update(params.param(i), params.grad(i), m_.data() + at_[i], v_.data() + at_[i], n, h_, lr, t,
                    views[i].decay ? h_.weight_decay : 0.0f);
    i = end;
  }
}

OffloadedMoments& AdamW::holder(size_t view) const {
  if (!offloaded_) throw std::logic_error("AdamW: view " + std::to_string(view) + " is offloaded without a holder");
  return *offloaded_;
}

void AdamW::read_moments(size_t view, float* m, float* v) const {
  if (!keeps(view)) return holder(view).read_moments(view, m, v);
  m_.backend().to_host(m, m_.data() + at_[view], numel_[view] * sizeof(float));
  v_.backend().to_host(v, v_.data() + at_[view], numel_[view] * sizeof(float));
}

void AdamW::load_moments(size_t view, const float* w, const float* m, const float* v) {
  if (!keeps(view)) return holder(view).load_moments(view, w, m, v);
  m_.backend().to_device(m_.data() + at_[view], m, numel_[view] * sizeof(float));
  v_.backend().to_device(v_.data() + at_[view], v, numel_[view] * sizeof(float));
}

double grad_norm(const ParamArena& params) {
  return std::sqrt(params.backend().sums_of_squares(params.grads(), {{0, params.size()}}).at(0));
}

double clip_grad_norm(ParamArena& params, float max_norm) {
  const double norm = grad_norm(params);
  if (max_norm > 0 && norm > max_norm) {
    const float scale = (float)(max_norm / (norm + 1e-6));
    params.backend().scale(params.grads(), (long)params.size(), scale);
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
