#pragma once
// The training loop: data -> forward -> backward -> clip -> AdamW, with warmup + cosine LR,
// held-out evaluation every train.eval_every steps, and checkpoints. Batches depend only on
// (seed, step), so a resumed run replays exactly the batches of an uninterrupted one.
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/data/corpus.h"
#include "moebench/dist/task_assignment.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/optim/adamw.h"
#include "moebench/runtime/executor.h"
#include "moebench/storage/sparse_step_stats.h"

namespace moebench {

// What every rank did in one step, gathered on rank 0 when recording is on (empty elsewhere).
struct StepRecords {
  std::vector<Span> spans;                         // all ranks' spans (on span-sampled steps)
  std::vector<std::vector<uint64_t>> traffic;      // [rank][peer] bytes sent this step
  std::vector<int> moe_blocks;                     // block index of each MoE block
  std::vector<std::vector<std::vector<int64_t>>> routing;  // [rank][moe block][expert] kept tokens
  std::vector<std::vector<std::vector<StrategyDecision>>> decisions;  // [rank][moe block] (MoeStrategy::decisions)
};

struct StepStats {
  long step = 0;        // 0-based index of the step just done
  LossParts loss;
  float lr = 0.0f;
  double grad_norm = 0.0;  // before clipping
  double ms = 0.0;
  double tokens_per_s = 0.0;     // global batch tokens / step time
  double comm_ms = 0.0;          // communication not hidden by computation (runtime/span.h exposed_comm_seconds)
  uint64_t bytes_intra = 0, bytes_inter = 0;  // sent by this rank during the step
  std::optional<SparseStepStats> sparse;  // storage.sparse = "ssd": the SSD tier's counters, all ranks
  StepRecords records;
};

struct EvalStats {
  long step = 0;  // evaluated after this many steps
  float loss = 0.0f;
};

struct TrainSummary {
  long steps_done = 0;
  float final_train_loss = 0.0f;
  float final_eval_loss = 0.0f;
  double seconds = 0.0;
  double tokens_per_s = 0.0;
  std::string last_checkpoint;
  bool interrupted = false;  // stopped early by the stop flag (SIGINT/SIGTERM)
};

// A step's training loss was NaN or infinite and train.allow_nonfinite is false: thrown by
// Trainer::run on every rank at once, after that step's on_step, with no checkpoint written.
// what(): "step 3: the training loss is nan (train.lr = 1e+30): the run stops here; lower
// train.lr, or set train.allow_nonfinite = true to keep training".
class NonFiniteLoss : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Called on every rank (a CLI prints on rank 0 only).
struct TrainCallbacks {
  std::function<void(const StepStats&)> on_step;
  std::function<void(const EvalStats&)> on_eval;
  std::function<void(const std::string&)> on_checkpoint;
};

class Distributed;
class DenseShards;
class Communicator;
class ExpertStateTier;
class RankStep;
class DeviceRuntime;

// Fault injection for testing failure handling: MOEBENCH_FAULT="RANK:STEP" makes world rank
// RANK throw at step STEP (1-based, as printed and stored) as a real failure would.
class Trainer {
 public:
  // out_dir: where checkpoints/ goes. Loads the data (DataError on bad data). With a world
  // communicator of more than one rank the run is distributed (collective construction):
  // [parallel] pp stages x dp x tp ranks, MoE blocks expert-parallel through [strategy] name;
  // train.batch_size is the global batch, split into parallel.microbatches micro-batches
  // (train/rank_step.h: the step builder's graph of the stage's schedule) and over the data-parallel ranks;
  // with data.tasks split by task over the ranks of data.rank_tasks (dist/task_assignment.h).
  Trainer(const Config& cfg, std::string out_dir, Communicator* world = nullptr);
  // The same on a given device (train/device.h), instead of the one run.device names: how the
  // tests run the GPU path's wiring on a device without a GPU.
  Trainer(const Config& cfg, std::string out_dir, Communicator* world, std::unique_ptr<DeviceRuntime> device);
  ~Trainer();

