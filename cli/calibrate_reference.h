#pragma once
// The reference runs of `moebench calibrate` (perf/calibration.h fit_host_tasks): small MoE
// models trained for real on this machine under the link emulator of a reference cluster, each
// simulated on the calibration just measured; the fit is appended to that cluster file.
#include <string>

namespace moebench::cli {

// `host_file`: the calibration written by the ranks (rewritten with the fit appended). Prints
// the fit. Throws std::runtime_error naming the reference run that failed, with its log.
void fit_reference_runs(const std::string& host_file, int ranks, bool quick);

}  // namespace moebench::cli
