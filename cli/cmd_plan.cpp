// moebench plan CONFIG [--set key=value]... [--json]: the PREDICTED per-block plan of Janus
// (R, paradigm) with the expert_centric and data_centric predictions (strategies' predict() on
// the config's cluster model: inter-node traffic per machine, comm and compute seconds).
// moebench plan CONFIG --graph RANK [--json]: the task graph of one training iteration of that
// rank (train/step_graph.h), built without MPI from synthetic routing, for any run.ranks.
// moebench plan CONFIG --cluster FILE [--nodes N] [--ranks N] [--json] [--write-config OUT]: the
// planner (plan/block_planner.h): each MoE block's PREDICTED time under every applicable
// strategy and option set on that cluster, the choice per block, and the config that runs it;
// and each strategy's own part (StrategyDescriptor::plan_json / plan_text: with parallel.tp > 1
// MoNTA's cost-model choice per block).
// moebench plan CONFIG --memory [--cluster FILE] [--json]: MoNTA's memory model per device
// (plan_memory.h); --cluster there only describes the devices (no planner).
// moebench plan CONFIG --context LEN [--cluster FILE] [--json]: MoNTA's long-context expansion
// (plan_context.h), likewise.
// moebench plan CONFIG --elastic [--ranks N] [--json]: MoESys's elastic task-to-ranks assignment
// for data.tasks (plan_elastic.h).
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cluster_option.h"
#include "commands.h"
#include "output_file.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/usage_error.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/runtime/graph_dump.h"
#include "moebench/strategies/janus.h"
#include "moebench/plan/block_planner.h"
#include "moebench/strategies/strategy_descriptor.h"
#include "moebench/train/step_graph.h"
#include "plan_context.h"
#include "plan_elastic.h"
#include "plan_memory.h"
#include "simulation_budget.h"

