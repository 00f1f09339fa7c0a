// moebench bench predictor [--model simulator|fastermoe] [--cluster FILE] [--host FILE | --calibrate]
//                          [--time-scale F] [--steps N] [--quick] [--db PATH] [--json]
// --model fastermoe: per MoE layer instead, FasterMoE's eq. 1-2 and the simulator against
// emulated layers over an imbalance sweep (bench_predictor_fastermoe.cpp). Default, the simulator:
// How well the simulator predicts real runs: a matrix of small MoE-GPT configurations
// (strategies x routings x sizes, 30 in all; --quick: 4) each trained for real on 4 local ranks
// under the link emulator of --cluster (default sample_configs/clusters/janus_4gpu.toml, 2 x 2
// devices) at the time scale F, and each simulated as that emulated run (`simulate` of an
// [emulate] config: the cluster's links stretched by F, computing at --host's calibrated rates,
// default sample_configs/clusters/local.toml). Prints per configuration the measured and the
// predicted ms/step and the error; then MAE, R² and, per group of strategies that differ only
// in strategy, whether the predicted fastest is the measured fastest.
//   measured   mean step_ms of the run without its first 2 steps (warm-up), from its run store
//   predicted  mean of the simulated steps (one per measured step's routing seed)
// The runs go to --db (default: a temporary store, removed afterwards), so the GUI's
// Predicted-vs-measured view can show them (pairs by equal config).
// F defaults to 300: the cluster's links 300x slower than described while this machine
// computes ~3000x slower than an A100, so communication weighs about 10x less than on the
// cluster; "auto" would make every inter-node message take ~75 ms and the matrix hours.

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench.h"
#include "bench_predictor.h"
#include "child_run.h"
#include "stop_signals.h"
#include "store_writable.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/usage_error.h"
#include "moebench/store/run_store.h"
#include "moebench/strategies/fastermoe.h"
#include "moebench/strategies/strategy_descriptor.h"

namespace moebench::cli {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string strategy, label, routing, size;
  std::vector<std::string> extra;  // extra TOML lines under [strategy.<x>]
  int hidden = 64, batch = 16;
  double measured_ms = 0, predicted_ms = 0;
  std::string group() const { return size + " " + routing; }
  double error() const { return (predicted_ms - measured_ms) / measured_ms; }
};

std::vector<Case> matrix(bool quick) {
  // The strategies' candidates marked for this matrix (StrategyDescriptor::candidates), each
  // with the options its set changes written as its section.
  struct Strategy {
    std::string name, label, section;
    bool quick = false;
  };
  std::vector<Strategy> strategies;
  for (const StrategyDescriptor* d : strategy_descriptors())
    if (d->candidates)
      for (const PlannerCandidate& p : d->candidates(Config{}))
        if (p.measured) strategies.push_back({d->spec.name, p.label, candidate_section(*d, p), p.quick});
  const std::vector<std::string> routings = quick ? std::vector<std::string>{"uniform"}
                                                  : std::vector<std::string>{"uniform", "zipf:1.2", "hot:0,0.5"};
  struct Size {
    std::string name;
    int hidden, batch;
  };
  const std::vector<Size> sizes = quick ? std::vector<Size>{{"h64 b16", 64, 16}}
                                        : std::vector<Size>{{"h64 b16", 64, 16}, {"h128 b32", 128, 32}};
  std::vector<Case> out;
  for (const Size& z : sizes)
    for (const std::string& r : routings)
      for (const Strategy& s : strategies) {
        if (quick && !s.quick) continue;
        Case c;
        c.strategy = s.name;
        c.label = s.label;
        c.routing = r;
        c.size = z.name;
        c.hidden = z.hidden;
        c.batch = z.batch;
        if (!s.section.empty()) c.extra.push_back(s.section);
        out.push_back(c);
      }
  return out;
}

