#include "moebench/config/elastic_plan.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "moebench/config/task_assignment.h"

namespace moebench {

ElasticPlan evaluate_assignment(const std::vector<int>& task_batches, const std::vector<std::vector<int>>& assignment) {
  ElasticPlan p;
  p.assignment = assignment;
  p.load = rows_per_rank(task_batches, assignment);
  if (p.load.empty()) return p;
  p.max_load = *std::max_element(p.load.begin(), p.load.end());
  p.mean_load = (double)std::accumulate(p.load.begin(), p.load.end(), 0L) / (double)p.load.size();
  p.imbalance = p.mean_load > 0 ? (double)p.max_load / p.mean_load : 1.0;
  p.bubble_share = p.max_load > 0 ? 1.0 - p.mean_load / (double)p.max_load : 0.0;
  return p;
}

ElasticPlan propose_elastic(const std::vector<int>& task_batches, int ranks, int microbatches) {
  const int T = (int)task_batches.size();
  const int M = std::max(microbatches, 1);
  if (T < 1) throw std::invalid_argument("elastic plan: no tasks (data.tasks is empty)");
  if (ranks < 1) throw std::invalid_argument("elastic plan: needs at least one rank, got " + std::to_string(ranks));
  for (int t = 0; t < T; ++t)
    if (task_batches[(size_t)t] < 1)
      throw std::invalid_argument("elastic plan: task " + std::to_string(t) + "'s batch must be >= 1, got " +
                                  std::to_string(task_batches[(size_t)t]));
  std::vector<std::vector<int>> assignment;
  if (ranks >= T) {
    // Valid rank counts of task t: k with b_t % (k M) == 0. k_min(L): the fewest valid ranks
    // that bring task t's load per rank to <= L (0 = none).
    auto valid = [&](int t, long k) { return k >= 1 && task_batches[(size_t)t] % (k * M) == 0; };
    auto k_min = [&](int t, double L) -> long {
      for (long k = 1; k <= task_batches[(size_t)t] / M; ++k)
        if (valid(t, k) && (double)task_batches[(size_t)t] / (double)k <= L) return k;
      return 0;
    };
    std::vector<double> candidates;  // every load per rank some valid k gives
    for (int t = 0; t < T; ++t) {
      if (!valid(t, 1))
        throw std::invalid_argument("elastic plan: task " + std::to_string(t) + "'s batch " +
                                    std::to_string(task_batches[(size_t)t]) + " does not divide into " +
                                    std::to_string(M) + " micro-batch(es)");
      for (long k = 1; k <= task_batches[(size_t)t] / M; ++k)
        if (valid(t, k)) candidates.push_back((double)task_batches[(size_t)t] / (double)k);
    }
    std::sort(candidates.begin(), candidates.end());
    std::vector<long> k;
    for (double L : candidates) {  // the smallest largest load that fits the ranks
      std::vector<long> need((size_t)T);
      long sum = 0;
      for (int t = 0; t < T; ++t) sum += need[(size_t)t] = k_min(t, L);
      if (std::find(need.begin(), need.end(), 0L) == need.end() && sum <= ranks) {
        k = need;
        break;
      }
    }
    // Spare ranks: to the task with the largest load per rank (ties: lower index) that can
    // move to its next valid rank count within the spare ranks.
    for (long spare = ranks - std::accumulate(k.begin(), k.end(), 0L); spare > 0;) {
      int best = -1;
      long best_next = 0;
      for (int t = 0; t < T; ++t) {
        long next = k[(size_t)t] + 1;
        while (next <= k[(size_t)t] + spare && !valid(t, next)) ++next;
        if (next > k[(size_t)t] + spare) continue;
        if (best < 0 || (long)task_batches[(size_t)t] * k[(size_t)best] > (long)task_batches[(size_t)best] * k[(size_t)t])
          best = t, best_next = next;
      }
      if (best < 0)
        throw std::invalid_argument("elastic plan: " + std::to_string(spare) + " of the " + std::to_string(ranks) +
                                    " ranks stay unused: no task's batch divides over more ranks x " +
                                    std::to_string(M) + " micro-batch(es)");
      spare -= best_next - k[(size_t)best];
      k[(size_t)best] = best_next;
    }
    for (int t = 0; t < T; ++t)
      for (long i = 0; i < k[(size_t)t]; ++i) assignment.push_back({t});
  } else {
    std::vector<int> order((size_t)T);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return task_batches[(size_t)a] > task_batches[(size_t)b]; });
    assignment.assign((size_t)ranks, {});
    std::vector<long> load((size_t)ranks, 0);
    for (int t : order) {
      const size_t r = (size_t)(std::min_element(load.begin(), load.end()) - load.begin());
      assignment[r].push_back(t);
      load[r] += task_batches[(size_t)t];
    }
    for (auto& tasks : assignment) std::sort(tasks.begin(), tasks.end());
  }
  const std::string problem = assignment_problem(task_batches, assignment, ranks, M);
  if (!problem.empty()) throw std::invalid_argument("elastic plan: " + problem);
  return evaluate_assignment(task_batches, assignment);
}

}  // namespace moebench
