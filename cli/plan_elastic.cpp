#include "plan_elastic.h"

#include <cstdio>
#include <iostream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "moebench/config/config_layout.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/usage_error.h"
#include "moebench/dist/task_assignment.h"
#include "moebench/dist/elastic_plan.h"

namespace moebench::cli {
namespace {

std::string join(const std::vector<int>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += sep;
    s += std::to_string(v[i]);
  }
  return s;
}

std::string config_lines(const std::vector<int>& tasks, const std::vector<std::string>& rank_tasks) {
  std::string s = "[data]\ntasks = [" + join(tasks, ", ") + "]\nrank_tasks = [";
  for (size_t r = 0; r < rank_tasks.size(); ++r) {
    if (r) s += ", ";
    s += "\"" + rank_tasks[r] + "\"";
  }
  return s + "]\n";
}

nlohmann::json plan_json(const ElasticPlan& p) {
  return {{"assignment", rank_tasks_text(p.assignment)}, {"load", p.load},           {"max_load", p.max_load},
          {"mean_load", p.mean_load},                  {"imbalance", p.imbalance}, {"bubble_share", p.bubble_share}};
}

}  // namespace

int elastic_plan_main(const std::string& path, std::vector<std::string> sets, bool json) {
  sets.push_back("data.rank_tasks=[]");  // the proposal replaces the config's assignment
  const Config cfg = load_config(path, sets);
  const std::vector<int>& tasks = cfg.data.tasks;
  if (tasks.empty())
    throw UsageError("--elastic needs data.tasks (per-task batch sizes, e.g. --set 'data.tasks=[512,256,128,128]')");
  const int ranks = layout_of(cfg).dp();  // the data-parallel ranks the tasks go to
  const int micro = cfg.parallel.microbatches;
  ElasticPlan plan;
  try {
    plan = propose_elastic(tasks, ranks, micro);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  // Table III's "load imbalanced": one rank per task.
  std::vector<std::vector<int>> one_each;
  for (int t = 0; t < (int)tasks.size(); ++t) one_each.push_back({t});
  const ElasticPlan base = evaluate_assignment(tasks, one_each);
  const long total = std::accumulate(tasks.begin(), tasks.end(), 0L);
  // Sequences per second per rank ~ total / (ranks x the slowest rank's load).
  const double per_rank = (double)total / ((double)ranks * (double)plan.max_load);
  const double per_rank_base = (double)total / ((double)tasks.size() * (double)base.max_load);
  const std::vector<int> k = ranks_per_task((int)tasks.size(), plan.assignment);
  const std::vector<std::string> rank_tasks = rank_tasks_text(plan.assignment);
  if (json) {
    nlohmann::json j;
    j["predicted"] = true;
    j["config"] = path;
    j["tasks"] = tasks;
    j["ranks"] = ranks;
    j["microbatches"] = micro;
    j["ranks_per_task"] = k;
    j["elastic"] = plan_json(plan);
    j["one_rank_per_task"] = plan_json(base);
    j["per_rank_throughput_ratio"] = per_rank / per_rank_base;
    j["config_lines"] = config_lines(tasks, rank_tasks);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("Elastic task assignment for %s (MoESys §IV-A): %zu tasks with batches %s sequences on %d data-parallel "
              "ranks; PREDICTED from the loads (a rank's step time proportional to its sequences)\n",
              path.c_str(), tasks.size(), join(tasks, "/").c_str(), ranks);
  std::printf("%6s %8s %7s %15s\n", "task", "batch", "ranks", "sequences/rank");
  for (size_t t = 0; t < tasks.size(); ++t)
    std::printf("%6zu %8d %7d %15g\n", t, tasks[t], k[t], (double)tasks[t] / k[t]);
  std::printf("%6s %10s %10s\n", "rank", "tasks", "sequences");
  for (size_t r = 0; r < plan.assignment.size(); ++r)
    std::printf("%6zu %10s %10ld\n", r, rank_tasks[r].c_str(), plan.load[r]);
  std::printf("elastic:           max %ld, mean %.2f sequences/rank, imbalance (max/mean) %.3f, bubble share %.1f%%\n",
              plan.max_load, plan.mean_load, plan.imbalance, 100.0 * plan.bubble_share);
  std::printf("one rank per task: max %ld, mean %.2f sequences/rank, imbalance (max/mean) %.3f, bubble share %.1f%% "
              "(%zu ranks)\n",
              base.max_load, base.mean_load, base.imbalance, 100.0 * base.bubble_share, tasks.size());
  std::printf("per-rank throughput, elastic / one rank per task: %.3fx (predicted)\n", per_rank / per_rank_base);
  std::printf("config lines (run.ranks = %d):\n%s", cfg.run.ranks, config_lines(tasks, rank_tasks).c_str());
  return 0;
}

}  // namespace moebench::cli
