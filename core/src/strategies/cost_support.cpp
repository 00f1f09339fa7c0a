// Shared pieces of the strategies' analytical cost models (predicted, never measured).
#include "cost_support.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace moebench::cost {

int experts_per_rank(const MoeContext& ctx) {
  const int P = (int)ctx.ep_world.size();
  if (P < 1 || ctx.experts < P || ctx.experts % P != 0)
    throw std::invalid_argument("predict: " + std::to_string(ctx.experts) + " experts do not divide over " +
                                std::to_string(P) + " EP ranks");
  return ctx.experts / P;
}

double expert_bytes(int C, int F, int element_bytes) { return (2.0 * C * F + F + C) * element_bytes; }

namespace {
bool inter(ClusterLink link) { return link == ClusterLink::inter_node || link == ClusterLink::inter_switch; }
// The physical link a class travels on: a PCIe pair without a link of its own talks over the
// intra-node link, nodes under different switches without a spine over the NICs.
ClusterLink carrier(const ClusterModel& cluster, ClusterLink link) {
  if (link == ClusterLink::pcie_pair && cluster.spec().pcie_pair.bandwidth <= 0) return ClusterLink::intra_node;
  if (link == ClusterLink::inter_switch && cluster.spec().spine.bandwidth <= 0) return ClusterLink::inter_node;
  return link;
}
}  // namespace

LinkBytes flow_bytes(const ClusterModel& cluster, int from, const std::vector<Flow>& flows) {
  LinkBytes b;
  for (const Flow& f : flows) {
    const ClusterLink link = cluster.link_class(from, f.peer);
    if (link == ClusterLink::self) continue;
    (inter(link) ? b.inter : b.intra) += f.bytes;
  }
  return b;
}

double flow_seconds(const ClusterModel& cluster, int from, const std::vector<Flow>& flows,
                    const std::vector<int>& ep_world) {
  const int nic = cluster.nic_of(from);
  const auto sharers = std::count_if(ep_world.begin(), ep_world.end(), [&](int r) { return cluster.nic_of(r) == nic; });
  std::map<ClusterLink, double> seconds;  // by carrier
  for (const Flow& f : flows) {
    const LinkInfo info = cluster.link_between(from, f.peer);
    if (info.link == ClusterLink::self) continue;
    const double bandwidth = inter(info.link) ? info.bandwidth / (double)std::max<long>(1, sharers) : info.bandwidth;
    seconds[carrier(cluster, info.link)] += f.messages * info.latency + f.bytes / bandwidth;
  }
  double slowest = 0;
  for (const auto& [link, s] : seconds) slowest = std::max(slowest, s);
  return slowest;
}

double experts_seconds(const ClusterModel& cluster, double tasks, double rows, int C, int F) {
  if (tasks <= 0 || rows <= 0) return 0;
  return tasks * cluster.compute_seconds(4.0 * rows * C * F);
}

StrategyCost summarize(const ClusterModel& cluster, const std::vector<int>& ep_world,
                       const std::vector<RankCost>& ranks) {
  StrategyCost c;
  std::map<int, LinkBytes> machines;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankCost& r = ranks[i];
    c.rank.intra += r.bytes.intra / (double)ranks.size();
    c.rank.inter += r.bytes.inter / (double)ranks.size();
    LinkBytes& m = machines[cluster.node_of(ep_world[i])];
    m.intra += r.bytes.intra;
    m.inter += r.bytes.inter;
    c.comm_seconds = std::max(c.comm_seconds, r.comm_seconds);
    c.compute_seconds = std::max(c.compute_seconds, r.compute_seconds);
  }
  for (const auto& [node, m] : machines) {
    c.machine.intra += m.intra / (double)machines.size();
    c.machine.inter += m.inter / (double)machines.size();
  }
  return c;
}

}  // namespace moebench::cost
