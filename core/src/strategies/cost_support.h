#pragma once
// What every strategy's predict() shares (private to strategies/): one EP rank's traffic as
// flows to world ranks, its seconds on the ClusterModel's links, the seconds of its expert
// tasks, and the summary over the EP group (StrategyCost, moe/moe_strategy.h).
#include <vector>

#include "moebench/moe/moe_strategy.h"
#include "moebench/perf/cluster_model.h"

namespace moebench::cost {

// `bytes` in `messages` messages from one rank to world rank `peer` (messages may be a mean).
struct Flow {
  int peer = 0;
  double bytes = 0, messages = 0;
};

// What one EP rank sends and computes.
struct RankCost {
  LinkBytes bytes;
  double comm_seconds = 0, compute_seconds = 0;
};

// Experts per EP rank, E / P; throws std::invalid_argument when they do not divide.
int experts_per_rank(const MoeContext& ctx);
// Bytes of one expert's parameters (w1, b1, w2, b2) at `element_bytes` each: (2CF + F + C) * that
// (MoeContext::wire_element_bytes on the wire; 4 for the fp32 arrays in memory).
double expert_bytes(int C, int F, int element_bytes);

// Bytes of `flows` from world rank `from` by link class (self flows count nowhere).
LinkBytes flow_bytes(const ClusterModel& cluster, int from, const std::vector<Flow>& flows);
// Seconds for world rank `from` to send `flows` at once: per link class,
// messages * latency + bytes / bandwidth, the classes concurrently (the slowest bounds; a PCIe
// pair without its own link shares the intra-node one, nodes without a spine the NICs). On the
// inter-node classes the NIC's bandwidth is shared by the EP ranks behind it (every one of
// them sends at the same time in an EP exchange).
double flow_seconds(const ClusterModel& cluster, int from, const std::vector<Flow>& flows,
                    const std::vector<int>& ep_world);
// Seconds of `tasks` expert FFN forward tasks of `rows` rows each (4 * rows * C * F FLOPs a
// task, at the device's efficiency for that task size).
double experts_seconds(const ClusterModel& cluster, double tasks, double rows, int C, int F);

// The group's StrategyCost from every EP rank's cost (in ctx.ep_world order): bytes per rank
// and per machine as means, seconds of the slowest rank.
StrategyCost summarize(const ClusterModel& cluster, const std::vector<int>& ep_world,
                       const std::vector<RankCost>& ranks);

}  // namespace moebench::cost
