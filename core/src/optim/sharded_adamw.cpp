#include "moebench/optim/sharded_adamw.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moebench {

ShardedAdamW::ShardedAdamW(const ParamArena& params, const std::vector<std::pair<size_t, size_t>>& runs,
                           AdamWHyper h)
    : h_(h),
      be_(params.backend()),
      m_(params.backend(), "the sharded AdamW first moments"),
      v_(params.backend(), "the sharded AdamW second moments") {
  size_t end = 0, state = 0;
  for (const auto& [offset, count] : runs) {
    if (offset < end || offset + count > params.size())
      throw std::invalid_argument("ShardedAdamW: run [" + std::to_string(offset) + ", " + std::to_string(offset + count) +
                                  ") is out of order or outside the arena of " + std::to_string(params.size()));
    end = offset + count;
    for (const ParamView& v : params.views()) {  // cut at the views' boundaries
      const size_t lo = std::max(offset, v.offset), hi = std::min(offset + count, v.offset + v.numel);
      if (lo >= hi) continue;
      pieces_.push_back({lo, hi - lo, state, v.decay});
      state += hi - lo;
    }
  }
  state_ = state;
  m_.ensure(state);  // zeroed
  v_.ensure(state);
}

void ShardedAdamW::step(ParamArena& params, float lr, long t) {
  float* data = params.data();
  const float* grads = params.grads();
  for (const Piece& piece : pieces_)
    be_.adamw_update(data + piece.offset, grads + piece.offset, m_.data() + piece.state, v_.data() + piece.state,
                     (long)piece.count, h_, lr, t, piece.decay ? h_.weight_decay : 0.0f);
}

void ShardedAdamW::export_to(float* m, float* v) const {
  for (const Piece& p : pieces_) {
    be_.copy(m + p.offset, m_.data() + p.state, p.count * sizeof(float));
    be_.copy(v + p.offset, v_.data() + p.state, p.count * sizeof(float));
  }
}

void ShardedAdamW::import_from(const float* m, const float* v) {
  for (const Piece& p : pieces_) {
    be_.copy(m_.data() + p.state, m + p.offset, p.count * sizeof(float));
    be_.copy(v_.data() + p.state, v + p.offset, p.count * sizeof(float));
  }
}

}  // namespace moebench
