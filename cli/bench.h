#pragma once
// Benchmark sub-commands of `moebench bench` and their shared timing helper.
#include <CLI/CLI.hpp>

#include <chrono>
#include <functional>
#include <vector>

#include "commands.h"

namespace moebench::cli {

void add_bench_gemm(CLI::App& bench, Action& action);
void add_bench_moe_layer(CLI::App& bench, Action& action);
void add_bench_recording(CLI::App& bench, Action& action);
void add_bench_comm(CLI::App& bench, Action& action);
void add_bench_overlap(CLI::App& bench, Action& action);
void add_bench_simulate(CLI::App& bench, Action& action);
void add_bench_predictor(CLI::App& bench, Action& action);

// Runs fn `warmup` times untimed, then `iters` times; returns the per-iteration seconds.
inline std::vector<double> time_iterations(int warmup, int iters, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> out;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    out.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return out;
}

}  // namespace moebench::cli
