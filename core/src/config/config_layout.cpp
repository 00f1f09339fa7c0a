#include "moebench/config/config_layout.h"

#include "moebench/config/strategy_spec.h"

namespace moebench {

ParallelLayout layout_of(const Config& cfg) {
  ParallelSizes s;
  s.world = cfg.run.ranks;
  s.tp = cfg.parallel.tp;
  s.pp = cfg.parallel.pp;
  s.dp = cfg.parallel.dp;
  s.ep = cfg.parallel.ep;
  s.experts = expert_groups_of(cfg);
  s.experts_per_block = cfg.moe.experts;
  s.layers = cfg.model.layers;
  s.stage_layers = cfg.parallel.stage_layers;
  return ParallelLayout(std::move(s));
}

}  // namespace moebench
