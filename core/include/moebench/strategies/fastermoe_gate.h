#pragma once
// fastermoe's topology-aware gate (moe/topo_gate.h, FasterMoE §4.3) on the cluster a run
// assumes: rho and one rank's gate. fastermoe applies it to its blocks' router choice
// ([strategy.fastermoe] topo_gate, MoeStrategy::choice_policy).
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/moe/topo_gate.h"
#include "moebench/perf/cluster_model.h"

namespace moebench {

// rho = W_net / (M * W_local) from the cluster's inter_node and intra_node links.
double topo_gate_rho(const ClusterModel& cluster, int ranks_on_node);

// The gate of EP rank ep_rank of the group with world ranks ep_world, placed by
// cluster.node_of.
TopoGate make_topo_gate(const ClusterModel& cluster, const std::vector<int>& ep_world, int ep_rank);

// Whether the blocks of strategy `name` route through the gate under cfg's options.
bool topo_gated(const Config& cfg, const std::string& name);

// The start-up note `moebench run` prints once on rank 0 when a block's strategy asks for the
// gate (StrategyDescriptor::topo_gate) where it cannot change anything (one node; or every EP
// group inside one node), else "".
std::string topo_gate_note(const Config& cfg);

}  // namespace moebench
