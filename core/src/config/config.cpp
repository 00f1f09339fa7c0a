#include "moebench/config/config.h"

namespace moebench {

bool Config::is_moe_block(int block) const { return experts_in_block(block) > 0; }

int Config::experts_in_block(int block) const {
  for (size_t i = 0; i < moe.moe_layers.size(); ++i)
    if (moe.moe_layers[i] == block) return i < moe.experts.size() ? moe.experts[i] : 0;
  return 0;
}

int64_t expert_param_count(const ModelConfig& model) {
  const int64_t h = model.hidden, f = (int64_t)model.ffn_mult * model.hidden;
  return f * h + f + h * f + h;  // w1 [F,H], b1 [F], w2 [H,F], b2 [H]
}

int64_t expert_state_record_bytes(const ModelConfig& model) {
  return 3 * expert_param_count(model) * (int64_t)sizeof(float);
}

}  // namespace moebench
