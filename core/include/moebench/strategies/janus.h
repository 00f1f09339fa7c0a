#pragma once
// janus (Janus §4, §7.5): the unified paradigm. Before training it computes, for every MoE
// block, R (eq. 1) and runs that block with data_centric where R > [strategy.janus] threshold
// and with expert_centric elsewhere (its descriptor chooses, strategies/registry.h block_strategies).
//
// Notation (paper Table 2), for one MoE block: n machines (cluster.nodes), m workers per
// machine, B = train.batch_size (the GLOBAL batch) / (n*m) sequences per worker, S seq_len,
// k top_k, H hidden, E = experts / (n*m) experts per worker, a = model.ffn_mult.
//   R = B*S*k / (a*n*H*E)                                                        (eq. 1)
// eq. 1 is written for a = 4 (the 4 in 4nHE is 8H^2 / 2H); for another ffn_mult the expert is
// 2aH^2 floats and R generalises as above. R is the ratio of the two paradigms' inter-node
// traffic, Comm_EC / Comm_DC, without the experts' biases: the traffic itself is each
// strategy's predict() (expert_centric.cpp: Comm_EC, data_centric_cost.cpp: Comm_DC), which
// janus_plan reports next to R. Everything here is PREDICTED, never measured.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "moebench/config/config.h"
#include "moebench/moe/moe_strategy.h"
#include "moebench/perf/cluster_model.h"

namespace moebench {

// eq. 1 on plain numbers: b sequences per worker, e experts per worker (may be fractional).
double janus_R(double b, int s, int k, int n, int hidden, double e, int ffn_mult = 4);

// The decision for one MoE block.
struct JanusDecision {
  int block = 0;               // 0-based transformer block index
  int experts = 0;             // experts in this block
  int experts_per_worker = 0;  // E; when experts do not divide the world: ceil(experts / world)
  double R = 0.0;              // eq. 1 with the exact experts / world
  std::string paradigm;        // "data_centric" when R > [strategy.janus] threshold, else "expert_centric"
};

// One entry per MoE block of cfg, in block order, on `nodes` machines of `workers_per_node`
// workers. Throws std::invalid_argument when nodes or workers_per_node < 1.
std::vector<JanusDecision> janus_decisions(const Config& cfg, int nodes, int workers_per_node);

// A block's decision with both paradigms' predictions for one forward pass (balanced routing,
// B*S tokens per worker, the EP group of world rank 0 on `cluster`; data_centric with its node
// cache, [strategy.data_centric] hierarchical, as Janus pulls: once per machine, §5.1.2). machine.inter of
// expert_centric is Comm_EC, of data_centric Comm_DC (§5.1.3), per machine and iteration.
struct JanusBlockPlan {
  JanusDecision decision;
  StrategyCost expert_centric, data_centric;
  const StrategyCost& chosen() const;  // the decision's paradigm's
};
// Throws std::invalid_argument when experts do not divide over the EP group.
std::vector<JanusBlockPlan> janus_plan(const Config& cfg, const ClusterModel& cluster);

// `moebench plan CONFIG`'s report of janus_plan on `cluster` (source: the config's path), as
// JSON and as text (janus_report.cpp).
nlohmann::json janus_plan_json(const Config& cfg, const ClusterModel& cluster, const std::vector<JanusBlockPlan>& plan,
                               const std::string& source);
std::string janus_plan_text(const Config& cfg, const ClusterModel& cluster, const std::vector<JanusBlockPlan>& plan,
                            const std::string& source);

// The decision table `moebench run` prints and stores for a janus run (one line per block).
std::string janus_decision_table(const Config& cfg, int nodes, int workers_per_node);

}  // namespace moebench
