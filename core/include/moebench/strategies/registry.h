#pragma once
// The strategies by name (strategies/registry.cpp lists the built-in ones; others register a
// descriptor, strategies/strategy_descriptor.h).
#include <map>
#include <memory>
#include <string>

#include "moebench/config/config.h"
#include "moebench/moe/moe_strategy.h"
#include "moebench/strategies/strategy_descriptor.h"

namespace moebench {

// The block strategy registered under `name`, holding its own options from `options`
// ([strategy.<name>]); throws std::invalid_argument listing the known names, or for a chooser.
std::unique_ptr<MoeStrategy> make_strategy(const std::string& name, const StrategyConfig& options = {});

// Block index -> block strategy name for every MoE block of cfg, on `nodes` machines of
// `workers_per_node` ranks: a chooser's choice (janus's R rule, strategy.per_block.blocks), or
// strategy.name.
std::map<int, std::string> block_strategies(const Config& cfg, int nodes, int workers_per_node);

}  // namespace moebench
