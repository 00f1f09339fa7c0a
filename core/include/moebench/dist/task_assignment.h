#pragma once
// Multi-task data and its placement on the data-parallel ranks (MoESys §IV-A, Fig. 6: elastic
// MoE training). [data] tasks = [b_0, b_1, ...] lists per-task batch sizes in sequences (the UFO
// setup: 512/256/128/128); [data] rank_tasks lists, per data-parallel rank, the tasks that rank
// trains ("0", or "2+3" for light tasks merged on one rank). A task on k ranks splits its batch
// equally over them (data parallel inside the task); a rank holding several tasks trains all
// their rows (merging). Empty rank_tasks = the elastic proposal (dist/elastic_plan.h) for the
// data-parallel size, so a run resumed on another rank count re-plans by itself.
//
// Design decisions:
//  * train.batch_size stays the global batch and must equal the sum of the task batches (the
//    planner, memory model and the strategies' cost models keep reading it).
//  * Rows are numbered by task, independent of the assignment: task t owns global rows
//    [o_t, o_t + b_t) with o_t = b_0 + ... + b_{t-1}; micro-batch m of the step holds rows
//    o_t + [m b_t / M, (m + 1) b_t / M) of every task (M = parallel.microbatches), and the k
//    ranks of a task take consecutive equal slices of them. So the global micro-batch m holds
//    the same rows under every assignment, and (the trainer weighting each rank's gradient by
//    its rows / the global rows) every assignment computes the same global-batch gradient and
//    loss curve. Each task's batch must therefore divide by M x (the task's ranks).
//  * Task t's rows sample only from its own token stream (the synthetic corpus: language t;
//    data/corpus.h TokenCorpus::task_train).
//  * Exceptions to "same curve under every assignment": moe.capacity_factor > 0 (capacity is
//    per rank, as in GShard, so what is dropped depends on a rank's rows) and synthetic
//    moe.routing (keyed by a rank's first row; merged tasks' later rows continue that count).
//  * model.embedding_partition needs equal rows on every rank: refused with tasks.
//  * The predicted step graphs (simulate, plan --graph / --cluster) give each data-parallel rank
//    its tasks' rows (micro_batch_rows) and route those tokens, so they see the imbalance;
//    plan --memory still sizes every rank for train.batch_size / dp rows.
#include <string>
#include <vector>

namespace moebench {

// One task's share of a micro-batch on one rank.
struct TaskRowSlice {
  int task = 0;
  int rows = 0;         // sequences of this task in each micro-batch on this rank
  long first_row = 0;   // global row of the slice in micro-batch 0 (micro-batch m: + m b_t / M)
  long row_step = 0;    // b_t / M: the slice's first row moves by this much per micro-batch
};

// rank_tasks entries ("0", "2+3") -> task indices per rank. Throws std::invalid_argument naming
// the entry when an entry is not '+'-separated non-negative integers or repeats a task.
std::vector<std::vector<int>> parse_rank_tasks(const std::vector<std::string>& entries);
// The inverse: {{0}, {2, 3}} -> {"0", "2+3"}.
std::vector<std::string> rank_tasks_text(const std::vector<std::vector<int>>& assignment);

// Empty when `assignment` fits the tasks on dp ranks with M micro-batches, else what is wrong:
// one entry per rank, every task index in range and on at least one rank, each task's batch
// divisible by M x its ranks.
std::string assignment_problem(const std::vector<int>& task_batches, const std::vector<std::vector<int>>& assignment,
                               int dp, int microbatches);

// Ranks each task is on.
std::vector<int> ranks_per_task(int tasks, const std::vector<std::vector<int>>& assignment);
// Rank dp_rank's slices of every micro-batch (assignment checked by assignment_problem).
std::vector<TaskRowSlice> task_row_slices(const std::vector<int>& task_batches,
                                          const std::vector<std::vector<int>>& assignment, int dp_rank,
                                          int microbatches);
// Sequences per step on each rank (the rank's load; sums to the global batch).
std::vector<long> rows_per_rank(const std::vector<int>& task_batches, const std::vector<std::vector<int>>& assignment);
// The assignment a run takes: rank_tasks parsed, or (empty) the elastic proposal for dp ranks;
// throws std::invalid_argument naming what does not fit (assignment_problem).
std::vector<std::vector<int>> resolve_assignment(const std::vector<int>& task_batches,
                                                 const std::vector<std::string>& rank_tasks, int dp, int microbatches);
// Sequences of one micro-batch on each of dp data-parallel ranks: global_batch / (dp x M) each
// without tasks; with them, each rank's tasks' rows under rank_tasks (empty: the elastic proposal
// for dp ranks, as the trainer takes it). Throws std::invalid_argument naming what is wrong with
// the assignment.
std::vector<int> micro_batch_rows(const std::vector<int>& task_batches, const std::vector<std::string>& rank_tasks,
                                  int global_batch, int dp, int microbatches);

}  // namespace moebench
