#include "moebench/dist/task_assignment.h"

#include <algorithm>
#include <stdexcept>

#include "moebench/dist/elastic_plan.h"

namespace moebench {

std::vector<std::vector<int>> parse_rank_tasks(const std::vector<std::string>& entries) {
  std::vector<std::vector<int>> out;
  for (size_t r = 0; r < entries.size(); ++r) {
    const std::string& e = entries[r];
    auto bad = [&](const std::string& why) {
      return std::invalid_argument("entry " + std::to_string(r) + " (\"" + e + "\"): " + why);
    };
    std::vector<int> tasks;
    size_t at = 0;
    while (true) {
      const size_t plus = e.find('+', at);
      const std::string part = e.substr(at, plus == std::string::npos ? std::string::npos : plus - at);
      if (part.empty() || part.size() > 6 || !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw bad("expected task indices joined by '+', e.g. \"0\" or \"2+3\"");
      const int t = std::stoi(part);
      if (std::find(tasks.begin(), tasks.end(), t) != tasks.end()) throw bad("task " + part + " appears twice");
      tasks.push_back(t);
      if (plus == std::string::npos) break;
      at = plus + 1;
    }
    out.push_back(std::move(tasks));
  }
  return out;
}

std::vector<std::string> rank_tasks_text(const std::vector<std::vector<int>>& assignment) {
  std::vector<std::string> out;
  for (const auto& tasks : assignment) {
    std::string s;
    for (int t : tasks) {
      if (!s.empty()) s += '+';
      s += std::to_string(t);
    }
    out.push_back(s);
  }
  return out;
}

std::vector<int> ranks_per_task(int tasks, const std::vector<std::vector<int>>& assignment) {
  std::vector<int> k((size_t)std::max(tasks, 0), 0);
  for (const auto& on_rank : assignment)
    for (int t : on_rank)
      if (t >= 0 && t < tasks) ++k[(size_t)t];
  return k;
}

std::string assignment_problem(const std::vector<int>& task_batches, const std::vector<std::vector<int>>& assignment,
                               int dp, int microbatches) {
  const int T = (int)task_batches.size();
  if ((int)assignment.size() != dp)
    return "has " + std::to_string(assignment.size()) + " entries; needs one per data-parallel rank (" +
           std::to_string(dp) + ")";
  for (size_t r = 0; r < assignment.size(); ++r) {
    if (assignment[r].empty()) return "rank " + std::to_string(r) + " has no task";
    for (int t : assignment[r])
      if (t < 0 || t >= T)
        return "rank " + std::to_string(r) + " names task " + std::to_string(t) + "; data.tasks has " +
               std::to_string(T) + " tasks (0 .. " + std::to_string(T - 1) + ")";
  }
  const std::vector<int> k = ranks_per_task(T, assignment);
  for (int t = 0; t < T; ++t) {
    if (k[(size_t)t] == 0) return "no rank trains task " + std::to_string(t);
    const long parts = (long)k[(size_t)t] * std::max(microbatches, 1);
    if (task_batches[(size_t)t] % parts != 0)
      return "task " + std::to_string(t) + "'s batch " + std::to_string(task_batches[(size_t)t]) +
             " does not divide over its " + std::to_string(k[(size_t)t]) + " rank(s) x " +
             std::to_string(microbatches) + " micro-batch(es)";
  }
  return {};
}

std::vector<TaskRowSlice> task_row_slices(const std::vector<int>& task_batches,
                                          const std::vector<std::vector<int>>& assignment, int dp_rank,
                                          int microbatches) {
  const int T = (int)task_batches.size();
  const std::vector<int> k = ranks_per_task(T, assignment);
  std::vector<long> offset((size_t)T, 0);
  for (int t = 1; t < T; ++t) offset[(size_t)t] = offset[(size_t)t - 1] + task_batches[(size_t)t - 1];
  std::vector<TaskRowSlice> out;
  for (int t : assignment.at((size_t)dp_rank)) {
    // This rank's index among the ranks of task t (ranks in order).
    int index = 0;
    for (int r = 0; r < dp_rank; ++r)
      index += (int)std::count(assignment[(size_t)r].begin(), assignment[(size_t)r].end(), t);
    TaskRowSlice s;
    s.task = t;
    s.row_step = task_batches[(size_t)t] / microbatches;
    s.rows = (int)(s.row_step / k[(size_t)t]);
    s.first_row = offset[(size_t)t] + (long)index * s.rows;
    out.push_back(s);
  }
  return out;
}

std::vector<long> rows_per_rank(const std::vector<int>& task_batches, const std::vector<std::vector<int>>& assignment) {
  const std::vector<int> k = ranks_per_task((int)task_batches.size(), assignment);
  std::vector<long> rows;
  for (const auto& on_rank : assignment) {
    long n = 0;
    for (int t : on_rank) n += task_batches[(size_t)t] / k[(size_t)t];
    rows.push_back(n);
  }
  return rows;
}

std::vector<std::vector<int>> resolve_assignment(const std::vector<int>& task_batches,
                                                 const std::vector<std::string>& rank_tasks, int dp, int microbatches) {
  std::vector<std::vector<int>> assignment =
      rank_tasks.empty() ? propose_elastic(task_batches, dp, microbatches).assignment : parse_rank_tasks(rank_tasks);
  const std::string problem = assignment_problem(task_batches, assignment, dp, microbatches);
  if (!problem.empty()) throw std::invalid_argument("data.rank_tasks: " + problem);
  return assignment;
}

std::vector<int> micro_batch_rows(const std::vector<int>& task_batches, const std::vector<std::string>& rank_tasks,
                                  int global_batch, int dp, int microbatches) {
  if (task_batches.empty()) return std::vector<int>((size_t)dp, global_batch / (dp * microbatches));
  const std::vector<std::vector<int>> assignment = resolve_assignment(task_batches, rank_tasks, dp, microbatches);
  std::vector<int> rows((size_t)dp, 0);
  for (int d = 0; d < dp; ++d)
    for (const TaskRowSlice& s : task_row_slices(task_batches, assignment, d, microbatches)) rows[(size_t)d] += s.rows;
  return rows;
}

}  // namespace moebench
