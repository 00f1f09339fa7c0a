#pragma once
// RankStep: one rank's training step (and evaluation batch) as the step builder's graph
// (train/step_builder.h) with this rank's actions: the model's passes (MoeGpt::add_forward /
// add_backward), the pipeline's point-to-point transfers, the tail's reductions, the gradient
// norm and clipping (Distributed::tail_action), the loss's reductions, the optimizer and the SSD
// tier's update. The
// calling thread builds the graph, submits it and waits: before adding a micro-batch's forward
// for the pass before it (a forward takes its activation set's state over while it is added), at
// each MoE block's routing point and for the step's end.
// Pipeline: between stages the activations go forward and their gradients backward over the
// pipeline group (blocking sends on the sending rank's comm worker, a receive in the receiving
// rank's chain; each micro-batch's backward accumulates the gradient of (its loss) / microbatches,
// so a step is the gradient of the mean over micro-batches). Under tensor parallelism every TP
// rank of a stage holds the same activation, so each sends only its 1/t slice to its peer of the
// next stage, which all-gathers the slices over its TP group (Megatron's scatter/gather,
// Narayanan et al. 2021 §4.1): the link carries the activation once instead of t times. The
// waits for a neighbour are the comm spans "pp.forward" / "pp.backward" of the host role: the
// pipeline bubble, as measured (store/run_summary.h reports it).
#include <functional>
#include <memory>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/runtime/executor.h"
#include "moebench/tensor/device_array.h"
#include "moebench/train/step_builder.h"

namespace moebench {

class Communicator;
class Distributed;

class RankStep : public StepActions {
 public:
  // dist: null for a one-rank run. loss_weight: multi-task data's share of the global batch
  // (trainer.cpp; 0: the plain DP mean). Throws std::invalid_argument when the model's activation
  // sets do not match the schedule.
  RankStep(MoeGpt& model, const Config& cfg, Distributed* dist, double loss_weight);
  ~RankStep() override;

  struct Result {
    LossParts loss;         // ce over the global batch (the last stage's, averaged over DP), aux, total
    double grad_norm = 0;   // before clipping
  };
  // A training step over batch(m) for m < microbatches: forward and backward, the reductions,
  // clipping to max_norm (0: none) and `optimizer` (the update, run as the optimizer task);
  // with storage.sparse = "ssd" `sparse_update` adds the tier's update tasks after it.
  using SparseUpdate = std::function<TaskId(TaskGraph&, TaskId after)>;
  Result train(const std::function<MicroBatch(int)>& batch, float max_norm, std::function<void()> optimizer,
               SparseUpdate sparse_update = {});
  // Forward only, in micro-batch order; the mean cross-entropy on the last stage, 0 elsewhere.
  double evaluate(const std::function<MicroBatch(int)>& batch);
  // The graph of the last train() / evaluate(), as executed (its actions went to the executor).
  const TaskGraph& graph() const { return graph_; }

  void iteration_start(TaskGraph& g, int micro, TaskId after) override;
  TaskId forward(TaskGraph& g, int micro, TaskId after) override;
  TaskId backward(TaskGraph& g, int micro, TaskId after, bool last_micro) override;
  std::function<void()> action(StepOp op, int micro, int layer) override;
  TaskId sparse_update(TaskGraph& g, TaskId after) override;

 private:
  int slot(int micro) const;
  size_t message_floats(int micro) const;
  void recv(float* buf, int micro, bool forward);
  void send(int micro, bool forward);
  void run(TaskId end);
  void record_phases();
  // The step's loss (idempotent): the passes' mean, then its sums over PP and DP up to `stage`
  // (1 pp, 2 dp) — each reduction runs in its own task when its group has several ranks.
  void advance_loss(int stage);

  MoeGpt& model_;
  Config cfg_;  // the run's (one rank: the whole model on it)
  Distributed* dist_;
  Executor& ex_;
  Topology topology_;
  double loss_weight_;
  int micro_;
  bool evaluating_ = false;
  std::function<MicroBatch(int)> batch_;
  std::function<void()> optimizer_;
  SparseUpdate sparse_update_;
  float max_norm_ = 0.0f;
  Communicator* pp_ = nullptr;  // the stages' host values (the loss)
  Communicator* tp_ = nullptr;  // the TP group's activations; null when the stage is not tensor-parallel
  TaskGraph graph_;
  TaskId pass_end_;               // the last pass's last task
  void wait_for_pass(TaskGraph& g);  // submits g and waits for pass_end_ (if any)
  // In the model's memory: the received activation / output gradient (whole), and this TP
  // rank's received slice (the all-gather's input).
  DeviceArray<float> in_, dout_, slice_;
  double loss_[2] = {0.0, 0.0};   // ce, aux
  int loss_stage_ = -1;
  double norm_ = 0.0;  // one rank: the gradient norm (else Distributed's)
};

}  // namespace moebench
