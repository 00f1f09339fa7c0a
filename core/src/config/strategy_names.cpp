#include "moebench/config/strategy_names.h"

namespace moebench {

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"expert_centric", "hier_a2a", "data_centric", "janus", "ppmoe",
                                                   "monta", "fastermoe", "per_block"};
  return names;
}

std::vector<std::string> strategy_option_sections(const std::string& name) {
  if (name == "janus") return {"janus", "expert_centric", "data_centric"};
  if (name == "per_block") return {"per_block", "expert_centric", "hier_a2a", "data_centric", "monta", "fastermoe"};
  // ppmoe has no options, yet its list must not be empty: empty means an unknown name, for
  // which check_strategy_options rejects nothing. {"ppmoe"} names no section of the schema, so
  // every [strategy.<x>] key is rejected.
  for (const auto& n : strategy_names())
    if (n == name) return {name};
  return {};
}

}  // namespace moebench
