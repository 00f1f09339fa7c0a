#pragma once
// monta (strategies/monta.cpp): MoNTA's AllToAll + AllGather pipelining under tensor
// parallelism. What plan, the experiments and the strategy share: the level and chunks a block
// runs with, and the cost model's inputs on a cluster (perf/monta_model.h).
#include "moebench/config/config.h"
#include "moebench/moe/moe_strategy.h"
#include "moebench/perf/monta_model.h"

namespace moebench {

class ClusterModel;

struct MontaPlan {
  MontaLevel level = MontaLevel::O1;
  int chunks = 1;  // 1 for baseline and O1
};

// The cost model's inputs for one AllToAll of I bytes of the block of ctx on `cluster`:
// t = ctx.tp_size, e = ctx.ep_size; B1 / B2 the links of the EP and TP groups (a node's NIC
// shared by its devices when the group spans nodes, else the intra-node link), B3 the copy
// bandwidth; r1, r2 the links' own efficiency (latency per message against bytes / bandwidth:
// link_efficiency), r3 = 1. No measured curves yet: this is the stated fallback. I_minimal is
// the volume at which the AllToAll's efficiency falls to 1/2 (e * latency * B1).
MontaInputs monta_inputs(const ClusterModel& cluster, const MoeContext& ctx, double I);

// The level and chunks of [strategy.monta] for a block moving I bytes per AllToAll: as set, or
// where they say "auto" the cost model's choice on `cluster` (Algorithm 3 for the level,
// Algorithms 1-2 for the chunks). tp = 1 runs the baseline (nothing to drop). Throws
// std::invalid_argument for "auto" without a cluster.
MontaPlan resolve_monta_plan(const MontaOptions& options, const MoeContext& ctx, double I, const ClusterModel* cluster);

}  // namespace moebench
