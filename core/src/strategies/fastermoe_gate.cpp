#include "moebench/strategies/fastermoe_gate.h"

#include <algorithm>
#include <stdexcept>
#include <string>

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

}  // namespace moebench