  // Continues from a checkpoint (see resolve_checkpoint_dir); returns the step it resumes at.
  long resume(const std::string& path);
  // Trains from the current step up to (not including) step `stop_at` (-1: train.steps).
  // The LR schedule always spans train.steps. Evaluates and checkpoints at the end.
  TrainSummary run(long stop_at, const TrainCallbacks& cb = {});
  // Mean loss over train.eval_batches fixed held-out batches. With a stop flag set, a stop
  // request ends it early (checked before every batch): NaN, and run() stops as after a step.
  float evaluate();
  std::string save(const std::string& dir) const;
  // Records StepStats::records (spans on every spans_every-th step) for a run store.
  void set_recording(bool on, int spans_every) { record_ = on, spans_every_ = spans_every; }
  // Checked before every step and every evaluation batch (all ranks agree: a flag on any rank
  // stops all of them at the same point); run() then checkpoints and returns with
  // interrupted = true.
  void set_stop_flag(const std::atomic<bool>* flag) { stop_flag_ = flag; }
  Executor& executor();
  std::string topology_description() const;

  long step() const { return step_; }
  bool is_main() const;  // rank 0 (prints, writes files)
  Distributed* distributed() { return dist_.get(); }
  // storage.dense = "zero3": the sharded dense parameters and the optimizer (storage/dense_shards.h);
  // nullptr when replicated or on one rank.
  DenseShards* dense_shards() const;
  MoeGpt& model() { return *model_; }
  // The last training step's (or evaluation batch's) task graph, as executed (train/rank_step.h).
  const TaskGraph& step_graph() const;
  const TokenCorpus& corpus() const { return corpus_; }
  // With data.tasks: each data-parallel rank's tasks (data.rank_tasks, or the elastic proposal
  // when it is empty); empty without tasks.
  const std::vector<std::vector<int>>& task_assignment() const { return assignment_; }

 private:
  Config cfg_;
  std::string out_dir_;
  // Where the model lives; declared before dist_ and the model, destroyed after them (their
  // executor and communicators may be the device's).
  std::unique_ptr<DeviceRuntime> device_;
  std::unique_ptr<Distributed> dist_;
  int micro_ = 1;           // micro-batches per step
  int micro_batch_ = 0;     // sequences of a micro-batch on this DP rank
  int dp_rank_ = 0;
  // The rows of each micro-batch on this rank: one slice of the one task, or (data.tasks) a
  // slice per task the rank trains (dist/task_assignment.h). task < 0: the mixture corpus.
  std::vector<TaskRowSlice> slices_;
  std::vector<std::vector<int>> assignment_;
  // This rank's rows / the global batch with data.tasks (its gradients and losses are weighted
  // by it, so any assignment gives the global-batch mean); 0 without tasks (plain DP mean).
  double rank_share_ = 0.0;
  void set_up_rows(int dp_size);
  double dp_mean_loss(double v);  // over the DP group, weighted by rank_share_ with tasks
  // Samples every micro-batch: the task slices from the task streams, else from `split`.
  void sample(const std::vector<int32_t>& split, const std::vector<std::vector<int32_t>>& task_splits, uint64_t index,
              uint64_t stream);
  uint64_t first_row(int m) const;  // this rank's first row of micro-batch m in the global batch
  MicroBatch micro_batch(int m, long step) const;
  TokenCorpus corpus_;
  std::unique_ptr<MoeGpt> model_;
  std::unique_ptr<AdamW> opt_;
  std::unique_ptr<ExpertStateTier> tier_;  // storage.sparse = "ssd": the experts' states (AdamW keeps the dense ones)
  std::unique_ptr<RankStep> step_runner_;  // after the model: destroyed first (it waits on its executor)
  long step_ = 0;
  std::vector<int32_t> inputs_, targets_;
  long fault_step_ = -1;
  bool record_ = false;
  int spans_every_ = 1;
  const std::atomic<bool>* stop_flag_ = nullptr;
  bool eval_stopped_ = false;  // the last evaluate() was ended by a stop request
  bool stop_requested();
  StepRecords collect_records(const std::vector<Span>& spans, bool with_spans);  // MOEBENCH_FAULT: throw on this rank at this step (failure-handling tests)
};

}  // namespace moebench
