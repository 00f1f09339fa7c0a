#pragma once
// What replaying every rank's step graph costs (`moebench simulate`, one rank's graph for `plan
// --graph`), estimated before the per-step routing or any graph is built, and the budget it must
// stay within (docs/limits.md "Sizes, memory and time"). PREDICTED, in two stages:
//   from the config alone (simulation_estimate): one step's routing counts (run.ranks x the
//     experts of every MoE block, 8 bytes each) and the expert choices of one data-parallel rank
//     (4 bytes per token x top_k); the synthetic choices drawn per step (the global batch's
//     tokens x top_k per MoE block); and the exchange layouts the graph builders make per rank,
//     per MoE block and micro-batch: the ep x experts counts and their D chunks (D the overlap
//     degree), D x ep^2 pair counts, the rows received (tokens x top_k);
//   with rank 0's graph of the first step (add_graph): its tasks and point-to-point transfers,
//     times the ranks; its bytes (tasks, names, dependencies, per-peer byte counts) times the
//     ranks, x 2.5 for the simulator's per-task state (times, counters, matching).
// Work is counted in cells (a count laid out, a choice drawn, a task or transfer replayed), all
// steps together; memory is what is held at once (one step's routing; all ranks' graphs).
#include "moebench/config/config.h"
#include "moebench/runtime/task_graph.h"

namespace moebench {

// The budget (docs/limits.md): a few GB of memory, and work one core does in under a minute
// (measured: about 5e7 cells a second; 512 ranks x 512 experts are 8e8 cells, 17 s).
inline constexpr double kSimulationMemoryBudget = double(uint64_t(4) << 30);  // 4 GiB
inline constexpr double kSimulationWorkBudget = 2e9;                           // cells
inline constexpr int kMaxSimulationSteps = 10000;  // --steps

struct SimulationEstimate {
  double routing_bytes = 0;  // held at once: one step's routing (all steps' for a replayed trace)
  double graph_bytes = 0;    // held at once: every rank's graph and the simulator's state
  double build_bytes = 0;    // held at once: one rank's exchange layouts while its graph is built
  double work = 0;           // cells, all steps
  double tasks = 0;          // tasks replayed, all ranks and steps (with add_graph)
  double transfers = 0;      // point-to-point transfers replayed, likewise
  double bytes() const { return routing_bytes + graph_bytes + build_bytes; }
};

// For a validated config: `ranks_built` graphs per step (run.ranks for simulate, 1 for plan
// --graph), `steps` steps, `routings_held` steps' routings held at once (1, or the steps of a
// replayed trace).
SimulationEstimate simulation_estimate(const Config& cfg, int ranks_built, int steps, int routings_held = 1);
// Adds rank 0's graph of the first step: its tasks, transfers and bytes, times the ranks built.
void add_graph(SimulationEstimate& e, const TaskGraph& rank0, int ranks_built, int steps);

}  // namespace moebench
