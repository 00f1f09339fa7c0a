#pragma once
// PredictedRunWriter: a simulated run in the run store, beside the measured ones, so every CLI
// verb and GUI view works on it. The run row says what it is: tag predicted = "simulator",
// tags cluster, cluster_file, routing and, replaying a measured run's routing, trace_run (that
// run's uuid); its name ends in "(predicted)".
// Per simulated step (1-based) one transaction (RunStore::log_step):
//   metrics  step_ms (the slowest rank's end), tokens_per_s (global batch tokens / step),
//            comm_ms (mean per rank of the time comm tasks run while the rank computes
//            nothing), bytes_intra, bytes_inter (all ranks' bytes by link class)
//   spans    every task of every rank as the executor would record it, plus the host phases
//            the run summary reads: "step" (0 to the rank's end), "forward" (to the end of
//            head.forward) and "backward" (head.backward to the optimizer; the optimizer
//            task's own span is the third phase, as in runs of the trainer)
//   traffic  every rank's bytes to each peer (the graphs' costs) by link class of the cluster
// No loss: a simulation computes no math. The run ends FINISHED on finish(), FAILED when the
// writer is destroyed before (a simulation that threw half-way).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/store/run_store.h"
#include "moebench/plan/step_simulation.h"

namespace moebench {

class PredictedRunWriter {
 public:
  PredictedRunWriter(RunStore& store, const Config& cfg, const ClusterModel& cluster,
                     const std::vector<std::pair<std::string, std::string>>& tags);
  ~PredictedRunWriter();
  PredictedRunWriter(const PredictedRunWriter&) = delete;
  PredictedRunWriter& operator=(const PredictedRunWriter&) = delete;

  void add_step(int64_t step, const StepSimulation& sim);
  void finish();
  const RunInfo& run() const { return run_; }

 private:
  RunStore& store_;
  const Config& cfg_;
  ClusterModel cluster_;
  RunInfo run_;
  bool finished_ = false;
};

}  // namespace moebench
