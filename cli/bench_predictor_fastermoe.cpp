// moebench bench predictor --model fastermoe: FasterMoE's predictor (§5.3, Fig. 9) on this
// machine. An imbalance sweep (routings uniform, zipf 0.5-2, hot experts; --quick: 3) of a small
// MoE-GPT with `fastermoe` (no switch on: the plain expert-parallel exchange FasterMoE models)
// trains on 4 local ranks under the link emulator of --cluster (default
// sample_configs/clusters/fastermoe_johnny_4gpu.toml) at --time-scale. Per run and MoE layer:
//   measured    Lat_e2e of the layer: ddl_roofline_points' definition (perf/ddl_roofline.h), the
//               union of the layer's compute and comm spans per rank, the slowest rank, the mean
//               over the steps after the warm-up step
//   simulator   the same definition on `moebench simulate` of the run's config replaying the run's
//               recorded routing (--routing trace:RUN), on the emulated cluster with --host's
//               rates (as a predicted run beside it)
//   eq. 1-2     3 Lat_comp + 4 Lat_comm (§3.3's synchronous estimate: forward and two backward
//               GEMM rounds, four all-to-alls) per step from the run's routing rows: eq. 1 on
//               the per-worker loads, eq. 2 on the all-to-all's per-link traffic, on the same
//               emulated cluster; the mean over the same steps
// Then R² and MAE of both predictors over all (run, layer) pairs. eq. 1-2 leave out what the
// paper neglects (message latency, the router and combine, the counts exchange), so they sit
// below the measurement where those weigh; the simulator replays every task.

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "bench_predictor.h"
#include "child_run.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/cluster_file.h"
#include "moebench/perf/cluster_network.h"
#include "moebench/perf/ddl_roofline.h"
#include "moebench/perf/ddl_prediction.h"
#include "moebench/store/run_store.h"
#include "moebench/strategies/fastermoe.h"
#include "moebench/train/emulation.h"

namespace moebench::cli {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string routing, size;
  int hidden = 64, batch = 16;
};

struct LayerResult {
  std::string routing, size;
  int layer = 0;
  double measured_ms = 0, simulated_ms = 0, model_ms = 0;
};

std::vector<Case> sweep(bool quick) {
  const std::vector<std::string> routings =
      quick ? std::vector<std::string>{"uniform", "zipf:1.5", "hot:0,0.8"}
            : std::vector<std::string>{"uniform", "zipf:0.5", "zipf:1", "zipf:1.5", "zipf:2", "hot:0,0.5", "hot:0,0.8"};
  std::vector<Case> out;
  for (const auto& [size, hidden, batch] :
       quick ? std::vector<std::tuple<std::string, int, int>>{{"h64 b16", 64, 16}}
             : std::vector<std::tuple<std::string, int, int>>{{"h64 b16", 64, 16}, {"h128 b32", 128, 32}})
    for (const std::string& r : routings) out.push_back({r, size, hidden, batch});
  return out;
}

std::string config_text(const Case& c, int index, const PredictorOptions& o, const std::string& dir,
                        const std::string& db) {
  std::ostringstream t;
  t << "# bench predictor --model fastermoe case " << index << ": " << c.routing << ", " << c.size << "\n"
    << "[run]\nname = \"fastermoe_predictor_" << index << "\"\nseed = 1234\nranks = 4\nout_dir = \"" << dir
    << "/runs\"\n[cluster]\nnodes = 2\ndevices_per_node = 2\n"
    << "[emulate]\ncluster = \"" << o.cluster << "\"\ntime_scale = \"" << o.time_scale << "\"\n"
    << "[strategy]\nname = \"fastermoe\"\n"
    << "[model]\nvocab_size = 64\nseq_len = 32\nhidden = " << c.hidden << "\nlayers = 4\nheads = 4\nffn_mult = 4\n"
    << "[moe]\nmoe_layers = [1, 3]\nexperts = 8\ntop_k = 2\ncapacity_factor = 0.0\nrouting = \"" << c.routing << "\"\n"
    << "[data]\nsource = \"synthetic\"\ncorpus_tokens = 50000\n"
    << "[train]\nbatch_size = " << c.batch << "\nsteps = " << o.steps << "\nwarmup_steps = 1\neval_every = 0\n"
    << "[store]\ndb = \"" << db << "\"\nexperiment = \"bench_predictor_fastermoe\"\n";
  return t.str();
}

// layer -> mean Lat_e2e (ms) of the run's points.
std::map<int, double> layer_e2e_ms(const RunStore& store, const RunInfo& run) {
  std::map<int, double> out;
  for (const DdlPoint& p : ddl_roofline_points(store, run))
    if (p.layer >= 0 && p.has_point()) out[p.layer] = p.lat_e2e_s * 1e3;
  return out;
}

// layer -> 3 Lat_comp + 4 Lat_comm (ms), eq. 1-2 per step of the run's routing
// (perf/ddl_prediction.h ddl_predict_step on the emulated cluster), the mean over the steps after
// the first.
std::map<int, double> model_e2e_ms(const RunStore& store, const RunInfo& run, const Config& cfg,
                                   const ClusterModel& cluster) {
  const int P = cfg.run.ranks, E = cfg.moe.experts.front();
  const double H = cfg.model.hidden, F = (double)cfg.model.ffn_mult * cfg.model.hidden;
  std::map<std::pair<int, int64_t>, std::vector<double>> T;  // (layer, step) -> [P*E] tokens
  for (const RoutingRow& r : store.routing(run.id)) {
    if (r.step <= 1) continue;  // the warm-up step, as the measured side leaves it out
    auto& t = T[{r.layer, r.step}];
    t.resize((size_t)P * E);
    t[(size_t)r.source_rank * E + r.expert] += (double)r.tokens;
  }
  const ClusterNetwork net(cluster);
  std::map<int, std::pair<double, int>> sum;  // layer -> (sum of ms, steps)
  for (const auto& [key, t] : T) {
    const DdlStepPrediction s = ddl_predict_step(t, P, E, P, H, F, cluster, net);
    sum[key.first].first += (3 * s.comp_s + 4 * s.comm_s) * 1e3;
    sum[key.first].second += 1;
  }
  std::map<int, double> out;
  for (const auto& [layer, s] : sum) out[layer] = s.first / s.second;
  return out;
}

}  // namespace

