#pragma once
// The DDL-roofline of FasterMoE (He et al., PPoPP '22, §3.3, Fig. 5) from MEASURED runs: one
// point per MoE layer and one for the whole run, at x = R_CC (compute/communication latency
// ratio, eq. 3), y = achieved average compute throughput P-bar (eq. 4); and the paper's ideal
// (eq. 5) and semi-ideal (eq. 6) curves for a peak per-worker rate P_w.
//
// Measured definitions, for run r and MoE layer L (the `layer` column of spans and routing):
//   The layer's spans on rank w in a step:
//     compute spans = stream "compute", category "compute", layer L, moe_block_task (the
//                     router, the expert FFN forward and backward, the combine, ...)
//     comm spans    = category "comm", layer L, moe_block_task (counts, dispatch, combine,
//                     ...: not the dense gradient buckets labelled with the layer), not on
//                     stream "host" (the main thread's waits and issues) except
//                     "expert.allreduce": the sum of the layer's expert gradients over their
//                     replicas (parallel.ep < the data-parallel ranks; FasterMoE's DP, ep = 1,
//                     has no other), once per step after the backward (Distributed::
//                     finish_gradients, the step graph's task of that name, both with the
//                     block as layer)
//   comp_w = sum of the durations of its compute spans; comm_w = sum of its comm spans;
//   e2e_w  = length of the union of the time intervals of all those spans (all streams; the
//            expert all-reduce after the backward overlaps nothing of the layer, so it adds
//            its whole length).
//   Per step: Lat_comp = max_w comp_w (eq. 1 takes the slowest worker), Lat_comm = max_w comm_w,
//   Lat_e2e = max_w e2e_w, over the ranks that have spans of L in that step.
//   Steps used: the steps with spans of L and either recorded FLOPs on its compute spans or
//   routing rows of L, leaving out the warm-up step
//   (the first step with any span, when more than 2 steps have spans: summarize_run's rule).
//   lat_comp_s, lat_comm_s, lat_e2e_s = the means of the per-step values over the steps used.
//   flops_per_step = mean over the steps used of the step's FLOPs: the sum of the recorded flops
//     of its compute spans over all ranks (the tasks' costs, spans.flops since store schema 3)
//     where any is recorded; else 12 * a * H^2 * sum_w B_w (eq. 4's numerator:
//     3 rounds (forward, 2x backward) of 2 GEMMs of 2 flops per FMA; H = model.hidden,
//     a * H = model.ffn_mult * H the expert's inner width; sum_w B_w = the token-expert
//     assignments of L in the step = the sum of all its routing rows, all source ranks and
//     experts, each top-k copy counted).
//   r_cc            = lat_comp_s / lat_comm_s                                   (eq. 3)
//   achieved_gflops = flops_per_step / (N * lat_e2e_s) / 1e9, N = the run's ranks (eq. 4)
//   (ratios of the step means, not means of per-step ratios).
// Whole-run point (layer -1): the sums over the MoE layers of lat_comp_s, lat_comm_s, lat_e2e_s
//   and flops_per_step, then r_cc and achieved_gflops from those sums as above; given only when
//   every MoE layer has a point. steps_used = the fewest steps any layer used.
// Curves (P_w = peak GFLOP/s per worker):
//   ideal      P-bar = P_w * min(1, R)        (eq. 5, the upper bound with full overlap)
//   semi-ideal P-bar = P_w * R / (R + 1)      (eq. 6, compute and comm run one after the other)
// P_w is the run's param "peak_gflops" (copied by `moebench run` from `moebench bench gemm`,
// see gemm_rate_record.h; param "peak_gflops_source" says where it came from) or a value the
// user enters.
// Missing data gives a DdlPoint without a point (has_point() false) and a reason.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "moebench/store/run_store.h"

namespace moebench {

struct DdlPoint {
  int64_t run_id = 0;
  std::string run_name;
  int layer = -1;  // MoE layer (block index), -1 = the whole run
  double lat_comp_s = std::numeric_limits<double>::quiet_NaN();
  double lat_comm_s = std::numeric_limits<double>::quiet_NaN();
  double lat_e2e_s = std::numeric_limits<double>::quiet_NaN();
  double flops_per_step = std::numeric_limits<double>::quiet_NaN();
  double r_cc = std::numeric_limits<double>::quiet_NaN();
  double achieved_gflops = std::numeric_limits<double>::quiet_NaN();
  int64_t steps_used = 0;
  bool warmup_excluded = false;
  std::string reason;  // why there is no point; empty when there is one

  bool has_point() const { return reason.empty(); }
};

// Whether a task (span) carrying a MoE block's index belongs to the block: its passes and its
// experts' gradient all-reduce over their replicas ("expert.allreduce"), not the block's
// attention or FFN, its TP all-reduces, pipeline transfers, dense gradient buckets ("grad.",
// those carry the index too) or its dense weights' all-gather and its wait (storage.dense =
// "zero3": "dense.", storage/dense_shards.h). The layer's spans above, and the simulator's per-block split
// (plan/step_simulation.h: the expert all-reduce counts there as the block's exposed comm,
// so the block's time is what the block costs the step, as on the roofline).
bool moe_block_task(const std::string& name);

// One entry per MoE layer (ascending; the layers named by spans, routing or the config's
// moe.moe_layers), then the whole-run entry (layer -1). A run without any span gives only the
// whole-run entry, without a point. Throws StoreError for an unknown run.
std::vector<DdlPoint> ddl_roofline_points(const RunStore& store, const RunInfo& run);

double ddl_ideal_gflops(double r_cc, double peak_gflops);       // eq. 5
double ddl_semi_ideal_gflops(double r_cc, double peak_gflops);  // eq. 6

// The run's stored peak, param "peak_gflops" (GFLOP/s per worker), or nullopt when it has none.
// Throws std::invalid_argument naming the run and the value when it is not a positive finite
// number ("run 'ec' (id 1): param peak_gflops = 'fast' is not a positive number of GFLOP/s").
std::optional<double> ddl_stored_peak_gflops(const RunStore& store, const RunInfo& run);
// The same check on a value already read.
double ddl_parse_peak_gflops(const std::string& value, const RunInfo& run);
// Param "peak_gflops_source", or "" when the run has none.
std::string ddl_stored_peak_source(const RunStore& store, const RunInfo& run);

}  // namespace moebench
