#pragma once
// What the measured (ddl_roofline.cpp) and predicted (ddl_prediction.cpp) DDL-roofline points
// share: a layer's point from its step sums, and the whole-run point from the layers' points.
#include <algorithm>
#include <cstdint>
#include <string>

#include "moebench/perf/ddl_roofline.h"

namespace moebench::ddl_detail {

inline std::string layer_text(int layer) { return "MoE layer " + std::to_string(layer); }

// p's means over n > 0 steps of the summed latencies and FLOPs, then R_CC (eq. 3) and P-bar
// (eq. 4, N = ranks); p.reason instead when the communication or the compute is zero.
// `what` names the kind of time in the reasons ("the communication time of", "the predicted
// communication of").
inline void finish_layer(DdlPoint& p, double comp, double comm, double e2e, double flops, int64_t n, int ranks,
                         const std::string& comm_what, const std::string& comp_what) {
  p.steps_used = n;
  p.lat_comp_s = comp / double(n);
  p.lat_comm_s = comm / double(n);
  p.lat_e2e_s = e2e / double(n);
  p.flops_per_step = flops / double(n);
  if (!(p.lat_comm_s > 0)) {
    p.reason = comm_what + " " + layer_text(p.layer) + " is zero: R_CC undefined";
  } else if (!(p.lat_comp_s > 0)) {
    p.reason = comp_what + " " + layer_text(p.layer) + " is zero";
  } else {
    p.r_cc = p.lat_comp_s / p.lat_comm_s;
    p.achieved_gflops = p.flops_per_step / (double(ranks) * p.lat_e2e_s) / 1e9;
  }
}

// The whole-run point: the sums over the MoE layers, given only when every layer has a point.
struct WholeRun {
  bool all = true;
  std::string missing;  // the first layer without a point, for the whole-run reason
  double comp = 0, comm = 0, e2e = 0, flops = 0;
  int64_t min_steps = -1;

  void add(const DdlPoint& p, const std::string& noun) {
    if (p.has_point()) {
      comp += p.lat_comp_s;
      comm += p.lat_comm_s;
      e2e += p.lat_e2e_s;
      flops += p.flops_per_step;
      min_steps = min_steps < 0 ? p.steps_used : std::min(min_steps, p.steps_used);
    } else if (all) {
      all = false;
      missing = layer_text(p.layer) + " has no " + noun + " (" + p.reason + ")";
    }
  }
  // Fills `whole` (its reason when a layer lacks a point).
  void finish(DdlPoint& whole, int ranks) const {
    if (!all) {
      whole.reason = missing;
      return;
    }
    whole.lat_comp_s = comp;
    whole.lat_comm_s = comm;
    whole.lat_e2e_s = e2e;
    whole.flops_per_step = flops;
    whole.steps_used = min_steps;
    whole.r_cc = comp / comm;
    whole.achieved_gflops = flops / (double(ranks) * e2e) / 1e9;
  }
};

}  // namespace moebench::ddl_detail
