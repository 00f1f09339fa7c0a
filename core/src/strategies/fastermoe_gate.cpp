#include "moebench/strategies/fastermoe_gate.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "moebench/config/config_layout.h"
#include "moebench/strategies/strategy_descriptor.h"

namespace moebench {

double topo_gate_rho(const ClusterModel& cluster, int ranks_on_node) {
  if (ranks_on_node < 1) throw std::invalid_argument("topo_gate: a node with no EP rank");
  const double net = cluster.link(ClusterLink::inter_node).bandwidth;
  const double local = cluster.link(ClusterLink::intra_node).bandwidth;
  return net / ((double)ranks_on_node * local);
}

TopoGate make_topo_gate(const ClusterModel& cluster, const std::vector<int>& ep_world, int ep_rank) {
  if (ep_rank < 0 || ep_rank >= (int)ep_world.size())
    throw std::invalid_argument("topo_gate: EP rank " + std::to_string(ep_rank) + " outside a group of " +
                                std::to_string(ep_world.size()));
  TopoGate g;
  for (int w : ep_world) g.ep_node.push_back(cluster.node_of(w));
  g.my_node = g.ep_node[ep_rank];
  g.rho = topo_gate_rho(cluster, (int)std::count(g.ep_node.begin(), g.ep_node.end(), g.my_node));
  return g;
}

bool topo_gated(const Config& cfg, const std::string& name) {
  const StrategyDescriptor& d = strategy_descriptor(name);
  return d.topo_gate && d.topo_gate(cfg.strategy);
}

std::string topo_gate_note(const Config& cfg) {
  const std::vector<std::string> names = block_strategy_names(cfg.strategy);
  if (std::none_of(names.begin(), names.end(), [&](const std::string& n) { return topo_gated(cfg, n); })) return "";
  if (cfg.cluster.nodes <= 1) return "fastermoe: topo_gate on a single node (cluster.nodes = 1) changes nothing";
  const ParallelLayout layout = layout_of(cfg);
  const int ranks = cfg.run.ranks;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : ranks / cfg.cluster.nodes;
  if (per_node < 1) return "";
  for (const std::vector<int>& group : layout.ep_groups())
    if (group.front() / per_node != group.back() / per_node) return "";  // the ranks of a group ascend
  return "fastermoe: topo_gate with every expert-parallel group inside one node (parallel.ep = " +
         std::to_string(layout.ep()) + ", " + std::to_string(per_node) + " ranks per node) changes nothing";
}

}  // namespace moebench
