// moebench simulate CONFIG [--cluster FILE] [--steps N] [--routing SPEC|trace:RUN] [--db PATH]
//                          [--ranks N] [--nodes N] [--set key=value]... [--json]
// Replays every rank's step graph (the strategies' own builders) on a described cluster
// (perf/simulator.h) and writes the result into the store as a run tagged predicted
// (plan/predicted_run.h). Every number it prints is predicted.
//   --cluster FILE  the cluster file replaces the config's [cluster] (default: the config's own)
//   --nodes N       that cluster with N nodes (scaling a described node type)
//   --ranks N       run.ranks (must equal the cluster's devices)
//   --routing SPEC  a synthetic routing (moe.routing) or trace:RUN, the per-step routing a
//                   measured run of the same model recorded in --db
// A config with [emulate] is predicted as the emulated run it describes (train/emulation.h
// emulated_run_cluster): the emulated cluster's links, time stretched, computing at this
// machine's rates: --host FILE (e.g. a `moebench calibrate` file), else the config's [cluster].
// Its links come from [emulate], so --cluster and --nodes are refused for it.
// Before the routing or any graph is built, the simulation's memory and work are estimated
// (plan/simulation_estimate.h) and refused over the budget (exit 2, simulation_budget.h);
// --steps is at most 10,000.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cluster_option.h"
#include "commands.h"
#include "simulation_budget.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/usage_error.h"
#include "moebench/config/cluster_file.h"
#include "moebench/perf/cluster_network.h"
#include "moebench/train/emulation.h"
#include "moebench/plan/predicted_run.h"
#include "moebench/train/step_graph.h"
#include "moebench/plan/step_simulation.h"
#include "moebench/plan/trace_routing.h"