std::string config_text(const Case& c, int index, const PredictorOptions& o, const std::string& dir,
                        const std::string& db) {
  std::ostringstream t;
  t << "# bench predictor case " << index << ": " << c.label << ", " << c.routing << ", " << c.size << "\n"
    << "[run]\nname = \"predictor_" << index << "\"\nseed = 1234\nranks = 4\nout_dir = \"" << dir << "/runs\"\n"
    << "[cluster]\nnodes = 2\ndevices_per_node = 2\n"
    << "[emulate]\ncluster = \"" << o.cluster << "\"\ntime_scale = \"" << o.time_scale << "\"\n"
    << "[strategy]\nname = \"" << c.strategy << "\"\n";
  for (const std::string& e : c.extra) t << e;
  t << "[model]\nvocab_size = 64\nseq_len = 32\nhidden = " << c.hidden << "\nlayers = 4\nheads = 4\nffn_mult = 4\n"
    << "[moe]\nmoe_layers = [1, 3]\nexperts = 8\ntop_k = 2\ncapacity_factor = 0.0\nrouting = \"" << c.routing << "\"\n"
    << "[data]\nsource = \"synthetic\"\ncorpus_tokens = 50000\n"
    << "[train]\nbatch_size = " << c.batch << "\nsteps = " << o.steps << "\nwarmup_steps = 1\neval_every = 0\n"
    << "[store]\ndb = \"" << db << "\"\nexperiment = \"bench_predictor\"\n";
  return t.str();
}

double measured_ms(const RunStore& store, const std::string& name) {
  for (const RunInfo& r : store.list_runs("bench_predictor"))
    if (r.name == name) {
      double sum = 0;
      int n = 0;
      for (const MetricPoint& p : store.metrics(r.id, "step_ms"))
        if (p.step > 2) sum += p.value, ++n;
      if (n > 0) return sum / n;
    }
  throw std::runtime_error("bench predictor: run " + name + " recorded no step after its warm-up");
}

}  // namespace

double r_squared(const std::vector<std::pair<double, double>>& mp) {
  double mean = 0;
  for (const auto& [m, p] : mp) mean += m / mp.size();
  double res = 0, tot = 0;
  for (const auto& [m, p] : mp) {
    res += (p - m) * (p - m);
    tot += (m - mean) * (m - mean);
  }
  return tot > 0 ? 1 - res / tot : std::nan("");
}

double mean_abs_error(const std::vector<std::pair<double, double>>& mp) {
  double sum = 0;
  for (const auto& [m, p] : mp) sum += std::abs(p - m) / m / mp.size();
  return sum;
}

PredictorWorkDir::PredictorWorkDir()
    : path_(fs::temp_directory_path() / ("moebench-predictor-" + std::to_string(getpid()))) {
  fs::create_directories(path_);
}

PredictorWorkDir::~PredictorWorkDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

bool predictor_stopped(size_t done, size_t total) {
  if (stop_requests() == 0) return false;
  std::fflush(stdout);
  if (total == 0) std::fprintf(stderr, "moebench: bench predictor stopped by signal before its first case\n");
  else std::fprintf(stderr, "moebench: bench predictor stopped by signal after %zu of %zu cases\n", done, total);
  return true;
}

