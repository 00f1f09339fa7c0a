#include "moebench/plan/trace_routing.h"

#include <map>
#include <stdexcept>

#include "moebench/store/run_summary.h"

namespace moebench {

std::vector<StepRouting> trace_step_routing(const RunStore& store, const std::string& run_ref, const Config& cfg,
                                            int steps) {
  RunInfo run;
  try {
    run = store.find_run(run_ref);
  } catch (const StoreError& e) {
    throw std::invalid_argument(std::string("trace:") + run_ref + ": " + e.what());
  }
  const std::string what = "trace:" + run_ref + " (run " + std::to_string(run.id) + " in " + store.path() + ")";
  const int W = cfg.run.ranks;
  if (run.ranks != W)
    throw std::invalid_argument(what + " was recorded on " + std::to_string(run.ranks) + " ranks; the config runs " +
                                std::to_string(W) + " (run.ranks): replay it with --ranks " + std::to_string(run.ranks));
  std::map<int, int> experts;
  for (size_t i = 0; i < cfg.moe.moe_layers.size(); ++i) experts[cfg.moe.moe_layers[i]] = cfg.moe.experts.at(i);
  if (moe_experts_per_layer(run.config_json) != experts)
    throw std::invalid_argument(what + " has other MoE blocks or expert counts than the config (moe.moe_layers, "
                                "moe.experts): a trace replays only the model shape it was recorded with");
  const std::vector<int64_t> recorded = store.steps_with(run.id, RecordTable::routing);
  if (recorded.empty()) throw std::invalid_argument(what + " recorded no routing");
  if ((int)recorded.size() < steps)
    throw std::invalid_argument(what + " recorded the routing of " + std::to_string(recorded.size()) +
                                " steps; " + std::to_string(steps) + " were asked for (--steps)");
  std::vector<StepRouting> out;
  for (int s = 0; s < steps; ++s) {
    StepRouting r;
    for (const auto& [layer, E] : experts) r.rows[layer].assign((size_t)W * E, 0);
    for (const RoutingRow& row : store.routing(run.id, recorded[(size_t)s], recorded[(size_t)s])) {
      auto it = r.rows.find(row.layer);
      const int E = it == r.rows.end() ? 0 : experts.at(row.layer);
      if (it == r.rows.end() || row.source_rank < 0 || row.source_rank >= W || row.expert < 0 || row.expert >= E ||
          row.tokens < 0)
        throw std::invalid_argument(what + " has a routing row outside the model (step " + std::to_string(row.step) +
                                    ", block " + std::to_string(row.layer) + ", rank " + std::to_string(row.source_rank) +
                                    ", expert " + std::to_string(row.expert) + ")");
      it->second[(size_t)row.source_rank * E + row.expert] += row.tokens;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace moebench
