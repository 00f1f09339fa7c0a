#pragma once
// The planner (`moebench plan CONFIG --cluster FILE`): every applicable strategy and option set
// simulated on the config's cluster (plan/step_simulation.h), the predicted time of each MoE
// block under each, the fastest per block, and that mix as strategy "per_block" simulated once
// more. Everything here is predicted.
//
// Candidates (each the whole model under one setting; a block's time is its forward and
// backward windows and its experts' gradient all-reduce where parallel.ep replicates them (the
// same for every candidate), mean per rank: block_splits' compute + comm + idle):
//   expert_centric (overlap degree of the config, and 2 when that is 1), hier_a2a (more than
//   one node), data_centric plain, with the node cache (hierarchical; more than one node), with
//   the node cache and prefetch (its gets start with the iteration in the step graph), and plain
//   and cached with twice the config's credits. A candidate the step graph refuses is listed
//   with why.
// The mix: one strategy per block; strategies with several option sets chosen take the set
// most blocks chose (ties: the first candidate's). When the mix is predicted slower than the
// best single candidate (blocks interact through shared links), that candidate is the plan.
// Janus's R rule (strategies/janus.h) is reported beside each block.
#include <map>
#include <string>
#include <vector>

#include "moebench/config/config.h"

namespace moebench {

struct PlanCandidate {
  std::string label;     // the strategy's candidate label (StrategyDescriptor::candidates)
  std::string strategy;  // the strategy name it runs
  Config config;         // the whole model under it
  bool applicable = true;
  std::string why_not;   // when not applicable
  double step_ms = 0;    // predicted
  std::map<int, double> block_ms;  // MoE block -> predicted ms (forward + backward)
};

struct BlockChoice {
  int block = 0;
  double R = 0;             // Janus eq. 1
  std::string janus_rule;   // what Janus's threshold picks
  int candidate = -1;       // index of the fastest applicable candidate
};

struct StepPlan {
  std::vector<PlanCandidate> candidates;
  std::vector<BlockChoice> blocks;
  int best_single = -1;     // the fastest candidate for the whole step
  Config planned;           // strategy per_block (or the best single candidate's)
  double planned_step_ms = 0;
  bool mixed = false;       // planned is the per-block mix
};

// cfg: a validated config whose [cluster] is the target. Throws std::invalid_argument when no
// candidate applies (the message names each one's reason).
StepPlan plan_blocks(const Config& cfg);

}  // namespace moebench
