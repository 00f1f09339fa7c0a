#include "moebench/config/config.h"

namespace moebench {

bool Config::is_moe_block(int block) const { return experts_in_block(block) > 0; }

int Config::experts_in_block(int block) const {
  for (size_t i = 0; i < moe.moe_layers.size(); ++i)
    if (moe.moe_layers[i] == block) return i < moe.experts.size() ? moe.experts[i] : 0;
  return 0;
}

}  // namespace moebench
