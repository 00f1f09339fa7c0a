#pragma once
// The model FLOPs utilisation (MFU) `moebench run` prints after training: the model FLOPs per
// token (model/model_flops.h) times the run's tokens/s, over
//   * the measured GEMM rate: on the CPU the host's sgemm rate `bench gemm --db` recorded (per
//     rank at its BLAS threads, as the run store's peak_gflops) times the ranks; on a GPU a cuBLAS
//     GEMM at the run's precision timed on the GPU right after training (4096^3, median of 5)
//     times the GPUs the ranks use;
//   * on a GPU also the datasheet peak (perf/datasheet_peaks.h) times the GPUs.
// A reference that is not there (no recorded CPU rate, a GPU the table does not hold) is left out.
#include <optional>
#include <string>
#include <vector>

#include "moebench/config/config.h"

namespace moebench {

struct MfuReference {
  double tflops = 0;  // all the run's devices together
  std::string what;   // "the measured fp32 GEMM rate (51.6 TFLOP/s x 1 GPU)"
};

// ranks / ranks_on_host: the world and this host's share (GPUs used = hosts x min(ranks on a
// host, its GPUs)); cpu_rank_gflops: the recorded per-rank CPU rate, if any.
std::vector<MfuReference> mfu_references(const Config& cfg, int ranks, int ranks_on_host,
                                         std::optional<double> cpu_rank_gflops);

// " | MFU 41.2% of <what>, 30.1% of <what>" for model FLOP/s `flops_per_s`; "" without references.
std::string mfu_text(double flops_per_s, const std::vector<MfuReference>& refs);

}  // namespace moebench
