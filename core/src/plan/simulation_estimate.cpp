// The simulation's estimate and budget (simulation_estimate.h).
#include "moebench/plan/simulation_estimate.h"

#include <algorithm>

#include "moebench/config/strategy_spec.h"
#include "moebench/perf/memory_model.h"

namespace moebench {

SimulationEstimate simulation_estimate(const Config& cfg, int ranks_built, int steps, int routings_held) {
  const MemoryModel m = memory_model(cfg);
  const double W = cfg.run.ranks, K = cfg.moe.top_k, M = std::max(1, cfg.parallel.microbatches), ep = m.e;
  int D = 1;  // the most chunks any strategy's options cut a block into
  for (const StrategySpec* spec : strategy_specs())
    if (spec->chunks) D = std::max(D, spec->chunks(cfg.strategy));
  const double tokens = (double)cfg.train.batch_size * cfg.model.seq_len;  // the global batch
  const double rank_tokens = tokens / m.d;                                 // one data-parallel rank's
  SimulationEstimate e;
  double per_rank = 0, experts = 0;
  for (int E : cfg.moe.experts) {
    experts += E;
    per_rank += M * (ep * E * (1 + D) + D * (ep * ep + E)) + rank_tokens * K;
  }
  const bool moe = !cfg.moe.experts.empty();
  e.routing_bytes = routings_held * (8 * W * experts + (moe ? 4 * rank_tokens * K : 0.0));
  e.build_bytes = 8 * per_rank;
  e.work = steps * (tokens * K * cfg.moe.experts.size() + W * experts + ranks_built * per_rank);
  return e;
}

void add_graph(SimulationEstimate& e, const TaskGraph& rank0, int ranks_built, int steps) {
  double bytes = 0, transfers = 0;
  for (const GraphTask& t : rank0.tasks()) {
    bytes += sizeof(GraphTask) + t.name.capacity() + t.deps.capacity() * sizeof(int) +
             t.cost.bytes_to_peer.capacity() * sizeof(std::pair<int, uint64_t>);
    transfers += (double)t.cost.bytes_to_peer.size();
  }
  e.graph_bytes = 2.5 * bytes * ranks_built;
  e.tasks = (double)rank0.size() * ranks_built * steps;
  e.transfers = transfers * ranks_built * steps;
  e.work += e.tasks + e.transfers;
}

}  // namespace moebench
