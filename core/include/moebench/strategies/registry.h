#pragma once
// The strategies by name (the names config/strategy_names.h lists; "janus" is chosen per
// block, strategies/janus.h).
#include <memory>
#include <string>

#include "moebench/config/config.h"
#include "moebench/moe/moe_strategy.h"

namespace moebench {

// The strategy registered under `name`, holding its own options from `options`
// ([strategy.<name>]); throws std::invalid_argument listing the known names.
std::unique_ptr<MoeStrategy> make_strategy(const std::string& name, const StrategyConfig& options = {});

}  // namespace moebench
