#pragma once
// fastermoe (strategies/fastermoe.cpp): FasterMoE's optimisations (PPoPP'22 §4), each a switch
// of [strategy.fastermoe] an ablation can vary. The exchange is expert_centric's all-to-all-v
// with all three off.
#include "moebench/config/config.h"

namespace moebench {

// The strategy's registered name; also the name of FasterMoE's performance model (§3, the DDL
// roofline) among `bench predictor --model`'s predictors.
inline constexpr const char* kFasterMoeName = "fastermoe";

struct FasterMoeOptions {
  // Dynamic shadowing (§4.1, Algorithm 1): every pass, from the EP group's token counts, the
  // experts whose parameters are cheaper to broadcast than their tokens are to send; every rank
  // computes its own tokens of them and their gradients are reduced to the owner.
  bool shadow = false;
  // Per rank, the memory shadowed experts may take (parameters and gradients, fp32), MB;
  // 0 = no limit (at most every expert of the block). Too small for one expert is an error.
  double shadow_budget_mb = 0.0;
  // Smart schedule (§4.2): the exchange in pairwise steps between groups of EP ranks, step j
  // sending to group i - j, computing the tokens of group i + j, returning them; the comm stream
  // runs S_0, S_1, R_0, S_2, R_1, ..., R_{n-1} (the local group first, the ring step last).
  bool smart = false;
  int group_size = 0;  // EP ranks per group; 0 = the EP ranks of one node
  // Topology-aware gate (§4.3): at most L = W_net / (M W_local) x B of a rank's assignments go to
  // experts on another node; the rest re-select among the node's experts by score.
  bool topo_gate = false;
  static FasterMoeOptions of(const StrategyConfig& s);
};

}  // namespace moebench
