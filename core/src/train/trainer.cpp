#include "moebench/train/device.h"
#include "moebench/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "moebench/config/config_loader.h"
#include "moebench/data/batch_sampler.h"
#include "moebench/dist/communicator.h"
#include "moebench/tensor/matmul.h"
#include "moebench/train/checkpoint.h"
#include "moebench/train/step_records_codec.h"
#include "moebench/train/distributed.h"

namespace moebench {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
}  // namespace

Trainer::Trainer(const Config& cfg, std::string out_dir, Communicator* world)
    : cfg_(cfg), out_dir_(std::move(out_dir)) {
  check_run_device(cfg_.run.device);
  ExpertShard shard;
  TpShard tp;
  local_batch_ = cfg_.train.batch_size;
  if (world && world->size() > 1) {
    dist_ = std::make_unique<Distributed>(*world, cfg_);
    shard = dist_->shard();
    tp = dist_->tp_shard();
    local_batch_ = cfg_.train.batch_size / dist_->dp_size();
    first_row_ = (uint64_t)dist_->dp_rank() * local_batch_;
  }
  int threads = cfg_.run.threads;
  if (dist_ && threads == 0)  // share the cores among the ranks of this machine
    threads = std::max(1, (int)std::thread::hardware_concurrency() / dist_->ranks_on_host());
  set_num_threads(threads);
  if (const char* fault = std::getenv("MOEBENCH_FAULT")) {
    int rank = -1;
    long step = -1;
    if (std::sscanf(fault, "%d:%ld", &rank, &step) != 2)
      throw std::invalid_argument(std::string("MOEBENCH_FAULT must be RANK:STEP, got \"") + fault + "\"");
    if (rank == (dist_ ? dist_->rank() : 0)) fault_step_ = step;
  }
  corpus_ = load_corpus(cfg_.data, cfg_.model.vocab_size, cfg_.model.seq_len, cfg_.run.seed);
  model_ = std::make_unique<MoeGpt>(cfg_.model, cfg_.moe, shard, tp);
  model_->init(cfg_.run.seed);
  if (dist_) dist_->attach(*model_, cfg_);
  model_->set_routing(parse_routing(cfg_.moe.routing), cfg_.run.seed,
                      (long)first_row_ * cfg_.model.seq_len);
  AdamWHyper h{cfg_.train.beta1, cfg_.train.beta2, cfg_.train.eps, cfg_.train.weight_decay};
  opt_ = std::make_unique<AdamW>(model_->params().size(), h);
  const size_t n = (size_t)local_batch_ * cfg_.model.seq_len;
  inputs_.resize(n);
  targets_.resize(n);
}

Trainer::~Trainer() = default;

bool Trainer::is_main() const { return !dist_ || dist_->rank() == 0; }

long Trainer::resume(const std::string& path) {
  const std::string dir = resolve_checkpoint_dir(path);
  CheckpointState state = load_checkpoint(dir, model_->params(), *opt_);
  step_ = state.step;
  return step_;
}

float Trainer::evaluate() {
  const int T = cfg_.model.seq_len;
  double sum = 0.0;
  for (int i = 0; i < cfg_.train.eval_batches; ++i) {
    sample_batch(corpus_.val, local_batch_, T, cfg_.run.seed, (uint64_t)i, kEvalStream, inputs_.data(),
                 targets_.data(), first_row_);
    sum += model_->forward(inputs_.data(), targets_.data(), local_batch_, T, i).ce;
  }
  const double mean = sum / cfg_.train.eval_batches;
  return (float)(dist_ ? dist_->dp_mean(mean) : mean);
}

std::string Trainer::save(const std::string& dir) const {
  const std::string config_json = config_to_json(cfg_).dump();
  if (dist_) dist_->save(dir, *model_, *opt_, step_, config_json);
  else save_checkpoint(dir, model_->params(), *opt_, {step_, config_json});
  return dir;
}

Executor& Trainer::executor() {
  if (dist_) return dist_->executor();
  if (!local_executor_) local_executor_ = std::make_unique<Executor>(0);
  return *local_executor_;
}

std::string Trainer::topology_description() const {
  return dist_ ? dist_->describe() : "1 rank";
}

bool Trainer::stop_requested() {
  const bool local = stop_flag_ && stop_flag_->load();
  return dist_ ? dist_->any(local) : local;
}

