#include "moebench/config/strategy_names.h"

namespace moebench {

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"expert_centric", "hier_a2a", "data_centric", "janus"};
  return names;
}

}  // namespace moebench
