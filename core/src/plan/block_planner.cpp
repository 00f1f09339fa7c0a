#include "moebench/plan/block_planner.h"

#include <algorithm>
#include <stdexcept>

#include "moebench/config/config_layout.h"
#include "moebench/perf/cluster_network.h"
#include "moebench/strategies/janus.h"
#include "moebench/plan/step_simulation.h"

namespace moebench {
namespace {

std::vector<PlanCandidate> candidates_of(const Config& base) {
  std::vector<PlanCandidate> out;
  auto add = [&](const std::string& label, const std::string& strategy, auto&& tweak) {
    PlanCandidate c;
    c.label = label;
    c.strategy = strategy;
    c.config = base;
    c.config.strategy.name = strategy;
    c.config.strategy.per_block.blocks.clear();
    tweak(c.config.strategy);
    out.push_back(std::move(c));
  };
  const int degree = base.strategy.expert_centric.overlap_degree;
  add("expert_centric" + (degree > 1 ? " D=" + std::to_string(degree) : std::string()), "expert_centric",
      [](StrategyConfig&) {});
  if (degree == 1) add("expert_centric D=2", "expert_centric", [](StrategyConfig& s) { s.expert_centric.overlap_degree = 2; });
  add("hier_a2a", "hier_a2a", [](StrategyConfig&) {});
  add("data_centric", "data_centric", [](StrategyConfig& s) {
    s.data_centric.hierarchical = false;
    s.data_centric.prefetch = false;
    s.data_centric.pcie_pairing = false;
  });
  add("data_centric + cache", "data_centric", [](StrategyConfig& s) {
    s.data_centric.hierarchical = true;
    s.data_centric.prefetch = false;
  });
  add("data_centric + cache + prefetch", "data_centric", [](StrategyConfig& s) {
    s.data_centric.hierarchical = true;
    s.data_centric.prefetch = true;
  });
  // Twice the config's credits: more pulls in flight (Janus §5.2's buffer), plain and cached.
  const int credits = 2 * base.strategy.data_centric.credits;
  const std::string more = " C=" + std::to_string(credits);
  add("data_centric" + more, "data_centric", [credits](StrategyConfig& s) {
    s.data_centric.hierarchical = false;
    s.data_centric.prefetch = false;
    s.data_centric.pcie_pairing = false;
    s.data_centric.credits = credits;
  });
  add("data_centric + cache" + more, "data_centric", [credits](StrategyConfig& s) {
    s.data_centric.hierarchical = true;
    s.data_centric.prefetch = false;
    s.data_centric.credits = credits;
  });
  // MoNTA (tensor parallelism only): its cost model's choice, and each level with its best chunks.
  for (const char* level : {"auto", "O1", "O2", "O3"})
    add(std::string("monta ") + level, "monta", [level](StrategyConfig& s) {
      s.monta.level = level;
      s.monta.chunks = "auto";
    });
  return out;
}

// Why `c` cannot run on the config's layout, or "".
std::string inapplicable(const Config& c) {
  const int W = c.run.ranks, nodes = c.cluster.nodes;
  const int per_node = c.cluster.devices_per_node > 0 ? c.cluster.devices_per_node : W / nodes;
  const bool hier = c.strategy.name == "hier_a2a" || (c.strategy.name == "data_centric" && c.strategy.data_centric.hierarchical);
  if (hier && nodes < 2) return "one node: nothing hierarchical to exploit";
  ParallelLayout layout;
  try {
    layout = layout_of(c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  if (c.strategy.name == "monta" && layout.tp() == 1) return "parallel.tp = 1: no tensor-parallel redundancy to drop";
  if (c.strategy.name == "hier_a2a" && layout.ep() % per_node != 0 && per_node % layout.ep() != 0)
    return "EP groups do not cover whole nodes";
  if (c.strategy.name == "expert_centric" || c.strategy.name == "hier_a2a") {
    const int degree = c.strategy.name == "hier_a2a" ? c.strategy.hier_a2a.overlap_degree
                                                     : c.strategy.expert_centric.overlap_degree;
    if ((long)c.train.batch_size / layout.dp() / std::max(1, c.parallel.microbatches) * c.model.seq_len < degree)
      return "fewer tokens per rank than the overlap degree";
  }
  return "";
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

  // The mix: per block its choice; per strategy the option set most blocks chose.
  Config mix = plan.candidates[(size_t)plan.best_single].config;
  mix.strategy.name = "per_block";
  mix.strategy.per_block.blocks.clear();
  std::map<std::string, std::map<int, int>> votes;  // strategy -> candidate -> blocks
  for (const BlockChoice& b : plan.blocks) {
    const PlanCandidate& c = plan.candidates[(size_t)b.candidate];
    mix.strategy.per_block.blocks.push_back(c.strategy);
    ++votes[c.strategy][b.candidate];
  }
  for (const auto& [strategy, counts] : votes) {
    int best = -1, most = 0;
    for (const auto& [k, n] : counts)
      if (n > most) {
        best = k;
        most = n;
      }
    const StrategyConfig& s = plan.candidates[(size_t)best].config.strategy;
    if (strategy == "expert_centric") mix.strategy.expert_centric = s.expert_centric;
    if (strategy == "hier_a2a") mix.strategy.hier_a2a = s.hier_a2a;
    if (strategy == "data_centric") mix.strategy.data_centric = s.data_centric;
    if (strategy == "monta") mix.strategy.monta = s.monta;
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
