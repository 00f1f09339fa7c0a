#include "moebench/store/gemm_rate_record.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace moebench {

RunInfo record_gemm_rate(RunStore& store, double gflops, int threads,
                         const std::vector<std::pair<std::string, double>>& shapes) {
  RunInfo info;
  info.name = "gemm";
  info.experiment = kBenchExperiment;
  RunInfo run = store.create_run(info);
  std::vector<std::pair<std::string, std::string>> params = {{"threads", std::to_string(threads)}};
  for (const auto& [shape, rate] : shapes) params.emplace_back("gflops." + shape, std::to_string(rate));
  store.log_params(run.id, params);
  store.set_tag(run.id, "bench", "gemm");
  store.log_step(run.id, {{kGemmRateMetric, 1, gflops, 0}}, {}, {}, {});
  store.set_status(run.id, RunStatus::finished, 0);
  return store.find_run(std::to_string(run.id));
}

std::optional<GemmRate> latest_gemm_rate(const RunStore& store, const std::string& host) {
  std::optional<GemmRate> best;
  double newest = -1;
  for (const RunInfo& run : store.list_runs(kBenchExperiment)) {
    if (run.host != host || run.status != RunStatus::finished || run.start_time <= newest) continue;
    bool is_gemm = false;
    for (const auto& [key, value] : store.tags(run.id)) is_gemm |= key == "bench" && value == "gemm";
    const auto rate = store.metrics(run.id, kGemmRateMetric);
    if (!is_gemm || rate.empty() || !(rate.back().value > 0)) continue;
    GemmRate g;
    g.gflops = rate.back().value;
    for (const auto& [key, value] : store.params(run.id))
      if (key == "threads") g.threads = std::atoi(value.c_str());
    char when[32] = "-";
    const std::time_t t = static_cast<std::time_t>(run.start_time);
    std::tm tm{};
    localtime_r(&t, &tm);
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    g.source = "bench gemm " + run.uuid.substr(0, 8) + " at " + when + ", " + std::to_string(g.threads) + (g.threads == 1 ? " thread" : " threads");
    best = g;
    newest = run.start_time;
  }
  return best;
}

}  // namespace moebench
