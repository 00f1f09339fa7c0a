#include "moebench/config/strategy_names.h"

namespace moebench {

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"expert_centric", "hier_a2a", "data_centric", "janus"};
  return names;
}

std::vector<std::string> strategy_option_sections(const std::string& name) {
  if (name == "janus") return {"janus", "expert_centric", "data_centric"};
  for (const auto& n : strategy_names())
    if (n == name) return {name};
  return {};
}

}  // namespace moebench
