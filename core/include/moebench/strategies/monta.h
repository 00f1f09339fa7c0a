#pragma once
// monta (strategies/monta.cpp): MoNTA's AllToAll + AllGather pipelining under tensor
// parallelism. What plan, the experiments and the strategy share: the level and chunks a block
// runs with, and the cost model's inputs on a cluster (perf/monta_model.h).
#include <string>

#include <nlohmann/json.hpp>

#include "moebench/config/config.h"
#include "moebench/moe/moe_strategy.h"
#include "moebench/perf/monta_model.h"

namespace moebench {

class ClusterModel;

// [strategy.monta] (monta.txt): the expert-parallel AllToAll under tensor parallelism, where every
// TP rank holds the same tokens. Levels (Table 6): "baseline" (expert_centric's all-to-all,
// t-fold redundant), "O1" (Drop: each TP rank sends 1/t of the rows over the EP group, then an
// AllGather over the TP group and a copy restore every row), "O2" (the rows in `chunks` chunks:
// chunk j's AllGather overlaps chunk j+1's AllToAll), "O3" (O2 with the order-restoring copy on
// its own stream, overlapping the next chunk's AllGather), "auto" (the cost model's choice,
// Algorithm 3). Dispatch and combine, forward and backward alike.
struct MontaOptions {
  std::string level = "auto";
  std::string chunks = "auto";  // O2 / O3 chunks: a number >= 1 as text, or "auto" (Algorithms 1-2)
  // "Communication Conflict": every MoE block's comm tasks on their roles' priority lanes, so the
  // EP AllToAll never queues behind DP gradient buckets or PP sends (GraphTask::priority).
  bool ep_priority = false;
  static MontaOptions of(const StrategyConfig& s);
};

struct MontaPlan {
  MontaLevel level = MontaLevel::O1;
  int chunks = 1;  // 1 for baseline and O1
};

// The cost model's inputs for one AllToAll of I bytes of the block of ctx on `cluster`:
// t = ctx.tp_size, e = ctx.ep_size; B1 / B2 the links of the EP and TP groups (a node's NIC
// shared by its devices when the group spans nodes, else the intra-node link), B3 the cluster's
// d2d_bw_gbs (else copy_bw_gbs) with r3 = 1. r1, r2: the cluster's measured AllToAll / AllGather
// curves (busbw / B; `moebench bench comm`, cluster keys *_busbw_*), or where none was measured
// the link's own curve (latency per message against bytes / bandwidth: link_efficiency), the
// stated fallback. I_minimal: the smallest measured AllToAll (nothing is known below it), or
// without a curve the volume at which the AllToAll's efficiency falls to 1/2 (e latency B1).
MontaInputs monta_inputs(const ClusterModel& cluster, const MoeContext& ctx, double I);

// The level and chunks of [strategy.monta] for a block moving I bytes per AllToAll: as set, or
// where they say "auto" the cost model's choice on `cluster` (Algorithm 3 for the level,
// Algorithms 1-2 for the chunks). tp = 1 runs the baseline (nothing to drop). Throws
// std::invalid_argument for "auto" without a cluster.
MontaPlan resolve_monta_plan(const MontaOptions& options, const MoeContext& ctx, double I, const ClusterModel* cluster);

// The cost model on a config (plan --cluster, experiments/monta): per MoE block, the AllToAll of
// world rank 0's groups (TP ranks 0..t-1; its EP group of ep consecutive data-parallel ranks),
// I = tokens per micro-batch and rank x top_k x hidden x 4 bytes (balanced routing), every
// level's predicted seconds (O2 / O3 at their best chunks, or at [strategy.monta] chunks when
// it is a number) and Algorithm 3's choice. Also says
// whether r1 / r2 come from measured curves (else the link fallback). Predicted, never measured.
struct MontaBlockChoice {
  int block = 0;
  double I = 0;
  double baseline = 0, O1 = 0;
  MontaChoice O2, O3, chosen;
  double bound = 0;  // eq. 13
  bool measured_r1 = false, measured_r2 = false;
};
std::vector<MontaBlockChoice> monta_block_choices(const Config& cfg, const ClusterModel& cluster);

// The MoNTA part of `moebench plan CONFIG --cluster FILE` (parallel.tp > 1): per MoE block the
// predicted AllToAll times per level and Algorithm 3's choice, as JSON rows or a table
// (monta_report.cpp).
nlohmann::json monta_plan_json(const Config& cfg, const ClusterModel& cluster);
std::string monta_plan_text(const Config& cfg, const ClusterModel& cluster);

}  // namespace moebench
