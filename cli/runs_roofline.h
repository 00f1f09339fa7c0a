#pragma once
// moebench runs roofline RUN... [--peak GFLOPS] [--json]: the DDL-roofline points of runs
// (FasterMoE §3.3, Fig. 5) as text or JSON: per MoE layer and for the whole run, the measured
// point (perf/ddl_roofline.h; for a run the simulator wrote, "simulated": predicted from its
// replayed spans) and, for a trained run, the predicted point (perf/ddl_prediction.h: eq. 1-2 or
// fastermoe's stored predictions). With a peak P_w (--peak, else the run's param peak_gflops)
// also the semi-ideal P_w R / (R + 1) and ideal P_w min(1, R) at the point's R_CC and whether
// the point is above the semi-ideal curve.
#include <string>
#include <vector>

namespace moebench::cli {

// --peak's bound: 1e8 GFLOP/s (100 PFLOP/s) per worker, a hundred times an H100's dense bf16.
constexpr double kMaxPeakGflops = 1e8;

int runs_roofline(const std::string& db, const std::vector<std::string>& refs, double peak_gflops, bool as_json);

}  // namespace moebench::cli
