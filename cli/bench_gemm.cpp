// moebench bench gemm [--threads N] [--iters N] [--db FILE]: sgemm GFLOP/s (2*M*N*K flops per
// product) for square sizes and for the expert-FFN shape; "sgemm rate" is the best of them.
// With --db the result is stored (gemm_rate_record.h) and later runs on this host carry it as
// their peak rate (param peak_gflops, the DDL-roofline's P_w).
// --device cuda: the same table for cuBLAS on GPU 0 (CUDA_VISIBLE_DEVICES picks it) in fp32,
// tf32 and bf16 (fp32 accumulation), timed with CUDA events; the best bf16 rate is the peak
// the GPU moe-layer benchmark and a step's MFU are measured against. Not stored (--db is the
// CPU rate runs carry).
#include <algorithm>
#include <cstdio>

#include "bench.h"
#include "thread_option.h"
#include "moebench/config/usage_error.h"
#include "moebench/train/device.h"
#include "moebench/store/gemm_rate_record.h"
#include "moebench/tensor/matmul.h"
#include "moebench/tensor/rng.h"
#ifdef MOEBENCH_HAVE_CUDA
#include "moebench/kernels/gemm_timing.h"
#endif

namespace moebench::cli {
namespace {

int bench_gemm(int threads, int iters, const std::string& db) {
  set_num_threads(threads);
  std::printf("# sgemm through CBLAS (OpenBLAS), %d threads, median of %d runs\n", num_threads(), iters);
  std::printf("%8s %8s %8s %10s %10s\n", "M", "N", "K", "ms", "GFLOP/s");
  struct Shape { int m, n, k; };
  const Shape shapes[] = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048},
                          {1024, 1024, 256}, {1024, 256, 1024}};
  double best = 0.0;
  std::vector<std::pair<std::string, double>> rates;
  for (const Shape& s : shapes) {
    Rng rng(7);
    std::vector<float> a((size_t)s.m * s.k), b((size_t)s.n * s.k), c((size_t)s.m * s.n);
    for (auto& x : a) x = rng.uniform();
    for (auto& x : b) x = rng.uniform();
    auto t = time_iterations(2, iters, [&] { matmul_forward(c.data(), a.data(), b.data(), nullptr, s.m, s.k, s.n); });
    std::sort(t.begin(), t.end());
    const double sec = t[t.size() / 2];
    const double gflops = 2.0 * s.m * s.n * s.k / sec / 1e9;
    best = std::max(best, gflops);
    rates.emplace_back(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k), gflops);
    std::printf("%8d %8d %8d %10.3f %10.2f\n", s.m, s.n, s.k, sec * 1e3, gflops);
  }
  std::printf("sgemm rate: %.2f GFLOP/s (best of the shapes above)\n", best);
  if (!db.empty()) {
    RunStore store(db);
    const RunInfo run = record_gemm_rate(store, best, num_threads(), rates);
    std::printf("stored as run %s (experiment %s) in %s: runs started on %s record it as peak_gflops\n",
                run.uuid.substr(0, 8).c_str(), kBenchExperiment, db.c_str(), run.host.c_str());
  }
  return 0;
}

#ifdef MOEBENCH_HAVE_CUDA
int bench_gemm_cuda(int iters) {
  struct Shape { int m, n, k; };
  // Squares, and the expert FFN of `bench moe-layer --tokens 16384 --hidden 4096 --ffn-mult 4
  // --experts 8 --top-k 2` (4096 rows per expert: [4096,4096] x [4096,16384] and back).
  const Shape shapes[] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                          {4096, 16384, 4096}, {4096, 4096, 16384}};
  const cuda::GemmType types[] = {cuda::GemmType::fp32, cuda::GemmType::tf32, cuda::GemmType::bf16};
  std::printf("# cuBLAS GEMM (cublasGemmEx) on CUDA device 0, median of %d runs after 3 warm-up runs\n", iters);
  std::printf("%6s %8s %8s %8s %10s %10s\n", "type", "M", "N", "K", "ms", "TFLOP/s");
  double best[3] = {0, 0, 0};
  for (int ti = 0; ti < 3; ++ti)
    for (const Shape& s : shapes) {
      auto t = cuda::time_gemm(s.m, s.n, s.k, types[ti], 3, iters);
      std::sort(t.begin(), t.end());
      const double sec = t[t.size() / 2];
      const double tflops = 2.0 * s.m * s.n * s.k / sec / 1e12;
      best[ti] = std::max(best[ti], tflops);
      std::printf("%6s %8d %8d %8d %10.3f %10.1f\n", cuda::gemm_type_name(types[ti]), s.m, s.n, s.k, sec * 1e3,
                  tflops);
    }
  for (int ti = 0; ti < 3; ++ti)
    std::printf("%s rate: %.1f TFLOP/s (best of the shapes above)\n", cuda::gemm_type_name(types[ti]), best[ti]);
  return 0;
}
#endif

int bench_gemm_on(const std::string& device, int threads, int iters, const std::string& db) {
  if (device == "cpu") return bench_gemm(threads, iters, db);
  if (!db.empty())
    throw UsageError("--db stores the CPU rate runs carry as peak_gflops: not with --device cuda");
  require_cuda("bench gemm --device cuda");
#ifdef MOEBENCH_HAVE_CUDA
  return bench_gemm_cuda(iters);
#else
  return 2;  // require_cuda threw: this build has no CUDA
#endif
}

}  // namespace

void add_bench_gemm(CLI::App& bench, Action& action) {
  auto* cmd = bench.add_subcommand("gemm", "sgemm GFLOP/s of this machine");
  auto threads = std::make_shared<int>(0);
  auto iters = std::make_shared<int>(10);
  auto db = std::make_shared<std::string>();
  auto device = std::make_shared<std::string>("cpu");
  cmd->add_option("--threads", *threads, "Threads (0 = all cores)")->transform(non_negative())->check(thread_count());
  cmd->add_option("--iters", *iters, "Timed runs per shape")->transform(positive());
  cmd->add_option("--db", *db, "Store the rate in this run database (runs record it as peak_gflops)");
  cmd->add_option("--device", *device, "cpu (CBLAS) or cuda (cuBLAS fp32, tf32 and bf16 on GPU 0)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->callback([&action, threads, iters, db, device] {
    action = [=] { return bench_gemm_on(*device, *threads, *iters, *db); };
  });
}

}  // namespace moebench::cli
