#pragma once
// The values `strategy.name` accepts and the option sections each of them reads.
// strategies/registry.cpp makes each of them (janus per block); tst_strategy_graphs checks the
// two lists agree.
#include <string>
#include <vector>

namespace moebench {

const std::vector<std::string>& strategy_names();

// The [strategy.<x>] sections strategy `name` reads, as "x": its own, and for janus also the
// two strategies it runs per block. Empty for an unknown name. Setting a key of any other
// strategy's section is a config error.
std::vector<std::string> strategy_option_sections(const std::string& name);

}  // namespace moebench
