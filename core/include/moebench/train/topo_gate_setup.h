#pragma once
// The topology-aware gate of a run (moe/topo_gate.h, FasterMoE §4.3) from its config and
// cluster: rho, each rank's gate and the start-up note. Here in train/ because moe/ knows
// neither the config nor the cluster model.
#include <map>
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

// make_topo_gate for every MoE block whose strategy (`strategies`: block -> name,
// strategies/registry.h block_strategies) routes through the gate under cfg's options
// (StrategyDescriptor::topo_gate: fastermoe with topo_gate = true); none for the others.
std::map<int, TopoGate> topo_gates_for(const Config& cfg, const std::map<int, std::string>& strategies,
                                       const ClusterModel& cluster, const std::vector<int>& ep_world, int ep_rank);

// The start-up note `moebench run` prints once on rank 0 when the gate is asked for but
// cannot change anything (one node; or every EP group inside one node), else "".
std::string topo_gate_note(const Config& cfg);

}  // namespace moebench
