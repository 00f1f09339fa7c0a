#pragma once
// janus (Janus §4, §7.5): the unified paradigm. Before training it computes, for every MoE
// block, R = BSk / (4nHE) (perf/janus_model.h) and runs that block with data_centric where
// R > strategy.janus.threshold and with expert_centric elsewhere. Other strategy names apply
// to every block unchanged.
#include <map>
#include <string>

#include "moebench/config/config.h"

namespace moebench {

// Block index -> concrete strategy name for every MoE block of cfg, on `nodes` machines of
// `workers_per_node` ranks.
std::map<int, std::string> block_strategies(const Config& cfg, int nodes, int workers_per_node);

// The decision table `moebench run` prints and stores for a janus run (one line per block).
std::string janus_decision_table(const Config& cfg, int nodes, int workers_per_node);

}  // namespace moebench
