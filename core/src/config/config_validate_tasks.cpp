// [data] tasks and rank_tasks (dist/task_assignment.h; MoESys §IV-A elastic training). Checked at
// load, for run.ranks, so a bad assignment stops before any rank starts (exit 2):
//   * tasks: every batch >= 1, summing to train.batch_size; with data.source = "synthetic" one
//     language per task (task t samples language t), so data.languages >= the tasks. bin and
//     text corpora have no tasks to draw from: tasks needs the synthetic source.
//   * rank_tasks: needs tasks; one entry per data-parallel rank, each "t" or "t+u+...", every
//     task on some rank, each task's batch divisible by its ranks x parallel.microbatches.
//     Empty: the elastic proposal must exist for the data-parallel size (dist/elastic_plan.h).
//   * model.embedding_partition all-gathers equal token counts from every rank: not with tasks.
#include <numeric>

#include "config_checker.h"
#include "moebench/dist/task_assignment.h"
#include "moebench/dist/elastic_plan.h"

namespace moebench::config_detail {

void Checker::check_tasks() {
  const DataConfig& d = c_.data;
  if (d.tasks.empty()) {
    if (ok({"data.rank_tasks"}) && !d.rank_tasks.empty())
      fail("data.rank_tasks", "needs data.tasks (the per-task batch sizes it assigns)", "data.tasks");
    return;
  }
  if (!ok({"data.tasks"})) return;
  for (size_t t = 0; t < d.tasks.size(); ++t)
    if (d.tasks[t] < 1)
      return fail("data.tasks", "task " + std::to_string(t) + "'s batch must be >= 1 sequence, got " +
                                    std::to_string(d.tasks[t]));
  const long sum = std::accumulate(d.tasks.begin(), d.tasks.end(), 0L);
  if (ok({"train.batch_size"}) && sum != c_.train.batch_size)
    fail("data.tasks", "the task batches sum to " + std::to_string(sum) + "; they must sum to train.batch_size = " +
                           std::to_string(c_.train.batch_size) + " (the global batch)",
         "train.batch_size");
  if (ok({"data.source"}) && d.source != DataSource::synthetic)
    fail("data.tasks", "needs data.source = \"synthetic\" (task t samples synthetic language t), got \"" +
                           choice_name(d.source) + "\"",
         "data.source");
  else if (ok({"data.languages"}) && d.languages < (int)d.tasks.size())
    fail("data.languages", "must be >= the " + std::to_string(d.tasks.size()) +
                               " tasks of data.tasks (task t samples language t), got " + std::to_string(d.languages),
         "data.tasks");
  if (ok({"model.embedding_partition"}) && c_.model.embedding_partition)
    fail("model.embedding_partition", "does not apply with data.tasks (the partitioned embedding exchanges equal "
                                      "token counts from every data-parallel rank; tasks give ranks unequal rows)",
         "data.tasks");
  const int dp = data_parallel();
  const int micro = c_.parallel.microbatches;
  if (dp < 1 || !ok({"data.rank_tasks", "parallel.microbatches"}) || micro < 1) return;
  const std::string origin = data_parallel_origin();
  if (d.rank_tasks.empty()) {
    try {
      propose_elastic(d.tasks, dp, micro);
    } catch (const std::invalid_argument& e) {
      fail("data.tasks", std::string("no elastic assignment on the ") + std::to_string(dp) + " data-parallel ranks" +
                             origin + " (data.rank_tasks = []): " + e.what() + "; set data.rank_tasks",
           "data.rank_tasks");
    }
    return;
  }
  std::vector<std::vector<int>> assignment;
  try {
    assignment = parse_rank_tasks(d.rank_tasks);
  } catch (const std::invalid_argument& e) {
    return fail("data.rank_tasks", e.what());
  }
  const std::string problem = assignment_problem(d.tasks, assignment, dp, micro);
  if (!problem.empty()) fail("data.rank_tasks", problem + origin);
}

}  // namespace moebench::config_detail
