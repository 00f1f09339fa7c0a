#pragma once
// summarize_run: the numbers people compare runs by, computed from what the recorder stored
// (metrics, spans, traffic, routing), plus a human text form and a JSON form.
//
// Definitions (every mean is over the steps counted, see `warmup_excluded`):
// - steps: distinct steps with a "loss" metric (training steps; evals may be logged at other
//   step numbers), or with any metric when the run logs no loss; last_metrics: each key's
//   value at its last step.
// - mean_step_ms / mean_tokens_per_s: mean of the "step_ms" / "tokens_per_s" metrics; the first
//   step is a warm-up and left out when more than 2 steps were recorded.
// - phases, per (step, rank) from the spans, then averaged over steps and ranks:
//     step    = duration of the stream "host" span "step"
//     comm    = exposed communication: the union of the category "comm" spans minus the time
//               the compute stream computed (its category "compute" spans; in runs recorded
//               before the task-graph runtime, minus the stream "compute.comm" spans in which
//               the compute thread was blocked on communication)
//     compute = sum of the phases "forward", "backward", "optimizer" (stream host; compute in
//               older runs) minus the exposed comm inside them
//     idle    = step - compute - comm
//   comm_share = comm / step (of the averages).
//     bubble  = the waits for a neighbouring pipeline stage: summed receives, the stream "host"
//               spans "pp.forward" and "pp.backward" ("pp.recv_forward" / "pp.recv_backward" in
//               older runs; train/rank_step.h; part of comm above); bubble_share =
//               bubble / step, 0 without pipeline stages.
//   The same warm-up rule applies: the first step
//   with spans is left out when more than 2 steps have spans. Only (step, rank) pairs with a
//   "step" span count.
//   Per MoE layer L (layer_phases), over the same (step, rank) pairs: compute = the stream
//   "compute" category "compute" spans with layer L, comm = the category "comm" spans with
//   layer L (summed durations: overlapped exchanges count in full; the block's exchanges, the
//   gradient buckets labelled with it and its experts' all-reduce over their replicas,
//   expert.allreduce).
// - traffic: bytes of all ranks by link class, totals over the run; per step = total / steps
//   (steps = max(recorded steps, distinct steps with traffic rows)).
// - expert load per MoE layer: tokens per expert summed over steps and source ranks;
//   imbalance = max over experts / mean over experts. The expert count comes from the run's
//   config (moe.moe_layers / moe.experts) when it names the layer, else the highest expert
//   index seen + 1, so experts that got no token count as zeros.
// Missing quantities are NaN in the struct and null in JSON.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "moebench/store/run_store.h"

namespace moebench {

struct PhaseSplit {
  double step_s = 0, compute_s = 0, comm_s = 0, idle_s = 0;
  double bubble_s = 0;  // waits for a neighbouring pipeline stage (within comm_s)
  double comm_share = std::numeric_limits<double>::quiet_NaN();    // comm_s / step_s
  double bubble_share = std::numeric_limits<double>::quiet_NaN();  // bubble_s / step_s
  int64_t samples = 0;  // (step, rank) pairs averaged
};

struct LayerPhase {
  int layer = 0;  // block index
  double compute_s = 0, comm_s = 0;  // mean per (step, rank)
};

struct LayerLoad {
  int layer = 0;            // block index
  int experts = 0;
  int64_t total_tokens = 0;
  int64_t max_tokens = 0;   // of the busiest expert
  int busiest_expert = -1;
  double mean_tokens = 0;   // total / experts
  double imbalance = std::numeric_limits<double>::quiet_NaN();  // max / mean
  std::vector<int64_t> tokens;  // per expert
};

struct RunSummary {
  RunInfo run;
  // A run written by the simulator (tag "predicted"): every number is predicted, none measured.
  bool predicted = false;
  std::string predicted_cluster;  // its tag "cluster"
  // A run trained under the link emulator (tag "emulated"): times measured with every message
  // paced over the links of emulated_cluster, stretched by emulated_time_scale.
  bool emulated = false;
  std::string emulated_cluster, emulated_time_scale;  // tags emulated.cluster, emulated.time_scale
  int64_t steps = 0;                 // distinct steps with a "loss" (else any) metric
  int64_t first_step = -1, last_step = -1;
  std::map<std::string, double> last_metrics;  // key -> value at its last step
  double mean_step_ms = std::numeric_limits<double>::quiet_NaN();
  double mean_tokens_per_s = std::numeric_limits<double>::quiet_NaN();
  bool warmup_excluded = false;      // the first step was left out of the metric means

  bool has_phases = false;           // spans with "step" spans were recorded
  PhaseSplit phases;                 // averaged over ranks and steps
  std::vector<PhaseSplit> rank_phases;  // index = rank, averaged over steps
  std::vector<LayerPhase> layer_phases; // by layer, averaged like phases
  bool phase_warmup_excluded = false;
  int64_t span_steps = 0;            // distinct steps with spans

  int64_t bytes_intra = 0, bytes_inter = 0;  // totals over the run, all ranks
  double bytes_intra_per_step = 0, bytes_inter_per_step = 0;

  // MoESys's SSD tier (storage.sparse = "ssd"; metrics sparse_*): over every step but the first
  // (it loads every record), all ranks.
  bool has_sparse = false;
  double sparse_hit_rate = std::numeric_limits<double>::quiet_NaN();  // hits / (hits + misses)
  double sparse_read_per_step = 0, sparse_written_per_step = 0;  // bytes
  double sparse_stall_ms = 0, sparse_update_ms = 0;            // per step

  std::vector<LayerLoad> expert_load;  // by layer
  double max_imbalance = std::numeric_limits<double>::quiet_NaN();  // over layers

  // The last value of `key`, or NaN when the run has none.
  double last(const std::string& key) const;
};

RunSummary summarize_run(const RunStore& store, const RunInfo& run);
// RunSummary::steps without the rest of the summary (reads only the run's metrics).
int64_t recorded_steps(const RunStore& store, int64_t run);
// Expert count per MoE block (block index -> experts) from a run's canonical config JSON
// (moe.moe_layers with moe.experts, a number or one per listed block); empty when the JSON is
// unreadable or has no moe.moe_layers. The count summarize_run's expert load uses.
std::map<int, int> moe_experts_per_layer(const std::string& config_json);
// Multi-line text: steps, final metrics, speed, time split, traffic, expert load.
std::string format_summary(const RunSummary& summary);
// {"run": {...}, "steps", "first_step", "last_step", "last_metrics": {...}, "mean_step_ms",
//  "mean_tokens_per_s", "warmup_excluded", "phases": {step_s, compute_s, comm_s, idle_s,
//  comm_share, samples, per_rank: [...], layers: [{layer, compute_s, comm_s}]} | null,
//  "traffic": {...}, "expert_load": [...],
//  "max_imbalance"}; NaN -> null.
nlohmann::json summary_json(const RunSummary& summary);
// The run's row as JSON (shared by `runs list/show --json` and summary_json).
nlohmann::json run_info_json(const RunInfo& run);

}  // namespace moebench
