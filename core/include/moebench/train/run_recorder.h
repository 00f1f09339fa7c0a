#pragma once
// RunRecorder: writes a training run into the run store (rank 0 only): the run row (RUNNING
// until finish()), the flattened config as params, and per step one transaction with the
// metrics, the spans of every rank (on span-sampled steps), traffic by rank/peer/link class
// and the routing (kept tokens per MoE block, source rank and expert). The strategies' decisions
// (MoeStrategy::decisions: monta's level and chunks) become metrics "<key>/block<b>", e.g.
// "monta.level/block1" = 2 for O2.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/dist/topology.h"
#include "moebench/store/run_store.h"
#include "moebench/train/trainer.h"

namespace moebench {

// The git revision this binary was built from ("unknown" outside a git checkout).
const char* build_git_revision();

// The run's params: "model.hidden" -> "128" for every key of the resolved config.
std::vector<std::pair<std::string, std::string>> config_params(const Config& cfg);

class RunRecorder {
 public:
  // Records the run (RUNNING) with its config; its topology follows with on_setup.
  // uuid: the run's uuid when a launcher chose it in advance ("" = a new one).
  RunRecorder(const Config& cfg, int ranks, const std::string& uuid = "");
  ~RunRecorder();

  // Once the ranks are set up (the trainer built): the topology (nullptr for a single rank), and
  // the peak compute rate the
  // run's DDL-roofline is drawn against, at the BLAS threads this rank now runs with. A run is
  // recorded before (one stopped or killed while its ranks connect, e.g. over slow emulated
  // links, is in the store all the same).
  void on_setup(const std::string& topology_text, const Topology* topology);
  void on_step(const StepStats& s);
  void on_eval(const EvalStats& e);
  // With a reason (a FAILED run: what stopped it), the tag "failure" holds it (runs show).
  void finish(RunStatus status, const std::string& reason = "");
  const RunInfo& run() const { return run_; }
  RunStore& store() { return *store_; }
  // The peak on_setup recorded (GFLOP/s of one rank), if this host has a measured rate.
  std::optional<double> peak_gflops() const { return peak_gflops_; }

 private:
  std::unique_ptr<RunStore> store_;
  RunInfo run_;
  const Topology* topology_ = nullptr;
  bool finished_ = false;
  bool on_cpu_ = true;  // run.device = "cpu": the host's recorded sgemm rate is the run's peak
  std::optional<double> peak_gflops_;
};

}  // namespace moebench
