#include "moebench/train/topo_gate_setup.h"

#include <algorithm>
#include <set>
#include <stdexcept>

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

namespace {

// Whether the blocks of strategy `name` route through the gate under cfg's options.
bool gated(const Config& cfg, const std::string& name) {
  const StrategyDescriptor& d = strategy_descriptor(name);
  return d.topo_gate && d.topo_gate(cfg.strategy);
}

}  // namespace

std::map<int, TopoGate> topo_gates_for(const Config& cfg, const std::map<int, std::string>& strategies,
                                       const ClusterModel& cluster, const std::vector<int>& ep_world, int ep_rank) {
  std::map<int, TopoGate> out;
  for (const auto& [block, name] : strategies)
    if (gated(cfg, name)) out.emplace(block, make_topo_gate(cluster, ep_world, ep_rank));
  return out;
}

std::string topo_gate_note(const Config& cfg) {
  const std::vector<std::string> names = block_strategy_names(cfg.strategy);
  if (std::none_of(names.begin(), names.end(), [&](const std::string& n) { return gated(cfg, n); })) return "";
  if (cfg.cluster.nodes <= 1) return "fastermoe: topo_gate on a single node (cluster.nodes = 1) changes nothing";
  // EP groups (dist/process_groups.h): runs of `ep` consecutive DP ranks of one TP rank and
  // stage; world rank = stage * dp * tp + dp_rank * tp + tp_rank; node = rank / per_node.
  const int ranks = cfg.run.ranks, tp = std::max(1, cfg.parallel.tp), pp = std::max(1, cfg.parallel.pp);
  const int dp = cfg.parallel.dp > 0 ? cfg.parallel.dp : ranks / (tp * pp);
  const int ep = cfg.parallel.ep > 0 ? cfg.parallel.ep : dp;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : ranks / cfg.cluster.nodes;
  if (dp < 1 || ep < 1 || per_node < 1) return "";
  for (int stage = 0; stage < pp; ++stage)
    for (int t = 0; t < tp; ++t)
      for (int first = 0; first + ep <= dp; first += ep) {
        std::set<int> nodes;
        for (int i = first; i < first + ep; ++i) nodes.insert((stage * dp * tp + i * tp + t) / per_node);
        if (nodes.size() > 1) return "";
      }
  return "fastermoe: topo_gate with every expert-parallel group inside one node (parallel.ep = " + std::to_string(ep) +
         ", " + std::to_string(per_node) + " ranks per node) changes nothing";
}

}  // namespace moebench
