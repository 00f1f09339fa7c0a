#pragma once
// What `bench predictor`'s two models share (bench_predictor.cpp: the simulator against whole
// emulated steps; bench_predictor_fastermoe.cpp: FasterMoE's eq. 1-2 and the simulator against
// emulated MoE layers).
#include <filesystem>
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

// The folder of the case configs, their logs and (without --db) the runs' store:
// <tmp>/moebench-predictor-<pid>, made on construction and removed with everything in it on
// every way out (a failed case, an exception, the end).
class PredictorWorkDir {
 public:
  PredictorWorkDir();
  ~PredictorWorkDir();
  PredictorWorkDir(const PredictorWorkDir&) = delete;
  PredictorWorkDir& operator=(const PredictorWorkDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// After a stop signal (Ctrl-C reaches the case's child too): whether to stop now. Says so
// ("bench predictor stopped by signal after 3 of 30 cases"; total 0: before the first) when it
// is.
bool predictor_stopped(size_t done, size_t total);

// --model fastermoe (bench_predictor_fastermoe.cpp). o.cluster and o.host are absolute paths.
int bench_predictor_fastermoe(const PredictorOptions& o);

}  // namespace moebench::cli