namespace moebench::cli {

namespace {
int plan_main(const std::string& path, const std::vector<std::string>& sets, bool json) {
  const Config cfg = load_config(path, sets);
  const ClusterModel cluster = cluster_model(cfg);
  std::vector<JanusBlockPlan> plan;
  try {
    plan = janus_plan(cfg, cluster);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (json)
    std::cout << janus_plan_json(cfg, cluster, plan, path).dump(2) << "\n";
  else
    std::fputs(janus_plan_text(cfg, cluster, plan, path).c_str(), stdout);
  return 0;
}
int graph_main(const std::string& path, const std::vector<std::string>& sets, int rank, bool json) {
  const Config cfg = load_config(path, sets);
  TaskGraph g;
  try {
    check_simulation_budget(simulation_estimate(cfg, 1, 1),
                            "plan --graph: rank " + std::to_string(rank) + " of " + std::to_string(cfg.run.ranks),
                            "--ranks (run.ranks), moe.experts or train.batch_size");
    g = build_step_graph(cfg, rank);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--graph: ") + e.what());
  }
  const std::string routing = step_graph_routing(cfg);
  if (json) {
    nlohmann::json j = graph_json(g);
    j["predicted"] = true;
    j["config"] = path;
    j["rank"] = rank;
    j["ranks"] = cfg.run.ranks;
    j["strategy"] = cfg.strategy.name;
    j["routing"] = routing;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("Task graph of one training iteration of rank %d of %d (%s, strategy %s), built without running "
              "anything; routing: %s. Costs are the schedule's (flops, bytes), not measurements.\n",
              rank, cfg.run.ranks, path.c_str(), cfg.strategy.name.c_str(), routing.c_str());
  std::fputs(graph_table(g).c_str(), stdout);
  return 0;
}

// --cluster: the planner (plan/block_planner.h) on the described cluster.
int cluster_plan_main(const std::string& path, const std::vector<std::string>& sets, bool json,
                      const std::string& write_config, bool force) {
  if (!write_config.empty()) check_output_file("plan --write-config", write_config, force);
  const Config cfg = load_config(path, sets);
  StepPlan plan;
  try {
    plan = plan_blocks(cfg);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const ClusterModel cluster = cluster_model(cfg);
  std::string written;
  if (!write_config.empty()) {
    const std::string text = "# written by `moebench plan --write-config` (PREDICTED choice for cluster " +
                             cluster.spec().name + ")\n" + config_to_toml(plan.planned);
    parse_config(text, write_config);  // the plan is a valid config, or this throws
    std::ofstream f(write_config);
    f << text;
    if (!f.flush()) throw UsageError("--write-config: cannot write " + write_config);
    written = write_config;
  }
  const auto& cands = plan.candidates;
  if (json) {
    nlohmann::json j;
    j["predicted"] = true;
    j["config"] = path;
    j["cluster"] = cluster.describe();
    j["candidates"] = nlohmann::json::array();
    for (const PlanCandidate& c : cands) {
      nlohmann::json cj = {{"label", c.label}, {"strategy", c.strategy}, {"applicable", c.applicable}};
      if (c.applicable) {
        cj["step_ms"] = c.step_ms;
        for (const auto& [b, ms] : c.block_ms) cj["block_ms"][std::to_string(b)] = ms;
      } else {
        cj["why_not"] = c.why_not;
      }
      j["candidates"].push_back(cj);
    }
    j["blocks"] = nlohmann::json::array();
    for (const BlockChoice& b : plan.blocks)
      j["blocks"].push_back({{"block", b.block}, {"R", b.R}, {"janus_rule", b.janus_rule},
                             {"choice", cands[(size_t)b.candidate].label},
                             {"strategy", cands[(size_t)b.candidate].strategy},
                             {"ms", cands[(size_t)b.candidate].block_ms.at(b.block)}});
    j["best_single"] = cands[(size_t)plan.best_single].label;
    j["mixed"] = plan.mixed;
    j["planned_strategy"] = plan.planned.strategy.name;
    j["planned_step_ms"] = plan.planned_step_ms;
    for (const StrategyDescriptor* d : strategy_descriptors())
      if (d->plan_json)
        if (nlohmann::json part = d->plan_json(cfg, cluster); !part.is_null()) j[d->spec.name] = std::move(part);
    if (!written.empty()) j["written"] = written;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("Plan for %s on %s: every time PREDICTED by the simulator (ms per MoE block, forward + backward "
              "+ the experts' gradient all-reduce where they are replicated, mean per rank)\n",
              path.c_str(), cluster.describe().c_str());
  std::printf("%6s %8s %15s", "block", "R", "Janus rule");
  for (const PlanCandidate& c : cands)
    if (c.applicable) std::printf(" %*s", (int)std::max<size_t>(10, c.label.size()), c.label.c_str());
  std::printf("  choice\n");
  for (const BlockChoice& b : plan.blocks) {
    std::printf("%6d %8.2f %15s", b.block, b.R, b.janus_rule.c_str());
    for (const PlanCandidate& c : cands)
      if (c.applicable) std::printf(" %*.3f", (int)std::max<size_t>(10, c.label.size()), c.block_ms.at(b.block));
    std::printf("  %s\n", cands[(size_t)b.candidate].label.c_str());
  }
  std::printf("%6s %8s %15s", "step", "", "");
  for (const PlanCandidate& c : cands)
    if (c.applicable) std::printf(" %*.3f", (int)std::max<size_t>(10, c.label.size()), c.step_ms);
  std::printf("  (ms/step)\n");
  for (const PlanCandidate& c : cands)
    if (!c.applicable) std::printf("not applicable: %s (%s)\n", c.label.c_str(), c.why_not.c_str());
  if (plan.mixed)
    std::printf("plan: strategy per_block, predicted %.3f ms/step (best single strategy: %s, %.3f ms/step)\n",
                plan.planned_step_ms, cands[(size_t)plan.best_single].label.c_str(),
                cands[(size_t)plan.best_single].step_ms);
  else
    std::printf("plan: %s for every block, predicted %.3f ms/step\n", cands[(size_t)plan.best_single].label.c_str(),
                plan.planned_step_ms);
  for (const StrategyDescriptor* d : strategy_descriptors())
    if (d->plan_text) std::fputs(d->plan_text(cfg, cluster).c_str(), stdout);
  if (!written.empty()) std::printf("wrote %s (moebench run %s)\n", written.c_str(), written.c_str());
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand(
      "plan", "Predict per MoE block Janus's R, paradigm, inter-node traffic and seconds (analytical models)");
  auto config = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  auto ranks = std::make_shared<int>(0);
  auto graph = std::make_shared<int>(-1);
  auto memory = std::make_shared<bool>(false);
  auto elastic = std::make_shared<bool>(false);
  auto alpha = std::make_shared<double>(0.0);
  auto context = std::make_shared<long long>(0);  // tokens, with --context
  cmd->add_option("config", *config, "TOML config file")->required();
  cmd->add_option("--set", *sets, "Override a key, e.g. --set cluster.nodes=4 (repeatable)");
  cmd->add_option("--ranks", *ranks, "Plan for this many ranks (sets run.ranks)")->transform(positive());
  cmd->add_option("--graph", *graph, "Print the task graph of one iteration of this rank instead")
      ->transform(non_negative());
  cmd->add_flag("--memory", *memory,
                "Print MoNTA's memory model per device instead (weights per ZeRO stage, activations, verdicts)");
  cmd->add_flag("--elastic", *elastic,
                "Propose MoESys's elastic task-to-ranks assignment for data.tasks instead (ranks per task from the "
                "task loads, merged light tasks; per-rank load, imbalance, predicted bubble share, config lines)");
  CLI::Option* alpha_given =
      cmd->add_option("--alpha", *alpha,
                      "With --memory: MoESys eq. 1's activation likelihood of sparse (expert) parameters, in [0, 1] "
                      "(default: the largest top_k / experts of the MoE blocks)")
          ->check(number_in(0.0, 1.0));
  CLI::Option* context_given =
      cmd->add_option("--context", *context,
                      "Propose MoNTA's horizontal or vertical CP / EP expansion for a context of this many tokens instead")
          ->transform(CLI::Validator(
              [](std::string& text) {  // the range on the text as written, then exponent form
                const std::string problem = context_tokens()(text);
                return problem.empty() ? whole_number(1, kMaxContextTokens)(text) : problem;
              },
              "TOKENS"));
  cmd->add_flag("--json", *json, "Print JSON instead of a table");
  auto cluster = std::make_shared<std::string>();
  auto nodes = std::make_shared<int>(0);
  auto write = std::make_shared<std::string>();
  cmd->add_option("--cluster", *cluster,
                  "Simulate every strategy per MoE block on this cluster file and choose (replaces [cluster]; with "
                  "--memory only its devices)");
  cmd->add_option("--nodes", *nodes, "Nodes of the --cluster file's cluster (resizes it)")->transform(positive());
  cmd->add_option("--write-config", *write, "With --cluster: write the chosen config (strategy per_block) here");
  auto force = std::make_shared<bool>(false);
  cmd->add_flag("--force", *force, "With --write-config: replace the file if it exists");
  cmd->callback([&action, config, sets, json, ranks, graph, cluster, nodes, write, force, memory, elastic, context,
                 context_given, alpha, alpha_given] {
    const bool by_context = context_given->count() > 0;
    const bool alpha_set = alpha_given->count() > 0;
    action = [config, sets, json, ranks, graph, cluster, nodes, write, force, memory, elastic, context, by_context, alpha,
              alpha_set] {
      const int modes = (*memory ? 1 : 0) + (*graph >= 0 ? 1 : 0) + (by_context ? 1 : 0) + (*elastic ? 1 : 0);
      if (modes > 1) throw UsageError("--memory, --graph, --context and --elastic exclude each other: choose one");
      if (*elastic && (!cluster->empty() || !write->empty()))
        throw UsageError("--elastic takes no --cluster or --write-config (it plans from the task loads alone)");
      if (by_context && !write->empty())
        throw UsageError("--context and --write-config exclude each other (--write-config writes the planner's choice)");
      if (alpha_set && !*memory) throw UsageError("--alpha needs --memory (MoESys eq. 1 is part of the memory model)");
      if (*memory && !write->empty())
        throw UsageError("--memory and --write-config exclude each other (--write-config writes the planner's choice)");
      if (!write->empty() && cluster->empty()) throw UsageError("--write-config needs --cluster (the planner)");
      const std::vector<std::string> all = cluster_sets(*config, *sets, *cluster, *nodes, *ranks);
      if (*elastic) return elastic_plan_main(*config, all, *json);
      if (*memory) return memory_plan_main(*config, all, *json, alpha_set ? std::optional<double>(*alpha) : std::nullopt);
      if (by_context) return context_plan_main(*config, all, *context, *json);
      if (*graph >= 0) return graph_main(*config, all, *graph, *json);
      if (*force && write->empty()) throw UsageError("--force needs --write-config (the file it may replace)");
      if (!cluster->empty()) return cluster_plan_main(*config, all, *json, *write, *force);
      return plan_main(*config, all, *json);
    };
  });
}

}  // namespace moebench::cli
