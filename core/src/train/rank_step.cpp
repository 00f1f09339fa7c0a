#include "moebench/train/rank_step.h"

#include <algorithm>
#include <map>
#include <string>
#include <stdexcept>
#include <utility>

#include "moebench/dist/communicator.h"
#include "moebench/model/pipeline_schedule.h"
#include "moebench/model/stage_graph.h"
#include "moebench/optim/adamw.h"
#include "moebench/train/distributed.h"

namespace moebench {
namespace {

// The config a rank without a world runs: whatever its [parallel] and [cluster] say, the whole
// model on one rank (Trainer).
Config one_rank(Config cfg) {
  cfg.run.ranks = 1;
  cfg.cluster = ClusterConfig{};  // no links: the cluster's devices and switches do not apply
  cfg.cluster.devices_per_node = 1;
  cfg.parallel.tp = cfg.parallel.pp = 1;
  cfg.parallel.ep = 0;
  cfg.parallel.stage_layers.clear();
  cfg.parallel.vocab_parallel = false;
  cfg.moe.expert_tp = false;
  cfg.model.embedding_partition = false;
  return cfg;
}
// Tags on the pipeline links (below MPI's guaranteed 32767; NCCL has none and matches in order):
// activations, gradients and evaluation activations; each link carries one direction, in order.
constexpr int kForwardTag = 1000, kBackwardTag = 3000, kEvalTag = 5000, kTagSpan = 2000;
int tag(int base, int micro) { return base + micro % kTagSpan; }
}  // namespace

RankStep::RankStep(MoeGpt& model, const Config& cfg, Distributed* dist, double loss_weight)
    : model_(model),
      cfg_(dist ? cfg : one_rank(cfg)),
      dist_(dist),
      ex_(dist ? dist->executor() : model.executor()),
      topology_(dist ? dist->topology() : Topology::virtual_blocks(1, 1)),
      loss_weight_(loss_weight),
      micro_(cfg.parallel.microbatches),
      in_(model.params().backend(), "the pipeline's received activations"),
      dout_(model.params().backend(), "the pipeline's received output gradients"),
      slice_(model.params().backend(), "the pipeline's received tensor-parallel slices") {
  const PipeStage& st = model_.pipe();
  if (micro_ < 1) throw std::invalid_argument("parallel.microbatches must be at least 1");
  const int slots = pipeline_slots(cfg.parallel.schedule, st.stages, st.stage, micro_);
  if (st.in_flight != slots)
    throw std::invalid_argument("RankStep: the model keeps " + std::to_string(st.in_flight) +
                                " activation sets, the schedule needs " + std::to_string(slots));
  if (dist_) {
    pp_ = &dist_->groups().pp();
    if (dist_->groups().tp_size() > 1) tp_ = &dist_->tp_activations();
  }
}

RankStep::~RankStep() {
  try {
    ex_.synchronize();
  } catch (...) {
  }
}

int RankStep::slot(int micro) const { return evaluating_ ? 0 : micro % model_.pipe().in_flight; }

// A forward takes an activation set over (its tokens, its layers' routing and strategy state)
// while it is added, from its iteration start on: the passes before it have ended first (the
// main thread waits).
void RankStep::wait_for_pass(TaskGraph& g) {
  if (!pass_end_.valid()) return;
  ex_.submit(g);
  ex_.wait(g, std::exchange(pass_end_, TaskId{}));
}

void RankStep::iteration_start(TaskGraph& g, int micro, TaskId after) {
  wait_for_pass(g);
  model_.add_iteration_start(g, slot(micro), after);
}

TaskId RankStep::forward(TaskGraph& g, int micro, TaskId after) {
  wait_for_pass(g);
  const MicroBatch mb = batch_(micro);
  float* in = in_.ensure_data((size_t)mb.B * mb.T * cfg_.model.hidden);
  return pass_end_ = model_.add_forward(g, slot(micro), mb, model_.pipe().first() ? nullptr : in, after);
}

TaskId RankStep::backward(TaskGraph& g, int micro, TaskId after, bool last_micro) {
  const MicroBatch mb = batch_(micro);
  float* dout = dout_.ensure_data((size_t)mb.B * mb.T * cfg_.model.hidden);
  const int dp = dist_ ? dist_->dp_size() : 1;
  const float grad_scale = (loss_weight_ > 0 ? (float)(loss_weight_ * dp) : 1.0f) / (float)micro_;
  return pass_end_ = model_.add_backward(g, slot(micro), model_.pipe().last() ? nullptr : dout, grad_scale,
                                         last_micro, mb.chunk, after);
}

// The micro-batch's activation (or its gradient): B x T x C floats.
size_t RankStep::message_floats(int micro) const {
  const MicroBatch mb = batch_(micro);
  return (size_t)mb.B * mb.T * cfg_.model.hidden;
}

// This TP rank's slice from its peer stage (the whole activation without TP), over the link of
// its direction.
void RankStep::recv(float* buf, int micro, bool forward) {
  const size_t n = message_floats(micro), part = n / (tp_ ? (size_t)tp_->size() : 1);
  const Distributed::StageLink link = dist_->stage_link(forward, false);
  const int t = tag(evaluating_ ? kEvalTag : forward ? kForwardTag : kBackwardTag, micro);
  if (!tp_) return link.comm->recv(buf, n, DType::f32, link.peer, t);
  link.comm->recv(slice_.ensure_data(part), part, DType::f32, link.peer, t);
}

void RankStep::send(int micro, bool forward) {
  const size_t n = message_floats(micro);
  const size_t t = tp_ ? (size_t)tp_->size() : 1, part = n / t, first = tp_ ? part * (size_t)tp_->rank() : 0;
  const float* data = forward ? model_.stage_output(slot(micro)) : model_.input_grad(slot(micro));
  const Distributed::StageLink link = dist_->stage_link(forward, true);
  link.comm->send(data + first, part, DType::f32, link.peer,
                  tag(evaluating_ ? kEvalTag : forward ? kForwardTag : kBackwardTag, micro));
}

std::function<void()> RankStep::action(StepOp op, int micro, int layer) {
  switch (op) {
    case StepOp::recv_forward: return [this, micro] { recv(in_.ensure_data(message_floats(micro)), micro, true); };
    case StepOp::recv_backward: return [this, micro] { recv(dout_.ensure_data(message_floats(micro)), micro, false); };
    case StepOp::gather_forward:
      return [this, micro] { tp_->all_gather(slice_.data(), in_.data(), message_floats(micro) / tp_->size(), DType::f32); };
    case StepOp::gather_backward:
      return [this, micro] { tp_->all_gather(slice_.data(), dout_.data(), message_floats(micro) / tp_->size(), DType::f32); };
    case StepOp::send_forward: return [this, micro] { send(micro, true); };
    case StepOp::send_backward: return [this, micro] { send(micro, false); };
    case StepOp::loss_pp: return [this] { advance_loss(1); };
    case StepOp::loss_dp: return [this] { advance_loss(2); };
    case StepOp::optimizer: return optimizer_;
    default:
      if (!dist_) {  // one rank: the norm and the clipping of the whole arena
        if (op == StepOp::grad_clip) return [this] { norm_ = clip_grad_norm(model_.params(), max_norm_); };
        return [] {};
      }
      return dist_->tail_action(op, layer, model_, max_norm_);
  }
}

void RankStep::advance_loss(int stage) {
  while (loss_stage_ < stage) {
    switch (++loss_stage_) {
      case 0: {  // the passes' mean over the micro-batches, as floats in pass order
        const float scale = 1.0f / (float)micro_;
        LossParts sum;
        for (const LossParts& p : model_.pass_losses()) {
          sum.ce += p.ce * scale;
          sum.aux += p.aux * scale;
        }
        loss_[0] = sum.ce;  // ce: the last stage's; aux: each stage's blocks
        loss_[1] = sum.aux;
        break;
      }
      case 1:
        if (dist_ && pp_->size() > 1) pp_->all_reduce(loss_, 2, DType::f64);
        break;
      case 2:
        if (!dist_) break;
        if (loss_weight_ > 0) loss_[0] *= loss_weight_;  // aux is already global-batch
        if (dist_->dp_size() > 1) dist_->groups().dp().all_reduce(loss_, 1, DType::f64);
        if (loss_weight_ <= 0) loss_[0] /= dist_->dp_size();
        break;
    }
  }
}

void RankStep::run(TaskId end) {
  ex_.submit(graph_);
  ex_.wait(graph_, end);
  ex_.synchronize();
}

// The host phases "forward" / "backward" of each micro-batch (Span::chunk): from its pass's first
// stage task to its last (the timeline's warm-up, steady 1F1B and cool-down); and "grad.wait"
// (comm): from the end of the last backward to the end of the last gradient bucket's reduction,
// the time the step's tail waited for them.
void RankStep::record_phases() {
  std::map<std::string, bool> stage_tasks;  // name -> backward
  for (int op = 0; op <= (int)StageOp::stage_input_grad; ++op)
    if (std::string(stage_op_name((StageOp)op)) != "tp.allreduce")
      stage_tasks[stage_op_name((StageOp)op)] = op >= (int)StageOp::stage_output_grad;
  std::map<std::pair<int, bool>, std::pair<double, double>> phases;  // (chunk, backward) -> [start, end]
  std::vector<Span> spans = ex_.take_spans();
  double backward_end = 0.0, buckets_end = 0.0;
  for (const Span& s : spans) {
    if (s.name == "grad.allreduce" || s.name == "grad.reduce_scatter") buckets_end = std::max(buckets_end, s.end);
    auto it = stage_tasks.find(s.name);
    if (it == stage_tasks.end() || s.category != TaskCategory::compute) continue;
    auto [p, fresh] = phases.try_emplace({s.chunk, it->second}, s.start, s.end);
    if (!fresh) p->second = {std::min(p->second.first, s.start), std::max(p->second.second, s.end)};
    if (it->second) backward_end = std::max(backward_end, s.end);
  }
  for (Span& s : spans) ex_.add_span(std::move(s));
  for (const auto& [key, when] : phases) {
    Span phase;
    phase.role = StreamRole::host;
    phase.name = key.second ? "backward" : "forward";
    phase.chunk = key.first;
    phase.start = when.first;
    phase.end = when.second;
    ex_.add_span(std::move(phase));
  }
  if (backward_end > 0.0 && buckets_end > backward_end) {
    Span wait;
    wait.role = StreamRole::host;
    wait.category = TaskCategory::comm;
    wait.name = "grad.wait";
    wait.start = backward_end;
    wait.end = buckets_end;
    ex_.add_span(std::move(wait));
  }
}

TaskId RankStep::sparse_update(TaskGraph& g, TaskId after) { return sparse_update_ ? sparse_update_(g, after) : after; }

RankStep::Result RankStep::train(const std::function<MicroBatch(int)>& batch, float max_norm,
                                 std::function<void()> optimizer, SparseUpdate sparse_update) {
  evaluating_ = false;
  batch_ = batch;
  max_norm_ = max_norm;
  optimizer_ = std::move(optimizer);
  sparse_update_ = std::move(sparse_update);
  loss_stage_ = -1;
  norm_ = 0.0;
  pass_end_ = {};
  graph_ = TaskGraph();
  run(add_training_step(graph_, cfg_, dist_ ? dist_->rank() : 0, topology_, this));
  record_phases();
  advance_loss(2);
  Result r;
  r.loss.ce = (float)loss_[0];
  r.loss.aux = (float)loss_[1];
  r.loss.total = r.loss.ce + cfg_.moe.aux_loss_weight * r.loss.aux;
  r.grad_norm = dist_ ? dist_->grad_norm() : norm_;
  return r;
}

double RankStep::evaluate(const std::function<MicroBatch(int)>& batch) {
  evaluating_ = true;
  batch_ = batch;
  pass_end_ = {};
  graph_ = TaskGraph();
  model_.reset_graph();
  run(add_evaluation_step(graph_, cfg_, dist_ ? dist_->rank() : 0, topology_, *this));
  double ce = 0.0;
  for (const LossParts& p : model_.pass_losses()) ce += p.ce;
  return ce / micro_;
}

}  // namespace moebench
