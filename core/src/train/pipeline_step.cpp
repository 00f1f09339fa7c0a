#include "moebench/train/pipeline_step.h"

#include <algorithm>
#include <stdexcept>

#include "moebench/dist/communicator.h"

namespace moebench {
namespace {
// Tags on the pipeline group (below MPI's guaranteed 32767): activations, gradients and
// evaluation activations; messages between two stages with one tag arrive in order anyway.
constexpr int kForwardTag = 1000, kBackwardTag = 3000, kEvalTag = 5000, kTagSpan = 2000;
int tag(int base, int micro) { return base + micro % kTagSpan; }
}  // namespace

PipelineStep::PipelineStep(MoeGpt& model, Communicator* pp, Communicator* tp, Executor* executor,
                           PipeSchedule schedule, int microbatches, StreamRole role)
    : model_(model),
      pp_(pp),
      tp_(tp && tp->size() > 1 ? tp : nullptr),
      executor_(executor),
      schedule_(schedule),
      micro_(microbatches),
      role_(role) {
  const PipeStage& st = model_.pipe();
  if (micro_ < 1) throw std::invalid_argument("parallel.microbatches must be at least 1");
  if (st.stages > 1 && (!pp_ || pp_->size() != st.stages || pp_->rank() != st.stage))
    throw std::invalid_argument("PipelineStep: stage " + std::to_string(st.stage) + " of " +
                                std::to_string(st.stages) + " needs the pipeline group with that rank and size");
  if (st.in_flight != pipeline_slots(schedule_, st.stages, st.stage, micro_))
    throw std::invalid_argument("PipelineStep: the model keeps " + std::to_string(st.in_flight) +
                                " activation sets, the schedule needs " +
                                std::to_string(pipeline_slots(schedule_, st.stages, st.stage, micro_)));
  out_.resize((size_t)st.in_flight);
  din_.resize((size_t)st.in_flight);
  out_req_.resize((size_t)st.in_flight);
  din_req_.resize((size_t)st.in_flight);
}

PipelineStep::~PipelineStep() {
  try {
    wait_sends();
  } catch (...) {
  }
}

void PipelineStep::recv(float* buf, size_t n, int peer, int tag, const char* name) {
  if (!tp_) {
    auto fn = [&] { pp_->recv(buf, n, DType::f32, peer, tag); };
    if (executor_) executor_->run_inline(name, role_, TaskCategory::comm, fn);
    else fn();
    return;
  }
  // This TP rank's slice from its peer, then the whole activation from the TP group's slices.
  const size_t part = n / (size_t)tp_->size();
  slice_.resize(part);
  auto get = [&] { pp_->recv(slice_.data(), part, DType::f32, peer, tag); };
  auto gather = [&] { tp_->all_gather(slice_.data(), buf, part, DType::f32); };
  if (!executor_) {
    get();
    gather();
    return;
  }
  executor_->run_inline(name, role_, TaskCategory::comm, get);
  executor_->run_inline("pp.allgather", role_, TaskCategory::comm, gather, -1, 0.0,
                        (n - part) * sizeof(float));  // a ring: t - 1 slices to the next TP rank
}

void PipelineStep::send(std::vector<float>& buf, std::unique_ptr<Request>& req, size_t n, int peer, int tag,
                        const char* name) {
  const size_t t = tp_ ? (size_t)tp_->size() : 1, part = n / t, first = tp_ ? part * (size_t)tp_->rank() : 0;
  auto fn = [&] { req = pp_->isend(buf.data() + first, part, DType::f32, peer, tag); };
  if (executor_) executor_->run_inline(name, role_, TaskCategory::comm, fn, -1, 0.0, part * sizeof(float));
  else fn();
}

template <class Fn>
void PipelineStep::timed(const char* name, int micro, Fn&& fn) {
  if (!executor_) return fn();
  Span span;
  span.role = StreamRole::host;
  span.name = name;
  span.chunk = micro;
  span.start = executor_->now();
  fn();
  span.end = executor_->now();
  executor_->add_span(std::move(span));
}

void PipelineStep::wait_sends() {
  for (auto* reqs : {&out_req_, &din_req_})
    for (auto& r : *reqs)
      if (r) {
        r->wait();
        r.reset();
      }
}

LossParts PipelineStep::train(const std::function<MicroBatch(int)>& batch) {
  const PipeStage& st = model_.pipe();
  const size_t C = (size_t)model_.model_config().hidden;
  const float scale = 1.0f / (float)micro_;
  const float grad_scale = rank_loss_scale_ / (float)micro_;  // the backward's; the reported loss is unscaled
  LossParts sum;
  for (const PipeOp& op : pipeline_ops(schedule_, st.stages, st.stage, micro_)) {
    const MicroBatch mb = batch(op.micro);
    const size_t n = (size_t)mb.B * mb.T * C, slot = (size_t)(op.micro % st.in_flight);
    if (op.kind == PipeOp::Kind::forward) {
      if (!st.first()) {
        in_.resize(n);
        recv(in_.data(), n, st.stage - 1, tag(kForwardTag, op.micro), "pp.recv_forward");
      }
      LossParts p;
      timed("forward", op.micro, [&] { p = model_.forward_micro((int)slot, mb, st.first() ? nullptr : in_.data()); });
      sum.ce += p.ce * scale;
      sum.aux += p.aux * scale;
      if (!st.last()) {
        if (out_req_[slot]) out_req_[slot]->wait();  // the slot's previous micro-batch has left
        out_[slot].assign(model_.stage_output((int)slot), model_.stage_output((int)slot) + n);
        send(out_[slot], out_req_[slot], n, st.stage + 1, tag(kForwardTag, op.micro), "pp.send_forward");
      }
    } else {
      if (!st.last()) {
        dout_.resize(n);
        recv(dout_.data(), n, st.stage + 1, tag(kBackwardTag, op.micro), "pp.recv_backward");
      }
      timed("backward", op.micro,
         [&] { model_.backward_micro((int)slot, st.last() ? nullptr : dout_.data(), grad_scale, op.micro == micro_ - 1, mb.chunk); });
      if (!st.first()) {
        if (din_req_[slot]) din_req_[slot]->wait();
        din_[slot].assign(model_.input_grad(), model_.input_grad() + n);
        send(din_[slot], din_req_[slot], n, st.stage - 1, tag(kBackwardTag, op.micro), "pp.send_backward");
      }
    }
  }
  wait_sends();
  sum.total = sum.ce + model_.moe_config().aux_loss_weight * sum.aux;
  return sum;
}

double PipelineStep::evaluate(const std::function<MicroBatch(int)>& batch) {
  const PipeStage& st = model_.pipe();
  const size_t C = (size_t)model_.model_config().hidden;
  double ce = 0.0;
  for (int m = 0; m < micro_; ++m) {
    const MicroBatch mb = batch(m);
    const size_t n = (size_t)mb.B * mb.T * C;
    if (!st.first()) {
      in_.resize(n);
      recv(in_.data(), n, st.stage - 1, tag(kEvalTag, m), "pp.recv_forward");
    }
    ce += model_.forward_micro(0, mb, st.first() ? nullptr : in_.data()).ce;
    if (!st.last()) {
      if (out_req_[0]) out_req_[0]->wait();
      out_[0].assign(model_.stage_output(0), model_.stage_output(0) + n);
      send(out_[0], out_req_[0], n, st.stage + 1, tag(kEvalTag, m), "pp.send_forward");
    }
  }
  wait_sends();
  return ce / micro_;
}

}  // namespace moebench
