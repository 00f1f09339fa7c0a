#include "run_mfu.h"

#include <algorithm>
#include <cstdio>

#include "moebench/perf/datasheet_peaks.h"

#ifdef MOEBENCH_HAVE_CUDA
#include <cuda_runtime.h>

#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/gemm_timing.h"
#endif

namespace moebench {
namespace {

std::string tflops_text(double tflops, int devices, const char* unit) {
  char s[96];
  std::snprintf(s, sizeof s, "%.1f TFLOP/s x %d %s%s", tflops, devices, unit, devices == 1 ? "" : "s");
  return s;
}

}  // namespace

std::vector<MfuReference> mfu_references(const Config& cfg, int ranks, int ranks_on_host,
                                         std::optional<double> cpu_rank_gflops) {
  std::vector<MfuReference> refs;
  if (cfg.run.device == Device::cpu) {
    if (cpu_rank_gflops)
      refs.push_back({*cpu_rank_gflops * 1e-3 * ranks,
                      "this host's recorded sgemm rate (" + tflops_text(*cpu_rank_gflops * 1e-3, ranks, "rank") + ")"});
    return refs;
  }
#ifdef MOEBENCH_HAVE_CUDA
  int gpus = 0;
  MOEBENCH_CUDA_CHECK(cudaGetDeviceCount(&gpus));
  MOEBENCH_CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  MOEBENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int hosts = std::max(1, ranks / std::max(1, ranks_on_host));
  const int devices = hosts * std::min(std::max(1, ranks_on_host), std::max(1, gpus));
  const bool bf16 = cfg.run.precision == Precision::bf16;
  std::vector<double> t = cuda::time_gemm(4096, 4096, 4096, bf16 ? cuda::GemmType::bf16 : cuda::GemmType::fp32, 2, 5);
  std::sort(t.begin(), t.end());
  const double measured = 2.0 * 4096.0 * 4096.0 * 4096.0 / t[t.size() / 2] / 1e12;
  const char* prec = bf16 ? "bf16" : "fp32";
  refs.push_back({measured * devices, std::string("the measured ") + prec + " GEMM rate (" +
                                          tflops_text(measured, devices, "GPU") + ")"});
  if (const auto peak = datasheet_peak(prop.name)) {
    const double rate = bf16 ? peak->bf16_tflops : peak->fp32_tflops;
    refs.push_back({rate * devices, "the " + peak->gpu + " datasheet " + prec + " peak (" +
                                        tflops_text(rate, devices, "GPU") + ")"});
  }
#else
  (void)ranks, (void)ranks_on_host;
#endif
  return refs;
}

std::string mfu_text(double flops_per_s, const std::vector<MfuReference>& refs) {
  std::string out;
  for (const MfuReference& r : refs) {
    if (r.tflops <= 0) continue;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * flops_per_s / (r.tflops * 1e12));
    out += (out.empty() ? " | MFU " : ", ") + std::string(pct) + " of " + r.what;
  }
  return out;
}

}  // namespace moebench
