#include "moebench/dist/elastic_plan.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <stdexcept>

#include "moebench/dist/task_assignment.h"

namespace moebench {
namespace {

// The divisors of n >= 1, ascending (trial division up to sqrt(n)).
std::vector<long> divisors(long n) {
  std::vector<long> low, high;
  for (long d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      low.push_back(d);
      if (d != n / d) high.push_back(n / d);
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

}  // namespace

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
    // Valid rank counts of task t: k with b_t % (k M) == 0, i.e. the divisors of b_t / M
    // (ascending; O(sqrt(b_t)) to list, at most 1,600 of them for a batch below 2^31).
    std::vector<std::vector<long>> valid((size_t)T);
    for (int t = 0; t < T; ++t) {
      const long b = task_batches[(size_t)t];
      if (b % M != 0)
        throw std::invalid_argument("elastic plan: task " + std::to_string(t) + "'s batch " + std::to_string(b) +
                                    " does not divide into " + std::to_string(M) + " micro-batch(es)");
      valid[(size_t)t] = divisors(b / M);
    }
    // k_min(L): the fewest valid ranks that bring task t's load per rank to <= L (0 = none);
    // b_t / k falls as k grows, so the first divisor that reaches L.
    auto k_min = [&](int t, double L) -> long {
      const std::vector<long>& ks = valid[(size_t)t];
      const double b = task_batches[(size_t)t];
      const auto it = std::partition_point(ks.begin(), ks.end(), [&](long k) { return b / (double)k > L; });
      return it == ks.end() ? 0 : *it;
    };
    std::vector<double> candidates;  // every load per rank some valid k gives
    for (int t = 0; t < T; ++t)
      for (long k : valid[(size_t)t]) candidates.push_back((double)task_batches[(size_t)t] / (double)k);
    std::sort(candidates.begin(), candidates.end());
    // The smallest largest load that fits the ranks: the fewest ranks each task needs only fall
    // as L grows, so the first candidate that fits is found by bisection.
    auto need_at = [&](double L) {
      std::vector<long> need((size_t)T);
      long sum = 0;
      for (int t = 0; t < T; ++t) {
        need[(size_t)t] = k_min(t, L);
        if (need[(size_t)t] == 0) return std::vector<long>();
        sum += need[(size_t)t];
      }
      return sum <= ranks ? need : std::vector<long>();
    };
    const auto fit = std::partition_point(candidates.begin(), candidates.end(),
                                          [&](double L) { return need_at(L).empty(); });
    std::vector<long> k = fit == candidates.end() ? std::vector<long>((size_t)T, 0) : need_at(*fit);
    // Spare ranks: to the task with the largest load per rank (ties: lower index) that can
    // move to its next valid rank count within the spare ranks.
    for (long spare = ranks - std::accumulate(k.begin(), k.end(), 0L); spare > 0;) {
      int best = -1;
      long best_next = 0;
      for (int t = 0; t < T; ++t) {
        const std::vector<long>& ks = valid[(size_t)t];
        const auto up = std::upper_bound(ks.begin(), ks.end(), k[(size_t)t]);
        if (up == ks.end() || *up > k[(size_t)t] + spare) continue;
        if (best < 0 || (long)task_batches[(size_t)t] * k[(size_t)best] > (long)task_batches[(size_t)best] * k[(size_t)t])
          best = t, best_next = *up;
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
    // The least loaded rank so far (ties: the lower rank) on top.
    std::priority_queue<std::pair<long, int>, std::vector<std::pair<long, int>>, std::greater<>> least;
    for (int r = 0; r < ranks; ++r) least.push({0L, r});
    for (int t : order) {
      auto [load, r] = least.top();
      least.pop();
      assignment[(size_t)r].push_back(t);
      least.push({load + task_batches[(size_t)t], r});
    }
    for (auto& tasks : assignment) std::sort(tasks.begin(), tasks.end());
  }
  const std::string problem = assignment_problem(task_batches, assignment, ranks, M);
  if (!problem.empty()) throw std::invalid_argument("elastic plan: " + problem);
  return evaluate_assignment(task_batches, assignment);
}

}  // namespace moebench