namespace {

// The emulation every case runs under (--cluster, --time-scale), checked as the cases' configs
// check it, before anything starts: one UsageError naming the flag.
void check_emulation(const PredictorOptions& o) {
  const std::string text = "[run]\nranks = 4\n[cluster]\nnodes = 2\ndevices_per_node = 2\n[emulate]\ncluster = " +
                           toml_string_literal(o.cluster) + "\ntime_scale = " + toml_string_literal(o.time_scale) + "\n";
  try {
    parse_config(text, "bench predictor");
  } catch (const ConfigError& e) {
    std::string message;
    for (const ConfigIssue& issue : e.issues()) {
      if (!message.empty()) message += "\n";
      if (issue.key == "emulate.time_scale")
        message += "bench predictor --time-scale " + o.time_scale + ": " + issue.message;
      else if (issue.key == "emulate.cluster")
        message += "bench predictor --cluster " + o.cluster + ": " + issue.message;
      else
        message += "bench predictor --cluster " + o.cluster + ": " + issue.to_string();
    }
    throw UsageError(message);
  }
}

// A file removed on every way out (the --calibrate host file without --db).
struct RemovedFile {
  fs::path path;
  ~RemovedFile() {
    std::error_code ec;
    if (!path.empty()) fs::remove(path, ec);
  }
};

int bench_predictor(PredictorOptions o) {
  install_stop_counter(SA_RESTART);  // a stop ends it after the case's child, cleaned up
  const bool fastermoe = o.model == kFasterMoeName;
  if (o.model != "simulator" && !fastermoe)
    throw UsageError(std::string("bench predictor --model: expected simulator or ") + kFasterMoeName + ", got \"" +
                     o.model + "\"");
  if (o.cluster.empty())
    o.cluster = fastermoe ? "sample_configs/clusters/fastermoe_johnny_4gpu.toml"
                                       : "sample_configs/clusters/janus_4gpu.toml";
  if (o.calibrate && !o.host.empty())
    throw UsageError("bench predictor: --calibrate measures the host file itself; drop --host " + o.host);
  if (!o.calibrate && o.host.empty()) o.host = "sample_configs/clusters/local.toml";
  for (std::string* f : {&o.cluster, &o.host}) {
    if (f->empty()) continue;  // --calibrate writes it
    if (!fs::exists(*f))
      throw UsageError("bench predictor: cluster file " + *f + " does not exist (the defaults are relative to the "
                       "repository root: run from there, or pass --cluster / --host)");
    *f = fs::absolute(*f).string();
  }
  check_emulation(o);
  if (!o.db.empty()) check_store_writable(o.db, "bench predictor --db");
  // --calibrate: the rates of this machine now (a calibration from another day, or under
  // another load, drifts: the fitted factors are per machine and moment); kept next to the
  // runs' store when --db is given, else removed on the way out.
  RemovedFile calibrated;
  if (o.calibrate) {
    const fs::path host =
        o.db.empty() ? fs::temp_directory_path() / ("moebench-predictor-host-" + std::to_string(getpid()) + ".toml")
                     : fs::absolute(o.db).replace_extension(".host.toml");
    if (o.db.empty()) calibrated.path = host;
    const std::string log = host.string() + ".log";
    const RemovedFile remove_log{log};
    if (!o.json) std::printf("# calibrating this machine into %s (moebench calibrate)\n", host.c_str());
    std::fflush(stdout);
    const int rc = run_logged({self_path(), "calibrate", "--out", host.string(), "--force"}, log);
    if (predictor_stopped(0, 0)) return 130;
    if (rc != 0)
      throw std::runtime_error("bench predictor --calibrate: moebench calibrate failed:\n" + read_text(log));
    o.host = host.string();
  }
  if (fastermoe) return bench_predictor_fastermoe(o);
  const PredictorWorkDir work;
  const fs::path& dir = work.path();
  const bool keep_db = !o.db.empty();
  const std::string db = keep_db ? fs::absolute(o.db).string() : (dir / "predictor.db").string();
  std::vector<Case> cases = matrix(o.quick);
  const std::string self = self_path();
  if (!o.json)
    std::printf("# bench predictor: %zu configs, 4 ranks emulating %s at time scale x%s, simulated with host %s\n",
                cases.size(), o.cluster.c_str(), o.time_scale.c_str(), o.host.c_str());
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& c = cases[i];
    const std::string cfg = (dir / ("case" + std::to_string(i) + ".toml")).string();
    std::ofstream(cfg) << config_text(c, (int)i, o, dir.string(), db);
    const std::string log = (dir / ("case" + std::to_string(i) + ".log")).string();
    const int run_rc = run_logged({self, "run", cfg, "--overwrite"}, log);
    if (predictor_stopped(i, cases.size())) return 130;
    if (run_rc != 0)
      throw std::runtime_error("bench predictor: the emulated run of case " + std::to_string(i) + " failed:\n" +
                               read_text(log));
    const std::string sim = (dir / ("case" + std::to_string(i) + ".json")).string();
    const int sim_rc = run_logged({self, "simulate", cfg, "--host", o.host, "--steps", "3", "--json"}, sim);
    if (predictor_stopped(i, cases.size())) return 130;
    if (sim_rc != 0)
      throw std::runtime_error("bench predictor: simulating case " + std::to_string(i) + " failed:\n" + read_text(sim));
    c.predicted_ms = nlohmann::json::parse(read_text(sim)).at("mean_step_ms").get<double>();
    c.measured_ms = measured_ms(RunStore(db), "predictor_" + std::to_string(i));
    if (!o.json)
      std::printf("%3zu  %-22s %-10s %-9s measured %9.2f ms  predicted %9.2f ms  error %+6.1f%%\n", i, c.label.c_str(),
                  c.routing.c_str(), c.size.c_str(), c.measured_ms, c.predicted_ms, 100 * c.error());
  }
  std::vector<std::pair<double, double>> mp;
  for (const Case& c : cases) mp.push_back({c.measured_ms, c.predicted_ms});
  const double mae = mean_abs_error(mp), r2 = r_squared(mp);
  std::map<std::string, std::pair<const Case*, const Case*>> fastest;  // group -> (measured, predicted)
  for (const Case& c : cases) {
    auto& [m, p] = fastest[c.group()];
    if (!m || c.measured_ms < m->measured_ms) m = &c;
    if (!p || c.predicted_ms < p->predicted_ms) p = &c;
  }
  int right = 0;
  for (const auto& [g, mp] : fastest) right += mp.first == mp.second;
  if (o.json) {
    nlohmann::json j;
    j["cluster"] = o.cluster;
    j["host"] = o.host;
    j["time_scale"] = o.time_scale;
    j["cases"] = nlohmann::json::array();
    for (const Case& c : cases)
      j["cases"].push_back({{"strategy", c.label}, {"routing", c.routing}, {"size", c.size},
                            {"measured_ms", c.measured_ms}, {"predicted_ms", c.predicted_ms}, {"error", c.error()}});
    j["mae"] = mae;
    j["r2"] = r2;
    j["groups"] = fastest.size();
    j["right_winner"] = right;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("MAE %.1f%%, R² %.3f over %zu configs (measured under emulation, predicted by the simulator)\n",
                100 * mae, r2, cases.size());
    for (const auto& [g, mp] : fastest)
      std::printf("  %-20s fastest measured %-22s predicted %-22s %s\n", g.c_str(), mp.first->label.c_str(),
                  mp.second->label.c_str(), mp.first == mp.second ? "right" : "WRONG");
    std::printf("right winner in %d of %zu groups\n", right, fastest.size());
    if (keep_db) std::printf("runs in %s (experiment bench_predictor)\n", db.c_str());
  }
  return 0;
}

}  // namespace

