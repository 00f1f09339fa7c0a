#pragma once
// PipelineStep: one training step's (or one evaluation batch's) micro-batches through this
// rank's pipeline stage, in the order of its schedule (model/pipeline_schedule.h). Between
// stages the activations go forward and their gradients backward point-to-point over the
// pipeline group (non-blocking sends, so no schedule deadlocks; a send buffer is reused only
// after its send completed). Each forward and backward is a host phase span "forward" /
// "backward" with the micro-batch in Span::chunk (the timeline's warm-up, steady 1F1B and
// cool-down); the waits for a neighbour are comm spans "pp.recv_forward" / "pp.recv_backward":
// the pipeline bubble, as measured (store/run_summary.h reports it). Each
// micro-batch's backward accumulates the gradient of (its loss) / microbatches, so a step is
// the gradient of the mean over micro-batches; with one stage this is plain gradient
// accumulation, with one micro-batch a plain step.
// Under tensor parallelism every TP rank of a stage holds the same activation, so each sends only
// its 1/t slice to its peer of the next stage, which all-gathers the slices over its TP group
// (Megatron's scatter/gather optimisation, Narayanan et al. 2021 §4.1): the inter-stage link
// carries the activation once instead of t times. The all-gather is the comm span "pp.allgather".
#include <functional>
#include <memory>
#include <vector>

#include "moebench/model/moe_gpt.h"
#include "moebench/model/pipeline_schedule.h"
#include "moebench/runtime/executor.h"

namespace moebench {

class Communicator;
class Request;

class PipelineStep {
 public:
  // pp: the pipeline group (rank = stage), nullptr or size 1 for a single stage. tp: this
  // stage's tensor-parallel group (nullptr or size 1: whole activations are sent). executor:
  // records the p2p spans (nullptr: none). role: the stream role of the p2p links.
  PipelineStep(MoeGpt& model, Communicator* pp, Communicator* tp, Executor* executor, PipeSchedule schedule,
               int microbatches, StreamRole role);
  ~PipelineStep();

  // Forward and backward of every micro-batch (batch(m) gives micro-batch m). Returns this
  // stage's losses as means over the micro-batches: ce on the last stage (0 elsewhere), aux
  // of this stage's MoE blocks.
  LossParts train(const std::function<MicroBatch(int)>& batch);
  // Multiplies the gradients train() produces (not the loss it returns): with multi-task data a
  // rank's share of the global batch (trainer.cpp), 1 otherwise.
  void set_loss_scale(float s) { rank_loss_scale_ = s; }
  // Forward only, in micro-batch order; the mean cross-entropy on the last stage, 0 elsewhere.
  double evaluate(const std::function<MicroBatch(int)>& batch);

 private:
  void recv(float* buf, size_t n, int peer, int tag, const char* name);
  void send(std::vector<float>& buf, std::unique_ptr<Request>& req, size_t n, int peer, int tag, const char* name);
  void wait_sends();
  // Runs fn as the host phase `name` ("forward" / "backward") of micro-batch `micro` (Span::chunk).
  template <class Fn>
  void timed(const char* name, int micro, Fn&& fn);

  MoeGpt& model_;
  Communicator* pp_;
  Communicator* tp_;  // null when the stage is not tensor-parallel
  Executor* executor_;
  PipeSchedule schedule_;
  int micro_;
  float rank_loss_scale_ = 1.0f;
  StreamRole role_;
  std::vector<float> in_, dout_;                   // received activation / output gradient
  std::vector<float> slice_;                       // this TP rank's received slice (all-gather input)
  std::vector<std::vector<float>> out_, din_;      // per slot: sent activation / input gradient
  std::vector<std::unique_ptr<Request>> out_req_, din_req_;
};

}  // namespace moebench
