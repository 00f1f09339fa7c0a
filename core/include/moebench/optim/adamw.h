#pragma once
// AdamW (decoupled weight decay, bias correction) over a ParamArena, global grad-norm
// clipping, and the learning-rate schedule (linear warmup, cosine decay to a floor).
#include <vector>

#include "moebench/model/param_arena.h"

namespace moebench {

struct AdamWHyper {
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.0f;
};

// FLOPs of one AdamW update of n parameters (moments, bias correction, decay, update: about
// 10 per parameter); the optimizer task's cost.
inline double adamw_flops(size_t n) { return 10.0 * (double)n; }

class AdamW {
 public:
  AdamW(size_t num_params, AdamWHyper h);
  // One update with learning rate lr; t is the 1-based step count used for bias correction.
  // Weight decay applies only to views with decay = true.
  void step(ParamArena& params, float lr, long t);

  std::vector<float>& m() { return m_; }
  std::vector<float>& v() { return v_; }
  const std::vector<float>& m() const { return m_; }
  const std::vector<float>& v() const { return v_; }

 private:
  AdamWHyper h_;
  std::vector<float> m_, v_;
};

// L2 norm of all gradients (accumulated in double, fixed order).
double grad_norm(const ParamArena& params);
// Scales gradients so their global norm is at most max_norm (max_norm <= 0: no clipping).
// Returns the norm before clipping.
double clip_grad_norm(ParamArena& params, float max_norm);

// Linear warmup over warmup steps (step 0 gets lr/warmup), then cosine from lr down to
// lr * min_ratio at step total_steps - 1.
float lr_at(long step, float lr, long warmup, long total_steps, float min_ratio);

}  // namespace moebench