void add_bench_predictor(CLI::App& bench, Action& action) {
  auto* cmd = bench.add_subcommand("predictor", "Simulator (or FasterMoE's model) against emulated runs: errors, MAE, R²");
  auto o = std::make_shared<PredictorOptions>();
  cmd->add_option("--model", o->model,
                  "simulator: whole steps, strategies x routings; fastermoe: MoE layers, eq. 1-2 and the simulator over "
                  "an imbalance sweep");
  cmd->add_option("--cluster", o->cluster,
                  "Emulated cluster, 2 x 2 devices (default sample_configs/clusters/janus_4gpu.toml; "
                  "--model fastermoe: fastermoe_johnny_4gpu.toml)");
  cmd->add_option("--host", o->host,
                  "This machine's cluster file (default sample_configs/clusters/local.toml, from calibrate)");
  cmd->add_option("--time-scale", o->time_scale, "emulate.time_scale of every run (default 300)");
  cmd->add_option("--steps", o->steps, "Steps each run trains (the first 2 are warm-up)")->transform(whole_number(4, 1000));
  cmd->add_option("--db", o->db, "Keep the runs in this store (default: a temporary one)");
  cmd->add_flag("--calibrate", o->calibrate,
                "Calibrate this machine first and predict with that file (kept as DB.host.toml with --db)");
  cmd->add_flag("--quick", o->quick, "4 configurations instead of 30");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([&action, o] { action = [o] { return bench_predictor(*o); }; });
}

}  // namespace moebench::cli
