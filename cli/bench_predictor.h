#pragma once
// What `bench predictor`'s two models share (bench_predictor.cpp: the simulator against whole
// emulated steps; bench_predictor_fastermoe.cpp: FasterMoE's eq. 1-2 and the simulator against
// emulated MoE layers).
#include <string>
#include <utility>
#include <vector>

namespace moebench::cli {

struct PredictorOptions {
  std::string model = "simulator";  // simulator | fastermoe
  std::string cluster, host, db, time_scale = "300";
  int steps = 8;
  bool quick = false, json = false;
  bool calibrate = false;  // measure this machine first (moebench calibrate) and predict with that file
};

// R² of predictions against measurements, pairs (measured, predicted); NaN when the measured
// values do not vary.
double r_squared(const std::vector<std::pair<double, double>>& measured_predicted);
// Mean |predicted - measured| / measured.
double mean_abs_error(const std::vector<std::pair<double, double>>& measured_predicted);

// --model fastermoe (bench_predictor_fastermoe.cpp). o.cluster and o.host are absolute paths.
int bench_predictor_fastermoe(const PredictorOptions& o);

}  // namespace moebench::cli
