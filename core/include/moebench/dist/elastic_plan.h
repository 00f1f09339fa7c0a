#pragma once
// The elastic task-to-ranks proposal (MoESys §IV-A, Fig. 6; `moebench plan --elastic`): from the
// task loads (load = the task's batch in sequences, data.tasks) and the data-parallel ranks:
//   * ranks >= tasks (Fig. 6(c), heavy tasks get more ranks, data parallel inside): the ranks
//     per task k_t that minimise the largest load per rank b_t / k_t, with sum k_t <= ranks and
//     every b_t divisible by k_t x the micro-batches (a task's batch splits evenly): the
//     smallest L such that the fewest valid k_t with b_t / k_t <= L fit the ranks. Spare ranks
//     then go, one valid step at a time, to the task with the largest load per rank (ties: the
//     lower task index). Without the divisibility this is the greedy "one rank each, then each
//     further rank to the task with the largest load per rank"; 512/256/128/128 on 8 ranks
//     gives 4/2/1/1 (Table III, "load balanced").
//   * ranks < tasks (Fig. 6(b), light tasks merged): LPT — tasks by load, largest first (ties:
//     lower index), each onto the rank with the least load so far (ties: lower rank).
// Ranks are numbered task by task (a task's ranks consecutive). The prediction assumes a rank's
// step time is proportional to its load (same model on every rank, compute-bound): the step
// waits for the most loaded rank, so the predicted idle ("bubble") share of the ranks' time is
// 1 - mean load / max load.
#include <string>
#include <vector>

namespace moebench {

struct ElasticPlan {
  std::vector<std::vector<int>> assignment;  // per rank: its tasks (dist/task_assignment.h)
  std::vector<long> load;                    // per rank: sequences per step
  long max_load = 0;
  double mean_load = 0.0;
  double imbalance = 1.0;     // max / mean
  double bubble_share = 0.0;  // predicted: 1 - mean / max
};

// The proposal above. Throws std::invalid_argument when ranks < 1, a load < 1, or (ranks >=
// tasks) a batch does not divide into the micro-batches or the spare ranks cannot all be used
// because no task's batch divides further, saying so.
ElasticPlan propose_elastic(const std::vector<int>& task_batches, int ranks, int microbatches = 1);
// The loads, imbalance and bubble of a given assignment (checked by assignment_problem).
ElasticPlan evaluate_assignment(const std::vector<int>& task_batches, const std::vector<std::vector<int>>& assignment);

}  // namespace moebench
