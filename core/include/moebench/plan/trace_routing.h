#pragma once
// Routing recorded by a measured run (the store's routing table: rows per MoE block, source
// rank and expert, per step), as the StepRoutings the simulator builds its graphs from
// (`moebench simulate --routing trace:<run>`): the real imbalance of that run replayed.
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/store/run_store.h"
#include "moebench/train/step_graph.h"

namespace moebench {

// The first `steps` recorded steps of run `run_ref` (id, uuid (prefix) or name) in step order.
// Throws std::invalid_argument naming the run and the store when the run does not exist, has
// no routing rows or fewer steps than asked, was recorded with another rank count than
// cfg.run.ranks, or has other MoE blocks or expert counts than cfg.
std::vector<StepRouting> trace_step_routing(const RunStore& store, const std::string& run_ref, const Config& cfg,
                                            int steps);

}  // namespace moebench