int bench_predictor_fastermoe(const PredictorOptions& o) {
  const PredictorWorkDir work;
  const fs::path& dir = work.path();
  const bool keep_db = !o.db.empty();
  const std::string db = keep_db ? fs::absolute(o.db).string() : (dir / "predictor.db").string();
  const std::vector<Case> cases = sweep(o.quick);
  const std::string self = self_path();
  if (!o.json)
    std::printf("# bench predictor --model fastermoe: %zu runs, 4 ranks emulating %s at time scale x%s, "
                "predicted with host %s; per MoE layer, Lat_e2e ms (forward + backward)\n",
                cases.size(), o.cluster.c_str(), o.time_scale.c_str(), o.host.c_str());
  std::vector<LayerResult> results;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::string cfg_path = (dir / ("case" + std::to_string(i) + ".toml")).string();
    std::ofstream(cfg_path) << config_text(c, (int)i, o, dir.string(), db);
    const std::string log = (dir / ("case" + std::to_string(i) + ".log")).string();
    const std::string name = "fastermoe_predictor_" + std::to_string(i);
    const int run_rc = run_logged({self, "run", cfg_path, "--overwrite"}, log);
    if (predictor_stopped(i, cases.size())) return 130;
    if (run_rc != 0)
      throw std::runtime_error("bench predictor: the emulated run of case " + std::to_string(i) + " failed:\n" +
                               read_text(log));
    const std::string sim = (dir / ("case" + std::to_string(i) + ".json")).string();
    const int sim_rc = run_logged({self, "simulate", cfg_path, "--host", o.host, "--routing", "trace:" + name,
                                   "--steps", std::to_string(o.steps), "--json"},
                                  sim);
    if (predictor_stopped(i, cases.size())) return 130;
    if (sim_rc != 0)
      throw std::runtime_error("bench predictor: simulating case " + std::to_string(i) + " failed:\n" + read_text(sim));
    const int64_t sim_id = nlohmann::json::parse(read_text(sim)).at("run").at("id").get<int64_t>();
    const Config cfg = load_config(cfg_path, {});
    const ClusterModel cluster =
        emulated_run_cluster(cfg, ClusterModel(cluster_spec(load_cluster_file(o.host), cfg.run.ranks)));
    RunStore store(db, RunStore::Mode::read_only);
    const RunInfo measured = store.find_run(name), simulated = store.find_run(std::to_string(sim_id));
    const std::map<int, double> m = layer_e2e_ms(store, measured), s = layer_e2e_ms(store, simulated),
                                e = model_e2e_ms(store, measured, cfg, cluster);
    for (const auto& [layer, ms] : m) {
      if (!s.count(layer) || !e.count(layer)) continue;
      results.push_back({c.routing, c.size, layer, ms, s.at(layer), e.at(layer)});
      const LayerResult& r = results.back();
      if (!o.json)
        std::printf("%3zu  %-10s %-9s layer %d  measured %9.2f  simulator %9.2f (%+6.1f%%)  eq. 1-2 %9.2f (%+6.1f%%)\n",
                    i, c.routing.c_str(), c.size.c_str(), layer, r.measured_ms, r.simulated_ms,
                    100 * (r.simulated_ms / r.measured_ms - 1), r.model_ms, 100 * (r.model_ms / r.measured_ms - 1));
    }
  }
  std::vector<std::pair<double, double>> sim_pairs, model_pairs;
  for (const LayerResult& r : results) {
    sim_pairs.push_back({r.measured_ms, r.simulated_ms});
    model_pairs.push_back({r.measured_ms, r.model_ms});
  }
  if (o.json) {
    nlohmann::json j;
    j["model"] = kFasterMoeName;
    j["cluster"] = o.cluster;
    j["host"] = o.host;
    j["time_scale"] = o.time_scale;
    j["layers"] = nlohmann::json::array();
    for (const LayerResult& r : results)
      j["layers"].push_back({{"routing", r.routing}, {"size", r.size}, {"layer", r.layer},
                             {"measured_ms", r.measured_ms}, {"simulator_ms", r.simulated_ms}, {"model_ms", r.model_ms}});
    j["simulator"] = {{"r2", r_squared(sim_pairs)}, {"mae", mean_abs_error(sim_pairs)}};
    j["model_eq_1_2"] = {{"r2", r_squared(model_pairs)}, {"mae", mean_abs_error(model_pairs)}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("simulator: R² %.3f, MAE %.1f%% over %zu layers (predicted against measured under emulation)\n",
                r_squared(sim_pairs), 100 * mean_abs_error(sim_pairs), results.size());
    std::printf("eq. 1-2:   R² %.3f, MAE %.1f%% (FasterMoE's closed form, 3 Lat_comp + 4 Lat_comm)\n",
                r_squared(model_pairs), 100 * mean_abs_error(model_pairs));
    if (keep_db) std::printf("runs in %s (experiment bench_predictor_fastermoe)\n", db.c_str());
  }
  return 0;
}

}  // namespace moebench::cli
