#pragma once
// PREDICTED DDL-roofline points of a stored run (FasterMoE, He et al., PPoPP '22, §3.3, Fig. 5;
// eq. 1-4), beside the measured ones of ddl_roofline.h: one per MoE layer and one for the whole
// run, at x = R_CC and y = P-bar as FasterMoE's performance model predicts them for the run's
// routing on the run's cluster model. Every number here is "predicted"; nothing is measured.
//
// Per step s and MoE layer L (the `layer` of routing rows and the block of the metrics):
//   Lat_comp(s), Lat_comm(s), from one of two sources:
//   (a) stored: the metrics "fastermoe.predicted_comp_ms/block<L>" and
//       "fastermoe.predicted_comm_ms/block<L>" of step s, when the run (strategy fastermoe) has
//       both: eq. 1 on the loads of that step's forward after shadowing, and eq. 2 on one
//       all-to-all of the forward dispatch plus the shadows' broadcasts (strategies/fastermoe.cpp).
//       They are the last micro-batch's forward: with parallel.microbatches = m > 1 both are
//       multiplied by m (the routing rows below count all m micro-batches of the step).
//       Several values of a key in one step: their mean.
//   (b) computed from the routing rows of step s and layer L, on cluster_model(config) with the
//       run's ranks (config_from_json of RunInfo::config_json; cluster_spec(cfg.cluster, ranks)):
//         T[s'][e] = tokens source rank s' sent to expert e (the rows' `tokens`);
//         E = the layer's experts (config moe.experts of block L); P = the EP group size:
//         parallel.ep, or with ep = 0 the data-parallel size (parallel.dp, 0 = the run's ranks);
//         EP groups are runs of P consecutive ranks (dist/parallel_layout.h with tp = pp = 1);
//         expert e of the source's group g = s' / P is owned by rank g P + e / (E / P);
//         B_w = the tokens rank w computes = sum of T[s'][e] over the (s', e) it owns;
//         Lat_comp = fastermoe_comp_seconds(B, H, F, cluster)                        (eq. 1)
//         Lat_comm = LinkTraffic over ClusterNetwork(cluster): per EP group one
//                    add_all_to_all_v of T[s'][e] x H x 4 bytes (fp32) from s' to e's owner
//                    (nothing between a rank and itself); seconds() = max_l T_l / W_l (eq. 2)
//       with H = model.hidden, F = model.ffn_mult x H (alpha H of the paper). This is the
//       expert-parallel exchange (expert_centric's all-to-all) whatever strategy ran: for
//       fastermoe without stored metrics (a) it leaves shadowing out; for data_centric / janus /
//       hier_a2a it is the baseline they are compared with, not their own traffic.
//       Not covered (the point gets a reason instead): parallel.tp > 1 (TP ranks hold the same
//       tokens, and monta / ppmoe / expert_tp place experts on the TP group: who computes and
//       sends what depends on the strategy), parallel.pp > 1 (each stage holds only its own
//       blocks and ranks; the stage layout is not modelled here), and strategy ppmoe (EP group
//       = the TP group). Those runs still get a point where every step has source (a), without
//       Lat_ar below.
//   Lat_ar      = the layer's expert gradient all-reduce (ddl_expert_allreduce_seconds), once per
//                 step: with P < the run's ranks every expert has ranks / P replicas (FasterMoE's
//                 DP: P = 1, every rank holds all E experts, §3.3 "all-reduce on 2 N a H^2
//                 elements"), whose gradients are summed after the backward (Distributed::
//                 finish_gradients, the measured and simulated "expert.allreduce" of layer L);
//                 0 when P = the ranks. On the layout of (b): replicas of EP rank i are the
//                 world ranks i, i + P, i + 2P, ...; each such group runs §3.2's ring all-reduce
//                 (LinkTraffic::add_ring_all_reduce, in rank order) of S = E / P experts x
//                 param_pieces(model).expert parameters x 4 bytes (fp32); all groups at once,
//                 eq. 2 over their summed link traffic.
//   Lat_e2e(s)  = 3 Lat_comp(s) + 4 Lat_comm(s) + Lat_ar   (§3.3: synchronous expert parallelism
//                 runs 3 rounds of computation and 4 of communication per iteration; the
//                 gradient all-reduce is a backward-only transfer, once per step, overlapping
//                 nothing: it runs after the backward)
//   flops(s)    = 12 a H^2 sum_w B_w, sum_w B_w = the sum of the step's routing rows of L (every
//                 top-k copy; shadowing moves tokens, it does not change their sum)  (eq. 4)
// Steps used: the steps with routing rows of L, leaving out the warm-up step: the first step
//   with spans when more than 2 steps have spans (ddl_roofline.h's rule, so measured and
//   predicted drop the same step), or, for a run without spans, the first step with routing
//   rows when more than 2 steps have them. Every step used needs source (a) or (b).
// Point (as ddl_roofline.h: ratios of the step means), as the step's totals like the measured
// side (which sums the forward and backward expert compute and all of the layer's comm spans):
//   lat_comp_s = the mean over the steps used of 3 Lat_comp(s), lat_comm_s of
//   4 Lat_comm(s) + Lat_ar, lat_e2e_s = their sum, flops_per_step = the mean of flops(s);
//   r_cc            = lat_comp_s / lat_comm_s = 3 Lat_comp / (4 Lat_comm + Lat_ar)   (eq. 3)
//   achieved_gflops = flops_per_step / (N lat_e2e_s) / 1e9, N = the run's ranks: the
//                     PREDICTED P-bar in GFLOP/s per worker (eq. 4)
// Whole-run point (layer -1): sums over the MoE layers of lat_comp_s, lat_comm_s, lat_e2e_s and
//   flops_per_step, r_cc and achieved_gflops from those sums; given only when every MoE layer
//   has a point; steps_used = the fewest any layer used (ddl_roofline.h's rule).
// So a perfectly predicted layer lands on its measured point; without replicas (Lat_ar = 0),
// eq. 3's ratio of one round each is r_cc x 4 / 3.
#include <cstdint>
#include <string>
#include <vector>

