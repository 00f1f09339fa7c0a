#pragma once
// The machine's measured sgemm rate as a record of the run store, so that runs can carry the
// peak compute rate their DDL-roofline is drawn against (FasterMoE §3.3: P_w).
//
// `moebench bench gemm --db FILE` stores its result as a FINISHED run of experiment "bench"
// named "gemm" (tag bench=gemm, metric "sgemm_gflops" at step 1, params threads and the
// per-shape rates). When `moebench run` creates a CPU run (run.device = "cpu"), it copies the
// newest such record of the same host into the run's params: peak_gflops (GFLOP/s of one rank: scaled linearly to the
// rank's BLAS threads when those differ from the benchmark's) and peak_gflops_source
// ("bench gemm <uuid prefix> at <time>, <threads> threads[; scaled to T threads per rank]").
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moebench/store/run_store.h"

namespace moebench {

inline constexpr const char* kGemmRateMetric = "sgemm_gflops";

struct GemmRate {
  double gflops = 0;    // best sgemm rate over the benchmarked shapes
  int threads = 0;      // BLAS threads it ran with
  std::string source;   // "bench gemm 1a2b3c4d at 2026-11-22 10:15:00, 2 threads"
};

// Records a `bench gemm` result; `shapes` are ("MxNxK", GFLOP/s) pairs. Returns the run.
RunInfo record_gemm_rate(RunStore& store, double gflops, int threads,
                         const std::vector<std::pair<std::string, double>>& shapes);
// The newest FINISHED gemm record of `host` in the store, or nullopt.
std::optional<GemmRate> latest_gemm_rate(const RunStore& store, const std::string& host);

}  // namespace moebench
