#include "moebench/plan/block_planner.h"

#include <algorithm>
#include <stdexcept>

#include "moebench/config/config_layout.h"
#include "moebench/perf/cluster_network.h"
#include "moebench/strategies/janus.h"
#include "moebench/plan/step_simulation.h"
#include "moebench/strategies/registry.h"

namespace moebench {
namespace {

// Every registered strategy's candidates, in registration order, each on the whole model.
std::vector<PlanCandidate> candidates_of(const Config& base) {
  std::vector<PlanCandidate> out;
  for (const StrategyDescriptor* d : strategy_descriptors()) {
    if (!d->candidates) continue;
    for (const PlannerCandidate& p : d->candidates(base)) {
      PlanCandidate c;
      c.label = p.label;
      c.strategy = d->spec.name;
      c.config = base;
      c.config.strategy.name = d->spec.name;
      p.tweak(c.config.strategy);
      out.push_back(std::move(c));
    }
  }
  return out;
}

// Why `c` cannot run on the config's layout, or "".
std::string inapplicable(const Config& c) {
  const StrategyDescriptor& d = strategy_descriptor(c.strategy.name);
  return d.inapplicable ? d.inapplicable(c) : "";
}

}  // namespace

StepPlan plan_blocks(const Config& cfg) {
  StepPlan plan;
  plan.candidates = candidates_of(cfg);
  const ClusterNetwork net(cluster_model(cfg));
  const StepRouting routing = synthetic_step_routing(cfg, 1);
  std::string reasons;
  for (PlanCandidate& c : plan.candidates) {
    c.why_not = inapplicable(c.config);
    if (c.why_not.empty()) {
      try {
        const StepSimulation sim = simulate_step(c.config, net, routing);
        c.step_ms = sim.result.makespan * 1e3;
        for (const BlockSplit& b : block_splits(c.config, sim)) c.block_ms[b.block] = (b.compute_s + b.comm_s + b.idle_s) * 1e3;
      } catch (const std::invalid_argument& e) {
        c.why_not = e.what();
      }
    }
    c.applicable = c.why_not.empty();
    if (!c.applicable) reasons += "\n  " + c.label + ": " + c.why_not;
    const int i = (int)(&c - plan.candidates.data());
    if (c.applicable && (plan.best_single < 0 || c.step_ms < plan.candidates[(size_t)plan.best_single].step_ms))
      plan.best_single = i;
  }
  if (plan.best_single < 0) throw std::invalid_argument("no strategy applies to this layout:" + reasons);

  const int W = cfg.run.ranks, nodes = cfg.cluster.nodes;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : W / nodes;
  const std::vector<JanusDecision> janus = janus_decisions(cfg, nodes, per_node);
  for (size_t i = 0; i < cfg.moe.moe_layers.size(); ++i) {
    BlockChoice b;
    b.block = cfg.moe.moe_layers[i];
    b.R = janus[i].R;
    b.janus_rule = janus[i].paradigm;
    for (size_t k = 0; k < plan.candidates.size(); ++k) {
      const PlanCandidate& c = plan.candidates[k];
      if (c.applicable && (b.candidate < 0 || c.block_ms.at(b.block) < plan.candidates[(size_t)b.candidate].block_ms.at(b.block)))
        b.candidate = (int)k;
    }
    plan.blocks.push_back(b);
  }

  // The mix: per block its choice (as the chooser that takes a list runs it); per strategy the
  // option set most blocks chose.
  Config mix = plan.candidates[(size_t)plan.best_single].config;
  std::vector<std::string> chosen;
  std::map<std::string, std::map<int, int>> votes;  // strategy -> candidate -> blocks
  for (const BlockChoice& b : plan.blocks) {
    const PlanCandidate& c = plan.candidates[(size_t)b.candidate];
    chosen.push_back(c.strategy);
    ++votes[c.strategy][b.candidate];
  }
  const auto lists = std::find_if(strategy_descriptors().begin(), strategy_descriptors().end(),
                                  [](const StrategyDescriptor* d) { return bool(d->assign_blocks); });
  if (lists == strategy_descriptors().end()) throw std::logic_error("no registered strategy runs a list of block strategies");
  (*lists)->assign_blocks(mix.strategy, chosen);
  for (const auto& [strategy, counts] : votes) {
    int best = -1, most = 0;
    for (const auto& [k, n] : counts)
      if (n > most) {
        best = k;
        most = n;
      }
    const StrategyConfig& s = plan.candidates[(size_t)best].config.strategy;
    for (const OptionDef& o : strategy_spec(strategy).options)
      mix.strategy.option(strategy + "." + o.key) = s.option(strategy + "." + o.key);
  }
  const bool uniform = std::all_of(plan.blocks.begin(), plan.blocks.end(),
                                   [&](const BlockChoice& b) { return b.candidate == plan.blocks.front().candidate; });
  const PlanCandidate& best = plan.candidates[(size_t)plan.best_single];
  plan.planned = best.config;
  plan.planned_step_ms = best.step_ms;
  if (!plan.blocks.empty() && !uniform) {
    const double mix_ms = simulate_step(mix, net, routing).result.makespan * 1e3;
    if (mix_ms < best.step_ms) {
      plan.planned = mix;
      plan.planned_step_ms = mix_ms;
      plan.mixed = true;
    }
  }
  return plan;
}

}  // namespace moebench
