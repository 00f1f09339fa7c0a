#include "calibrate_reference.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "child_run.h"
#include "moebench/perf/calibration.h"
#include "moebench/store/run_store.h"
#include "moebench/strategies/strategy_descriptor.h"

namespace moebench::cli {
namespace {

namespace fs = std::filesystem;

// The reference cluster: two nodes of ranks/2 devices (one node for fewer than 4 ranks) with
// links slow enough that communication and its per-task costs weigh as in an emulated run.
// Not a sample cluster, and not `bench predictor`'s: the fit must not be tuned to its matrix.
std::string reference_cluster(int ranks) {
  const int nodes = ranks >= 4 && ranks % 2 == 0 ? 2 : 1;
  return "# calibrate's reference cluster (cli/calibrate_reference.cpp)\n[cluster]\nname = \"calibrate_reference\"\n"
         "nodes = " + std::to_string(nodes) + "\ndevices_per_node = " + std::to_string(ranks / nodes) +
         "\ndevice_tflops = 1.0\ncopy_bw_gbs = 2.0\nintra_bw_gbs = 2.0\nintra_latency_us = 300\n"
         "inter_bw_gbs = 0.2\ninter_latency_us = 1000\n";
}

// Sizes beside bench predictor's (hidden 64 / 128, 4 or 8 sequences per rank), spanning the
// models a CPU trains: hidden 80, 112 and 144 with 5, 7 and 9 sequences per rank.
struct ReferenceSize {
  int hidden, per_rank;
};
constexpr ReferenceSize kSizes[] = {{80, 5}, {112, 7}, {144, 9}};

std::string reference_config(const std::string& name, const std::string& strategy, const std::string& section,
                             ReferenceSize size, const std::string& dir, int ranks, int steps) {
  const int nodes = ranks >= 4 && ranks % 2 == 0 ? 2 : 1;
  std::string t = "[run]\nname = \"" + name + "\"\nseed = 77\nranks = " + std::to_string(ranks) + "\nout_dir = \"" +
                  dir + "/runs\"\n[cluster]\nnodes = " + std::to_string(nodes) + "\n[emulate]\ncluster = \"" + dir +
                  "/reference_cluster.toml\"\ntime_scale = \"1\"\n[strategy]\nname = \"" + strategy + "\"\n";
  t += section;
  t += "[model]\nvocab_size = 64\nseq_len = 32\nhidden = " + std::to_string(size.hidden) +
       "\nlayers = 4\nheads = 4\nffn_mult = 4\n[moe]\nmoe_layers = [1, 3]\nexperts = " + std::to_string(2 * ranks) +
       "\ntop_k = 2\ncapacity_factor = 0.0\nrouting = \"uniform\"\n"
       "[data]\nsource = \"synthetic\"\ncorpus_tokens = 50000\n[train]\nbatch_size = " + std::to_string(size.per_rank * ranks) +
       "\nsteps = " + std::to_string(steps) + "\nwarmup_steps = 1\neval_every = 0\n"
       "[store]\ndb = \"" + dir + "/reference.db\"\nexperiment = \"calibrate_reference\"\n";
  return t;
}

std::vector<TaskTime> task_times(const RunStore& store, int64_t run, int64_t first_step, int reference) {
  std::vector<TaskTime> out;
  for (const SpanRow& s : store.spans(run, first_step))
    out.push_back({reference, s.name, s.category == "comm", s.stream == "host", s.duration, (double)s.bytes});
  return out;
}

}  // namespace

void fit_reference_runs(const std::string& host_file, int ranks, bool quick) {
  const fs::path dir = fs::temp_directory_path() / ("moebench-calibrate-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "reference_cluster.toml") << reference_cluster(ranks);
  const int steps = quick ? 4 : 10;
  const std::string self = self_path(), host = fs::absolute(host_file).string();
  std::vector<TaskTime> measured, predicted;
  struct Reference {
    std::string name, strategy, section;
    ReferenceSize size;
  };
  // The strategies' candidates marked for calibration (StrategyDescriptor::candidates).
  std::vector<Reference> references;
  std::string labels;
  for (const ReferenceSize& size : kSizes) {
    if (quick && size.hidden != kSizes[0].hidden) continue;  // --quick: the smaller size only
    for (const StrategyDescriptor* d : strategy_descriptors())
      if (d->candidates)
        for (const PlannerCandidate& p : d->candidates(Config{}))
          if (p.calibration) {
            references.push_back({"reference_" + d->spec.name + "_h" + std::to_string(size.hidden), d->spec.name,
                                  candidate_section(*d, p), size});
            if (size.hidden == kSizes[0].hidden) labels += (labels.empty() ? "" : " and ") + p.label;
          }
  }
  for (int i = 0; i < (int)references.size(); ++i) {
    const Reference& r = references[(size_t)i];
    const std::string cfg = (dir / (r.name + ".toml")).string(), log = (dir / (r.name + ".log")).string();
    std::ofstream(cfg) << reference_config(r.name, r.strategy, r.section, r.size, dir.string(), ranks, steps);
    if (run_logged({self, "run", cfg, "--overwrite"}, log) != 0)
      throw std::runtime_error("calibrate: the reference run " + r.name + " failed:\n" + read_text(log));
    if (run_logged({self, "simulate", cfg, "--host", host, "--steps", "3", "--db", (dir / "reference.db").string()},
                   log) != 0)
      throw std::runtime_error("calibrate: simulating the reference run " + r.name + " failed:\n" + read_text(log));
    const RunStore store((dir / "reference.db").string());
    const std::vector<TaskTime> m = task_times(store, store.find_run(r.name).id, 3, i);  // after 2 warm-up steps
    const std::vector<TaskTime> p = task_times(store, store.find_run(r.name + " (predicted)").id, 0, i);
    measured.insert(measured.end(), m.begin(), m.end());
    predicted.insert(predicted.end(), p.begin(), p.end());
  }
  const HostTaskFit fit = fit_host_tasks(measured, predicted);
  std::string hiddens;
  for (const ReferenceSize& size : kSizes)
    if (!quick || size.hidden == kSizes[0].hidden) hiddens += (hiddens.empty() ? "" : ", ") + std::to_string(size.hidden);
  const std::string reference = labels + ", hidden " + hiddens + "; " + std::to_string(ranks) +
                                " ranks, " + std::to_string(steps) + " steps, emulating a 2-node reference cluster";
  const std::string text = read_text(host_file) + host_task_fit_lines(fit, reference);
  const std::string tmp = host_file + ".fit" + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f.flush()) throw std::runtime_error("calibrate: cannot write " + tmp);
  }
  fs::rename(tmp, host_file);
  fs::remove_all(dir);
  std::printf("  reference   %s:\n              comm tasks +%.0f us +%.0f us/MB;", reference.c_str(),
              fit.comm_overhead * 1e6, fit.comm_seconds_per_byte * 1e12);
  for (const TaskCostFit& c : fit.task_costs) std::printf(" %s %.0fus+x%.2f", c.name.c_str(), c.overhead * 1e6, c.factor);
  std::printf("\nrewrote %s with the fit\n", host_file.c_str());
}

}  // namespace moebench::cli