StepRecords Trainer::collect_records(const std::vector<Span>& spans, bool with_spans) {
  StepRecords rec;
  std::vector<std::vector<int>> routing;
  for (int b = 0; b < cfg_.model.layers; ++b)
    if (const MoeLayer* layer = model_->moe_layer(b)) {
      rec.moe_blocks.push_back(b);
      routing.push_back(layer->routing().counts);
    }
  const std::vector<uint64_t> traffic = dist_ ? dist_->meter().per_peer() : std::vector<uint64_t>(1, 0);
  std::vector<uint8_t> mine = encode_rank_records(with_spans ? spans : std::vector<Span>{}, traffic, routing);
  std::vector<std::vector<uint8_t>> all;
  if (dist_) all = dist_->gather_to_root(mine);  // empty on ranks other than 0
  else all.push_back(std::move(mine));
  for (const auto& buf : all) decode_rank_records(buf, rec);
  return rec;
}

TrainSummary Trainer::run(long stop_at, const TrainCallbacks& cb) {
  const TrainConfig& tc = cfg_.train;
  const int T = cfg_.model.seq_len;
  if (stop_at < 0 || stop_at > tc.steps) stop_at = tc.steps;
  TrainSummary summary;
  const auto t_start = Clock::now();
  long tokens = 0;
  Executor& ex = executor();
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
  // The main thread's phases (host spans); the work inside records its own compute and comm spans.
  auto phase = [&](const char* name, const std::function<void()>& fn) {
    ex.run_inline(name, StreamRole::host, TaskCategory::compute, fn);
  };
  while (step_ < stop_at) {
    if (stop_requested()) {
      summary.interrupted = true;
      break;
    }
    const auto t0 = Clock::now();
    const double step_start = ex.now();
    if (step_ + 1 == fault_step_)  // steps are numbered from 1, as printed and stored
      throw std::runtime_error("fault injected by MOEBENCH_FAULT at step " + std::to_string(fault_step_));
    if (dist_) dist_->meter().reset();
    ex.set_step(step_);
    ex.take_spans();
    sample_batch(corpus_.train, local_batch_, T, cfg_.run.seed, (uint64_t)step_, kTrainStream, inputs_.data(),
                 targets_.data(), first_row_);
    model_->params().zero_grad();
    StepStats st;
    st.step = step_;
    phase("forward", [&] { st.loss = model_->forward(inputs_.data(), targets_.data(), local_batch_, T, step_); });
    phase("backward", [&] { model_->backward(); });
    if (dist_) {
      dist_->finish_gradients(*model_);
      st.grad_norm = dist_->clip_gradients(*model_, tc.grad_clip);
      st.loss.ce = (float)dist_->dp_mean(st.loss.ce);  // aux is already global-batch
      st.loss.total = st.loss.ce + cfg_.moe.aux_loss_weight * st.loss.aux;
    } else {
      st.grad_norm = clip_grad_norm(model_->params(), tc.grad_clip);
    }
    st.lr = lr_at(step_, tc.lr, tc.warmup_steps, tc.steps, tc.min_lr_ratio);
    ex.run_inline("optimizer", StreamRole::compute, TaskCategory::compute,
                  [&] { opt_->step(model_->params(), st.lr, step_ + 1); }, -1, adamw_flops(model_->params().size()));
    Span whole;
    whole.role = StreamRole::host;
    whole.name = "step";
    whole.start = step_start;
    whole.end = ex.now();
    ex.add_span(whole);
    st.ms = seconds_since(t0) * 1e3;
    st.tokens_per_s = (double)tc.batch_size * T / (st.ms / 1e3);
    if (dist_) {
      st.bytes_intra = dist_->meter().bytes(LinkClass::intra_node);
      st.bytes_inter = dist_->meter().bytes(LinkClass::inter_node);
    }
    const std::vector<Span> spans = ex.take_spans();
    st.comm_ms = exposed_comm_seconds(spans, step_start, whole.end) * 1e3;  // comm not hidden by compute
    if (record_) st.records = collect_records(spans, step_ % spans_every_ == 0);
    ++step_;
    tokens += (long)tc.batch_size * T;
    summary.final_train_loss = st.loss.ce;
    if (cb.on_step) cb.on_step(st);
    if (tc.eval_every > 0 && step_ % tc.eval_every == 0 && step_ < stop_at) eval();
    if (tc.checkpoint_every > 0 && step_ % tc.checkpoint_every == 0 && step_ < stop_at) checkpoint();
  }
  summary.seconds = seconds_since(t_start);
  summary.steps_done = step_;
  summary.tokens_per_s = summary.seconds > 0 ? (double)tokens / summary.seconds : 0.0;
  if (!summary.interrupted) eval();
  checkpoint();
  return summary;
}

}  // namespace moebench
