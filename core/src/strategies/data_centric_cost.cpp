// data_centric's analytical cost (predicted, never measured): what Janus's model (SIGCOMM'23
// §5.1.3) says the data-centric paradigm moves, on any EP placement of a ClusterModel.
//
// Balanced routing: a rank uses u = min(E, tokens*k) of the E experts, the same share of every
// owner's L = E/P experts, and pulls each used remote expert whole (expert_bytes: w1, b1, w2,
// b2), one message a pull. Without the node cache every rank pulls its own. With it
// (options hierarchical, §5.1.2) same-node experts are still pulled by each rank, and the node's m
// ranks pull the used external experts (share min(E, m*tokens*k) / E) once, split evenly
// between them (local rank j % m pulls the j-th). So on Janus's n x m cluster with every expert
// used a machine pulls Comm_DC = expert_floats * E*m*(n-1) floats across machines, where E here
// is Janus's experts per worker; without the cache m times that.
// Each used expert is computed where the tokens are: u tasks of tokens*k/u rows. Backward pushes
// the same bytes back (not included). pcie_pairing's copies are not predicted.
#include <algorithm>
#include <map>

#include "cost_support.h"
#include "moebench/strategies/data_centric.h"

namespace moebench {

StrategyCost DataCentric::predict(const CostInputs& in, const MoeContext& ctx, const ClusterModel& cluster) const {
  const int L = cost::experts_per_rank(ctx), P = (int)ctx.ep_world.size(), E = ctx.experts;
  const double rows = in.tokens * in.top_k, bytes = cost::expert_bytes(ctx.C, ctx.F, ctx.wire_element_bytes);
  const double used = std::min<double>(E, rows) / E;  // share of each owner's experts a rank uses
  std::map<int, int> on_node;                         // node -> EP ranks there
  for (int r : ctx.ep_world) ++on_node[cluster.node_of(r)];
  std::vector<cost::RankCost> ranks(P);
  for (int i = 0; i < P; ++i) {
    const int me = ctx.ep_world[i], node = cluster.node_of(me), m = on_node[node];
    const double node_used = std::min<double>(E, m * rows) / E;
    std::vector<cost::Flow> flows;
    for (int j = 0; j < P; ++j) {
      if (j == i) continue;
      const bool external = cluster.node_of(ctx.ep_world[j]) != node;
      const double pulls = opts_.hierarchical && external ? L * node_used / m : L * used;
      flows.push_back({ctx.ep_world[j], pulls * bytes, pulls});
    }
    ranks[i].bytes = cost::flow_bytes(cluster, me, flows);
    ranks[i].comm_seconds = cost::flow_seconds(cluster, me, flows, ctx.ep_world);
    ranks[i].compute_seconds = rows > 0 ? cost::experts_seconds(cluster, used * E, rows / (used * E), ctx.C, ctx.F) : 0;
  }
  return cost::summarize(cluster, ctx.ep_world, ranks);
}

}  // namespace moebench
