#pragma once
// The refusal of a simulation over its budget (plan/simulation_estimate.h), for `moebench
// simulate` and `moebench plan --graph`: before the routing or any graph is built, and again
// with rank 0's graph.
#include <string>

#include "moebench/plan/simulation_estimate.h"

namespace moebench::cli {

// Throws UsageError when `e` is over kSimulationMemoryBudget (or the memory this process may
// still use, launch_limits.h) or kSimulationWorkBudget: the estimate against the budget, and
// what lowers it. `what`: "simulate: 16384 ranks, 1 step"; `lower`: the flags and keys that do.
void check_simulation_budget(const SimulationEstimate& e, const std::string& what, const std::string& lower);

}  // namespace moebench::cli
