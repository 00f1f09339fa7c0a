// The simulation budget's refusal (simulation_budget.h).
#include "simulation_budget.h"

#include <algorithm>
#include <cstdio>

#include "launch_limits.h"
#include "moebench/config/usage_error.h"
#include "number_text.h"

namespace moebench::cli {
namespace {

std::string cells_text(double n) {
  char buf[48];
  std::snprintf(buf, sizeof buf, n < 1e6 ? "%.0f" : "%.3g", n);
  return buf;
}

}  // namespace

void check_simulation_budget(const SimulationEstimate& e, const std::string& what, const std::string& lower) {
  const double left = (double)process_memory_left_bytes();
  const double budget = left > 0 ? std::min(kSimulationMemoryBudget, left) : kSimulationMemoryBudget;
  if (e.bytes() <= budget && e.work <= kSimulationWorkBudget) return;
  std::string s = what + ": the simulation would take about " + bytes_text(e.bytes()) + " of memory (" +
                  bytes_text(e.routing_bytes) + " of routing counts, " + bytes_text(e.graph_bytes + e.build_bytes) +
                  " of task graphs) and " + cells_text(e.work) + " cells of work";
  if (e.tasks > 0) s += " (" + cells_text(e.tasks) + " tasks and " + cells_text(e.transfers) + " transfers replayed)";
  s += "; the budget is " + bytes_text(budget) + (budget < kSimulationMemoryBudget ? " (the memory available)" : "") +
       " and " + cells_text(kSimulationWorkBudget) +
       " cells (docs/limits.md): lower " + lower;
  throw UsageError(s);
}

}  // namespace moebench::cli