namespace moebench::cli {
namespace {

struct SimulateArgs {
  std::string config, cluster, routing, db, host;
  std::vector<std::string> sets;
  int steps = 1, ranks = 0, nodes = 0;
  bool json = false;
};

// "defaults" without a cluster file, "calibrated on HOST" for a file `moebench calibrate` wrote
// (its header says so: perf/calibration.cpp), "described" for any other.
std::string cluster_rates_kind(const std::string& file) {
  if (file.empty()) return "defaults";
  std::ifstream in(file);
  std::string line;
  const std::string mark = "), measured by `moebench calibrate", lead = "# This machine (";
  for (int n = 0; n < 8 && std::getline(in, line); ++n) {
    const size_t m = line.find(mark);
    if (m == std::string::npos) continue;
    const size_t h = line.find(lead);
    return h == 0 && m > lead.size() ? "calibrated on " + line.substr(lead.size(), m - lead.size()) : "calibrated";
  }
  return "described";
}

int simulate_main(const SimulateArgs& a) {
  std::vector<std::string> sets = cluster_sets(a.config, a.sets, a.cluster, a.nodes, a.ranks);
  const bool trace = a.routing.rfind("trace:", 0) == 0;
  if (!a.routing.empty() && !trace) sets.push_back("moe.routing=" + a.routing);
  if (!a.db.empty()) sets.push_back("store.db=" + a.db);
  const Config cfg = load_config(a.config, sets);
  const bool emulated = !cfg.emulate.cluster.empty();
  if (emulated && (!a.cluster.empty() || a.nodes > 0))
    throw UsageError("simulate " + a.config + ": the config emulates " + cfg.emulate.cluster +
                     " ([emulate]), whose links the prediction uses; --cluster and --nodes do not apply "
                     "(--host FILE names this machine's compute rates)");
  if (!emulated && !a.host.empty())
    throw UsageError("simulate --host: only for a config with [emulate] (use --cluster for a described cluster)");
  const ClusterModel cluster =
      emulated ? emulated_run_cluster(cfg, a.host.empty() ? cluster_model(cfg)
                                                          : ClusterModel(cluster_spec(load_cluster_file(a.host), cfg.run.ranks)))
               : cluster_model(cfg);
  const ClusterNetwork net(cluster);
  // The estimate before the routing or any graph exists, then with rank 0's graph of step 1
  // (simulation_budget.h); the store is opened only once it passes.
  const std::string what = "simulate: " + std::to_string(cfg.run.ranks) + " ranks, " + std::to_string(a.steps) +
                           (a.steps == 1 ? " step" : " steps");
  const char* lower = "--ranks (run.ranks), --steps, moe.experts or train.batch_size";
  SimulationEstimate estimate = simulation_estimate(cfg, cfg.run.ranks, a.steps, trace ? a.steps : 1);
  check_simulation_budget(estimate, what, lower);
  RunStore store(cfg.store.db);

  std::vector<StepRouting> routings;  // a trace's, every step; synthetic: made step by step
  std::string routing_text;
  try {
    if (trace) {
      routings = trace_step_routing(store, a.routing.substr(6), cfg, a.steps);
      routing_text = a.routing + " (recorded routing replayed)";
    } else {
      routings.push_back(synthetic_step_routing(cfg, 1));
      routing_text = step_graph_routing(cfg) + " (synthetic)";
    }
    add_graph(estimate, build_step_graph(cfg, 0, routings.front()), cfg.run.ranks, a.steps);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  check_simulation_budget(estimate, what, lower);

  std::vector<std::pair<std::string, std::string>> tags = {
      {"cluster", cluster.spec().name}, {"routing", routing_text}};
  // Which rates the prediction used (the GUI shows it beside every predicted-vs-measured pair):
  // "calibrated on HOST" (a file `moebench calibrate` wrote on HOST), "described" (any other
  // cluster file: datasheet or assumed rates), "defaults" (no file: moebench's built-in rates).
  const std::string cluster_file = !a.cluster.empty() ? a.cluster : cfg.cluster.file;
  if (!cluster_file.empty()) tags.push_back({"cluster_file", cluster_file});
  tags.push_back({"rates", cluster_rates_kind(cluster_file)});
  if (emulated) tags.push_back({"emulated_run", cfg.emulate.cluster + (a.host.empty() ? "" : ", host " + a.host)});
  if (trace) tags.push_back({"trace_run", store.find_run(a.routing.substr(6)).uuid});  // the measured run it replays
  PredictedRunWriter writer(store, cfg, cluster, tags);
  std::vector<double> step_ms;
  std::vector<BlockSplit> blocks;
  double comm_ms = 0, wall = 0;
  size_t tasks = 0;
  uint64_t transfers = 0;
  for (int s = 0; s < a.steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    StepSimulation sim;
    try {
      if (!trace && s > 0) routings.front() = synthetic_step_routing(cfg, s + 1);
      sim = simulate_step(cfg, net, routings[trace ? (size_t)s : 0]);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    step_ms.push_back(sim.result.makespan * 1e3);
    comm_ms += exposed_comm_seconds(sim) * 1e3 / a.steps;
    transfers += sim.result.transfers;
    for (const TaskGraph& g : sim.graphs) tasks += g.size();
    const std::vector<BlockSplit> b = block_splits(cfg, sim);
    if (blocks.empty()) blocks.assign(b.size(), {});
    for (size_t i = 0; i < b.size(); ++i) {
      blocks[i].block = b[i].block;
      blocks[i].strategy = b[i].strategy;
      blocks[i].compute_s += b[i].compute_s / a.steps;
      blocks[i].comm_s += b[i].comm_s / a.steps;
      blocks[i].idle_s += b[i].idle_s / a.steps;
    }
    writer.add_step(s + 1, sim);
  }
  writer.finish();
  double mean_ms = 0;
  for (double v : step_ms) mean_ms += v / a.steps;
  const double tokens_per_s = mean_ms > 0 ? (double)cfg.train.batch_size * cfg.model.seq_len / (mean_ms / 1e3) : 0;

  if (a.json) {
    nlohmann::json j;
    j["predicted"] = true;
    j["config"] = a.config;
    j["strategy"] = cfg.strategy.name;
    j["cluster"] = cluster.describe();
    j["ranks"] = cfg.run.ranks;
    j["routing"] = routing_text;
    j["step_ms"] = step_ms;
    j["mean_step_ms"] = mean_ms;
    j["tokens_per_s"] = tokens_per_s;
    j["comm_ms"] = comm_ms;
    j["tasks"] = tasks;
    j["transfers"] = transfers;
    j["simulation_seconds"] = wall;
    j["blocks"] = nlohmann::json::array();
    for (const BlockSplit& b : blocks)
      j["blocks"].push_back({{"block", b.block}, {"strategy", b.strategy}, {"compute_ms", b.compute_s * 1e3},
                             {"comm_ms", b.comm_s * 1e3}, {"idle_ms", b.idle_s * 1e3}});
    j["run"] = {{"id", writer.run().id}, {"uuid", writer.run().uuid}, {"name", writer.run().name}, {"db", cfg.store.db}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("PREDICTED by the simulator (nothing was run): %s, strategy %s, %d ranks\n", a.config.c_str(),
              cfg.strategy.name.c_str(), cfg.run.ranks);
  std::printf("cluster %s\n", cluster.describe().c_str());
  std::printf("routing %s; %d step%s, %zu tasks, %llu transfers, simulated in %.3f s\n", routing_text.c_str(), a.steps,
              a.steps == 1 ? "" : "s", tasks, (unsigned long long)transfers, wall);
  if (a.steps > 1)
    for (int s = 0; s < a.steps; ++s) std::printf("  step %d  %.3f ms (predicted)\n", s + 1, step_ms[(size_t)s]);
  std::printf("predicted %.3f ms/step, %.0f tokens/s; exposed comm %.3f ms per rank (%.1f%% of the step)\n", mean_ms,
              tokens_per_s, comm_ms, mean_ms > 0 ? 100 * comm_ms / mean_ms : 0.0);
  if (!blocks.empty()) {
    std::printf("per MoE block, predicted, mean per rank, forward + backward (+ the experts' gradient all-reduce "
                "where they are replicated):\n");
    std::printf("%6s  %-15s %12s %12s %12s\n", "block", "strategy", "compute ms", "comm ms", "idle ms");
    for (const BlockSplit& b : blocks)
      std::printf("%6d  %-15s %12.3f %12.3f %12.3f\n", b.block, b.strategy.c_str(), b.compute_s * 1e3, b.comm_s * 1e3,
                  b.idle_s * 1e3);
  }
  std::printf("stored as run %lld \"%s\" in %s (tag predicted)\n", (long long)writer.run().id,
              writer.run().name.c_str(), cfg.store.db.c_str());
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("simulate",
                                 "Predict a training step on a described cluster by replaying every rank's task graph "
                                 "(stored as a predicted run)");
  auto a = std::make_shared<SimulateArgs>();
  cmd->add_option("config", a->config, "TOML config file")->required();
  cmd->add_option("--cluster", a->cluster, "Cluster file (sample_configs/clusters/*.toml); replaces [cluster]");
  cmd->add_option("--steps", a->steps, "Steps to simulate (each with its own routing)")->transform(whole_number(1, kMaxSimulationSteps));
  cmd->add_option("--routing", a->routing, "Synthetic routing (uniform, zipf:S, hot:E,F, ...) or trace:RUN");
  cmd->add_option("--db", a->db, "Run store to write the predicted run into (and read trace: runs from)");
  cmd->add_option("--ranks", a->ranks, "run.ranks (the cluster's devices)")->transform(positive());
  cmd->add_option("--nodes", a->nodes, "Nodes of the cluster (resizes the cluster file's)")->transform(positive());
  cmd->add_option("--host", a->host,
                  "With [emulate]: this machine's cluster file (compute rates; e.g. from moebench calibrate)");
  cmd->add_option("--set", a->sets, "Override a config key (repeatable)");
  cmd->add_flag("--json", a->json, "Print JSON instead of text");
  cmd->callback([&action, a] { action = [a] { return simulate_main(*a); }; });
}

}  // namespace moebench::cli
