#include "moebench/train/trainer.h"

#include <chrono>
#include <cstdio>

#include "moebench/config/config_loader.h"
#include "moebench/data/batch_sampler.h"
#include "moebench/tensor/matmul.h"
#include "moebench/train/checkpoint.h"

namespace moebench {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
}  // namespace

Trainer::Trainer(const Config& cfg, std::string out_dir) : cfg_(cfg), out_dir_(std::move(out_dir)) {
  set_num_threads(cfg_.run.threads);
  corpus_ = load_corpus(cfg_.data, cfg_.model.vocab_size, cfg_.model.seq_len, cfg_.run.seed);
  model_ = std::make_unique<MoeGpt>(cfg_.model, cfg_.moe);
  model_->init(cfg_.run.seed);
  AdamWHyper h{cfg_.train.beta1, cfg_.train.beta2, cfg_.train.eps, cfg_.train.weight_decay};
  opt_ = std::make_unique<AdamW>(model_->params().size(), h);
  const size_t n = (size_t)cfg_.train.batch_size * cfg_.model.seq_len;
  inputs_.resize(n);
  targets_.resize(n);
}

Trainer::~Trainer() = default;

long Trainer::resume(const std::string& path) {
  const std::string dir = resolve_checkpoint_dir(path);
  CheckpointState state = load_checkpoint(dir, model_->params(), *opt_);
  step_ = state.step;
  return step_;
}

float Trainer::evaluate() {
  const int B = cfg_.train.batch_size, T = cfg_.model.seq_len;
  double sum = 0.0;
  for (int i = 0; i < cfg_.train.eval_batches; ++i) {
    sample_batch(corpus_.val, B, T, cfg_.run.seed, (uint64_t)i, kEvalStream, inputs_.data(), targets_.data());
    sum += model_->forward(inputs_.data(), targets_.data(), B, T).ce;
  }
  return (float)(sum / cfg_.train.eval_batches);
}

std::string Trainer::save(const std::string& dir) const {
  save_checkpoint(dir, model_->params(), *opt_, {step_, config_to_json(cfg_).dump()});
  return dir;
}

TrainSummary Trainer::run(long stop_at, const TrainCallbacks& cb) {
  const TrainConfig& tc = cfg_.train;
  const int B = tc.batch_size, T = cfg_.model.seq_len;
  if (stop_at < 0 || stop_at > tc.steps) stop_at = tc.steps;
  TrainSummary summary;
  const auto t_start = Clock::now();
  long tokens = 0;
  auto checkpoint = [&] {
    char name[32];
    std::snprintf(name, sizeof name, "step_%06ld", step_);
    summary.last_checkpoint = save(out_dir_ + "/checkpoints/" + name);
    if (cb.on_checkpoint) cb.on_checkpoint(summary.last_checkpoint);
  };
  auto eval = [&] {
    summary.final_eval_loss = evaluate();
    if (cb.on_eval) cb.on_eval({step_, summary.final_eval_loss});
  };
  while (step_ < stop_at) {
    const auto t0 = Clock::now();
    sample_batch(corpus_.train, B, T, cfg_.run.seed, (uint64_t)step_, kTrainStream, inputs_.data(), targets_.data());
    model_->params().zero_grad();
    StepStats st;
    st.step = step_;
    st.loss = model_->forward(inputs_.data(), targets_.data(), B, T);
    model_->backward();
    st.grad_norm = clip_grad_norm(model_->params(), tc.grad_clip);
    st.lr = lr_at(step_, tc.lr, tc.warmup_steps, tc.steps, tc.min_lr_ratio);
    opt_->step(model_->params(), st.lr, step_ + 1);
    ++step_;
    st.ms = seconds_since(t0) * 1e3;
    st.tokens_per_s = (double)B * T / (st.ms / 1e3);
    tokens += (long)B * T;
    summary.final_train_loss = st.loss.ce;
    if (cb.on_step) cb.on_step(st);
    if (tc.eval_every > 0 && step_ % tc.eval_every == 0 && step_ < stop_at) eval();
    if (tc.checkpoint_every > 0 && step_ % tc.checkpoint_every == 0 && step_ < stop_at) checkpoint();
  }
  summary.seconds = seconds_since(t_start);
  summary.steps_done = step_;
  summary.tokens_per_s = summary.seconds > 0 ? (double)tokens / summary.seconds : 0.0;
  eval();
  checkpoint();
  return summary;
}

}  // namespace moebench
