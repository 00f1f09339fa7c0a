// moebench bench gemm [--threads N] [--iters N] [--db FILE]: sgemm GFLOP/s (2*M*N*K flops per
// product) for square sizes and for the expert-FFN shape; "sgemm rate" is the best of them.
// With --db the result is stored (gemm_rate_record.h) and later runs on this host carry it as
// their peak rate (param peak_gflops, the DDL-roofline's P_w).
#include <algorithm>
#include <cstdio>

#include "bench.h"
#include "moebench/store/gemm_rate_record.h"
#include "moebench/tensor/matmul.h"
#include "moebench/tensor/rng.h"

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

}  // namespace

void add_bench_gemm(CLI::App& bench, Action& action) {
  auto* cmd = bench.add_subcommand("gemm", "sgemm GFLOP/s of this machine");
  auto threads = std::make_shared<int>(0);
  auto iters = std::make_shared<int>(10);
  auto db = std::make_shared<std::string>();
  cmd->add_option("--threads", *threads, "Threads (0 = all cores)")->check(non_negative());
  cmd->add_option("--iters", *iters, "Timed runs per shape")->check(positive());
  cmd->add_option("--db", *db, "Store the rate in this run database (runs record it as peak_gflops)");
  cmd->callback([&action, threads, iters, db] { action = [=] { return bench_gemm(*threads, *iters, *db); }; });
}

}  // namespace moebench::cli