#include "moebench/perf/cluster_network.h"
#include "moebench/perf/ddl_roofline.h"
#include "moebench/store/run_store.h"

namespace moebench {

struct DdlPredictedPoint : DdlPoint {
  int64_t steps_from_metrics = 0;  // steps whose latencies are the stored fastermoe metrics (a)
  int64_t steps_from_routing = 0;  // steps computed with eq. 1-2 from routing rows (b)
  // (whole-run entry: the most any layer used of each)
};

// One entry per MoE layer (ascending; the layers named by routing rows, fastermoe metrics or the
// config's moe.moe_layers), then the whole-run entry (layer -1). A run without routing rows
// gives only the whole-run entry, without a point. Throws StoreError for an unknown run.
std::vector<DdlPredictedPoint> ddl_predicted_points(const RunStore& store, const RunInfo& run);

// Source (b) for one step and layer. tokens[s * E + e] = T[s][e] for world ranks s < world;
// ep = the EP group size (divides world and E). H, F as above.
struct DdlStepPrediction {
  double comp_s = 0, comm_s = 0;
  std::vector<double> loads;  // B_w per world rank
};
DdlStepPrediction ddl_predict_step(const std::vector<double>& tokens, int world, int experts, int ep, double H,
                                   double F, const ClusterModel& cluster, const ClusterNetwork& network);

// Lat_ar above for one layer of `experts` experts of `expert_params` parameters each, EP groups
// of `ep` consecutive ranks out of `world` (ep divides both; throws std::invalid_argument
// otherwise): eq. 2 of the replicas' ring all-reduces on `network`, 0 when ep == world.
double ddl_expert_allreduce_seconds(int world, int experts, int ep, double expert_params,
                                    const ClusterNetwork& network);

// The metric keys of source (a) for block L: "fastermoe.predicted_comp_ms/block<L>", ...
std::string ddl_stored_comp_key(int layer);
std::string ddl_stored_comm_key(int layer);

}  // namespace moebench
