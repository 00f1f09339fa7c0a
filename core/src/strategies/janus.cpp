#include "moebench/strategies/janus.h"

#include <cstdio>

#include "moebench/perf/janus_model.h"

namespace moebench {

std::map<int, std::string> block_strategies(const Config& cfg, int nodes, int workers_per_node) {
  std::map<int, std::string> out;
  if (cfg.strategy.name == "janus") {
    for (const JanusBlockPlan& p : janus_plan(cfg, nodes, workers_per_node)) out[p.block] = p.paradigm;
  } else {
    for (int block : cfg.moe.moe_layers) out[block] = cfg.strategy.name;
  }
  return out;
}

std::string janus_decision_table(const Config& cfg, int nodes, int workers_per_node) {
  char line[160];
  std::snprintf(line, sizeof line, "janus: per MoE block, R = BSk/(4nHE) (predicted), data_centric where R > %g\n",
                cfg.strategy.janus.threshold);
  std::string out = line;
  std::snprintf(line, sizeof line, "  %5s %7s %6s %8s  %s\n", "block", "experts", "E/rank", "R", "paradigm");
  out += line;
  for (const JanusBlockPlan& p : janus_plan(cfg, nodes, workers_per_node)) {
    std::snprintf(line, sizeof line, "  %5d %7d %6d %8.2f  %s\n", p.block, p.experts, p.experts_per_worker, p.R,
                  p.paradigm.c_str());
    out += line;
  }
  return out;
}

}  // namespace moebench
