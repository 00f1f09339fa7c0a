#pragma once
// AdamW (decoupled weight decay, bias correction) over a ParamArena, global grad-norm
// clipping, and the learning-rate schedule (linear warmup, cosine decay to a floor).
#include <functional>
#include <vector>

#include "moebench/model/param_arena.h"
#include "moebench/tensor/adamw_update.h"

namespace moebench {

// FLOPs of one AdamW update of n parameters (moments, bias correction, decay, update: about
// 10 per parameter); the optimizer task's cost.
inline double adamw_flops(size_t n) { return 10.0 * (double)n; }

// Optimizer states AdamW does not keep (MoESys's hierarchical storage keeps the experts' on the
// SSD tier, storage/expert_state_tier.h): checkpoints read and load them through this.
class OffloadedMoments {
 public:
  virtual ~OffloadedMoments() = default;
  // Copies the moments of arena view `view` (numel floats each) into m and v.
  virtual void read_moments(size_t view, float* m, float* v) = 0;
  // A checkpoint's state of the view: its weights w (already in the arena) and moments.
  virtual void load_moments(size_t view, const float* w, const float* m, const float* v) = 0;
};

class AdamW {
 public:
  // Moments (zeroed) for the views `keep` selects (all without it), laid out as the arena's when
  // all are kept, in the arena's backend memory (tensor/backend.h: the GPU's on CUDA). The others
  // are updated by their holder (set_offloaded).
  AdamW(const ParamArena& params, AdamWHyper h, const std::function<bool(const ParamView&)>& keep = {});
  // One update of the kept views with learning rate lr; t is the 1-based step count used for
  // bias correction. Weight decay applies only to views with decay = true.
  void step(ParamArena& params, float lr, long t);

  const AdamWHyper& hyper() const { return h_; }
  bool keeps(size_t view) const { return at_[view] != kOffloaded; }
  size_t kept_params() const { return kept_; }  // elements with moments here
  void set_offloaded(OffloadedMoments* holder) { offloaded_ = holder; }
  // The moments of view `view` into host memory m / v (numel each), wherever they are kept.
  void read_moments(size_t view, float* m, float* v) const;
  // The kept moments of `view` in place, in the backend's memory (nullptr when offloaded).
  const float* m_of(size_t view) const { return keeps(view) ? m_.data() + at_[view] : nullptr; }
  const float* v_of(size_t view) const { return keeps(view) ? v_.data() + at_[view] : nullptr; }
  // Sets them from a checkpoint, from host memory (w: the view's loaded weights, for an
  // offloaded holder).
  void load_moments(size_t view, const float* w, const float* m, const float* v);

  // All kept moments (kept_params() each), in the backend's memory.
  float* m() { return m_.data(); }
  float* v() { return v_.data(); }
  const float* m() const { return m_.data(); }
  const float* v() const { return v_.data(); }

 private:
  static constexpr size_t kOffloaded = (size_t)-1;
  AdamWHyper h_;
  std::vector<size_t> at_;  // per view: offset into m_ / v_, or kOffloaded
  std::vector<size_t> numel_;  // per view
  size_t kept_ = 0;
  DeviceArray<float> m_, v_;
  OffloadedMoments* offloaded_ = nullptr;
  OffloadedMoments& holder(size_t view) const;
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
