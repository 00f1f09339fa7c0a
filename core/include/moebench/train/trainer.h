#pragma once
// The training loop: data -> forward -> backward -> clip -> AdamW, with warmup + cosine LR,
// held-out evaluation every train.eval_every steps, and checkpoints. Batches depend only on
// (seed, step), so a resumed run replays exactly the batches of an uninterrupted one.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/data/corpus.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/optim/adamw.h"

namespace moebench {

struct StepStats {
  long step = 0;        // 0-based index of the step just done
  LossParts loss;
  float lr = 0.0f;
  double grad_norm = 0.0;  // before clipping
  double ms = 0.0;
  double tokens_per_s = 0.0;
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
};

struct TrainCallbacks {
  std::function<void(const StepStats&)> on_step;
  std::function<void(const EvalStats&)> on_eval;
  std::function<void(const std::string&)> on_checkpoint;
};

class Trainer {
 public:
  // out_dir: where checkpoints/ goes. Loads the data (DataError on bad data).
  Trainer(const Config& cfg, std::string out_dir);
  ~Trainer();

  // Continues from a checkpoint (see resolve_checkpoint_dir); returns the step it resumes at.
  long resume(const std::string& path);
  // Trains from the current step up to (not including) step `stop_at` (-1: train.steps).
  // The LR schedule always spans train.steps. Evaluates and checkpoints at the end.
  TrainSummary run(long stop_at, const TrainCallbacks& cb = {});
  // Mean loss over train.eval_batches fixed held-out batches.
  float evaluate();
  std::string save(const std::string& dir) const;

  long step() const { return step_; }
  MoeGpt& model() { return *model_; }
  const TokenCorpus& corpus() const { return corpus_; }

 private:
  Config cfg_;
  std::string out_dir_;
  TokenCorpus corpus_;
  std::unique_ptr<MoeGpt> model_;
  std::unique_ptr<AdamW> opt_;
  long step_ = 0;
  std::vector<int32_t> inputs_, targets_;
};

}  // namespace moebench
