#pragma once
// The values `strategy.name` accepts. strategies/registry.cpp makes each of them (janus per
// block); tst_strategy_graphs checks the two lists agree.
#include <string>
#include <vector>

namespace moebench {

const std::vector<std::string>& strategy_names();

}  // namespace moebench
