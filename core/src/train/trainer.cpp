#include "moebench/train/device.h"
#include "moebench/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <thread>

#include "moebench/config/config_loader.h"
#include "moebench/data/batch_sampler.h"
#include "moebench/dist/communicator.h"
#include "moebench/dist/parallel_layout.h"
#include "moebench/tensor/matmul.h"
#include "moebench/train/checkpoint.h"
#include "moebench/model/pipeline_schedule.h"
#include "moebench/train/rank_step.h"
#include "moebench/train/step_records_codec.h"
#include "moebench/train/distributed.h"
#include "moebench/storage/expert_state_tier.h"

namespace moebench {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// NonFiniteLoss's message: the step (1-based, as printed), the loss and what to change.
std::string nonfinite_loss_text(const StepStats& st, const Config& cfg) {
  const float loss = std::isfinite(st.loss.ce) ? st.loss.total : st.loss.ce;
  const double bad = std::isnan(loss) ? std::fabs((double)loss) : (double)loss;  // "nan", never "-nan"
  char text[320];
  std::snprintf(text, sizeof text,
                "step %ld: the training loss is %g (train.lr = %g): the run stops here, without a checkpoint; "
                "lower train.lr or resume from a finite checkpoint, or set train.allow_nonfinite = true to keep "
                "training",
                st.step + 1, bad, (double)cfg.train.lr);
  return text;
}
}  // namespace

Trainer::Trainer(const Config& cfg, std::string out_dir, Communicator* world)
    : Trainer(cfg, std::move(out_dir), world, nullptr) {}

Trainer::Trainer(const Config& cfg, std::string out_dir, Communicator* world, std::unique_ptr<DeviceRuntime> device)
    : cfg_(cfg), out_dir_(std::move(out_dir)), device_(std::move(device)) {
  check_run_device(cfg_);
  ExpertShard shard;
  TpShard tp;
  const PipeSchedule schedule = cfg_.parallel.schedule;
  micro_ = cfg_.parallel.microbatches;
  PipeStage pipe;
  pipe.stages = cfg_.parallel.pp;
  int dp_size = 1;
  if (world && world->size() > 1) {
    dist_ = std::make_unique<Distributed>(*world, cfg_);
    shard = dist_->shard();
    tp = dist_->tp_shard();
    tp.vocab = cfg_.parallel.vocab_parallel;
    dp_size = dist_->dp_size();
    dp_rank_ = dist_->dp_rank();
    pipe.stage = dist_->pp_rank();
  } else if (pipe.stages != 1) {
    throw std::invalid_argument("parallel.pp = " + std::to_string(pipe.stages) + " needs as many ranks");
  }
  set_up_rows(dp_size);
  // One rank: the whole model on one stage (stage_layers, if given, must still add up).
  const ParallelLayout layout = dist_ ? dist_->layout()
                                      : ParallelLayout(ParallelSizes{.layers = cfg_.model.layers,
                                                                     .stage_layers = cfg_.parallel.stage_layers});
  const BlockRange blocks = layout.stage_blocks(pipe.stage);
  pipe.first_block = blocks.first;
  pipe.end_block = blocks.end;
  pipe.in_flight = pipeline_slots(schedule, pipe.stages, pipe.stage, micro_);
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
  EmbedShard embed;  // MoESys §IV-C: embed.wte's columns over the DP group
  if (cfg_.model.embedding_partition && dist_) embed = {dist_->dp_rank(), dist_->dp_size()};
  if (!device_) device_ = std::make_unique<DeviceRuntime>(cfg_, dist_ ? dist_->local_rank() : 0);
  model_ = std::make_unique<MoeGpt>(cfg_.model, cfg_.moe, shard, tp, pipe, embed, device_->backend());
  if (Executor* ex = device_->executor()) model_->use_executor(*ex);  // the GPU's streams
  model_->init(cfg_.run.seed);
  if (dist_) dist_->attach(*model_, cfg_, *device_);
  model_->set_routing(cfg_.moe.routing, cfg_.run.seed);
  step_runner_ = std::make_unique<RankStep>(*model_, cfg_, dist_.get(), rank_share_);
  AdamWHyper h{cfg_.train.beta1, cfg_.train.beta2, cfg_.train.eps, cfg_.train.weight_decay};
  if (cfg_.storage.sparse == SparseStorage::ssd) {
    tier_ = open_expert_tier(*model_, cfg_.storage, dist_ ? dist_->rank() : 0, h);
    opt_ = std::make_unique<AdamW>(model_->params(), h, [](const ParamView& v) { return !is_expert_tensor(v.name); });
    opt_->set_offloaded(tier_.get());
  } else if (!dense_shards()) {  // zero3: its ShardedAdamW
    opt_ = std::make_unique<AdamW>(model_->params(), h);
  }
  const size_t n = (size_t)micro_ * micro_batch_ * cfg_.model.seq_len;
  inputs_.resize(n);
  targets_.resize(n);
}

// Micro-batch m of the global batch is rows [m * B / M, (m + 1) * B / M), split over the DP
// ranks, so a micro-batch's aux-loss statistics (all-reduced over DP) are those of the same
// rows on one rank with the same parallel.microbatches. With data.tasks each task's rows are
// split that way over the task's ranks (dist/task_assignment.h), and a rank's gradient is
// scaled by dp x its share of the global batch before the DP mean (the hook's all-reduce x 1/dp,
// the expert all-reduce, the aux loss's globalised statistics alike), so the result is the
// gradient of the global-batch mean loss whatever the assignment.
void Trainer::set_up_rows(int dp_size) {
  const DataConfig& d = cfg_.data;
  if (micro_ < 1) throw std::invalid_argument("parallel.microbatches must be at least 1");
  if (d.tasks.empty()) {
    if (cfg_.train.batch_size % (dp_size * micro_) != 0)
      throw std::invalid_argument("train.batch_size = " + std::to_string(cfg_.train.batch_size) +
                                  " does not divide into " + std::to_string(dp_size) + " data-parallel ranks x " +
                                  std::to_string(micro_) + " micro-batches");
    micro_batch_ = cfg_.train.batch_size / (dp_size * micro_);
    TaskRowSlice s;
    s.task = -1;
    s.rows = micro_batch_;
    s.first_row = (long)dp_rank_ * micro_batch_;
    s.row_step = cfg_.train.batch_size / micro_;
    slices_ = {s};
    return;
  }
  // Checked at load for run.ranks (config_validate_tasks.cpp); checked again for the launch.
  assignment_ = resolve_assignment(d.tasks, d.rank_tasks, dp_size, micro_);
  slices_ = task_row_slices(d.tasks, assignment_, dp_rank_, micro_);
  micro_batch_ = 0;
  for (const TaskRowSlice& s : slices_) micro_batch_ += s.rows;
  rank_share_ = (double)micro_batch_ * micro_ / (double)cfg_.train.batch_size;
}

double Trainer::dp_mean_loss(double v) {
  if (!dist_) return v;
  return rank_share_ > 0 ? dist_->dp_weighted_mean(v, rank_share_) : dist_->dp_mean(v);
}

void Trainer::sample(const std::vector<int32_t>& split, const std::vector<std::vector<int32_t>>& task_splits,
                     uint64_t index, uint64_t stream) {
  const int T = cfg_.model.seq_len;
  const size_t n = (size_t)micro_batch_ * T;
  for (int m = 0; m < micro_; ++m) {
    size_t at = (size_t)m * n;
    for (const TaskRowSlice& s : slices_) {
      const std::vector<int32_t>& tokens = s.task < 0 ? split : task_splits.at((size_t)s.task);
      sample_batch(tokens, s.rows, T, cfg_.run.seed, index, stream, inputs_.data() + at, targets_.data() + at,
                   (uint64_t)(s.first_row + (long)m * s.row_step));
      at += (size_t)s.rows * T;
    }
  }
}

// The first slice's first row (synthetic routing keys tokens from it; with merged tasks the
// later slices' tokens continue the count, so forced routing is per rank, not per row).
uint64_t Trainer::first_row(int m) const {
  return (uint64_t)(slices_.front().first_row + (long)m * slices_.front().row_step);
}

MicroBatch Trainer::micro_batch(int m, long step) const {
  const int T = cfg_.model.seq_len;
  const size_t n = (size_t)micro_batch_ * T;
  return {inputs_.data() + m * n, targets_.data() + m * n, micro_batch_, T, step, (long)first_row(m) * T, micro_ > 1 ? m : -1};
}

Trainer::~Trainer() = default;

DenseShards* Trainer::dense_shards() const { return dist_ ? dist_->dense_shards() : nullptr; }

bool Trainer::is_main() const { return !dist_ || dist_->rank() == 0; }

long Trainer::resume(const std::string& path) {
  const std::string dir = resolve_checkpoint_dir(path);
  DenseShards* zero = dense_shards();
  std::unique_ptr<AdamW> whole;  // zero3: the whole moments, then this rank's shards of them
  if (zero) whole = std::make_unique<AdamW>(model_->params(), AdamWHyper{});
  CheckpointState state = load_checkpoint(dir, model_->params(), zero ? *whole : *opt_,
                                          [&](const std::string& name) { return model_->held_elsewhere(name); });
  if (zero) zero->load_state(*whole);
  step_ = state.step;
  if (tier_) tier_->take_step_stats();  // rebuilding the records is no step's traffic
  return step_;
}

float Trainer::evaluate() {
  double sum = 0.0;
  eval_stopped_ = false;
  for (int i = 0; i < cfg_.train.eval_batches; ++i) {
    if (stop_flag_ && stop_requested()) {  // every rank asks at the same batch (collective)
      eval_stopped_ = true;
      return std::numeric_limits<float>::quiet_NaN();
    }
    sample(corpus_.val, corpus_.task_val, (uint64_t)i, kEvalStream);
    sum += step_runner_->evaluate([&](int m) { return micro_batch(m, i); });
  }
  double mean = sum / cfg_.train.eval_batches;
  if (dist_) {
    dist_->pp_sum(&mean, 1);  // the last stage's; the others add 0
    mean = dp_mean_loss(mean);
  }
  return (float)mean;
}

std::string Trainer::save(const std::string& dir) const {
  const std::string config_json = config_to_json(cfg_).dump();
  if (DenseShards* zero = dense_shards()) dist_->save(dir, *model_, zero->whole_state(), step_, config_json);
  else if (dist_) dist_->save(dir, *model_, *opt_, step_, config_json);
  else save_checkpoint(dir, model_->params(), *opt_, {step_, config_json});
  return dir;
}

const TaskGraph& Trainer::step_graph() const { return step_runner_->graph(); }

Executor& Trainer::executor() { return dist_ ? dist_->executor() : model_->executor(); }

std::string Trainer::topology_description() const {
  return dist_ ? dist_->describe() : "1 rank";
}

bool Trainer::stop_requested() {
  const bool local = stop_flag_ && stop_flag_->load();
  return dist_ ? dist_->any(local) : local;
}

StepRecords Trainer::collect_records(const std::vector<Span>& spans, bool with_spans) {
  StepRecords rec;
  std::vector<std::vector<int>> routing;  // every MoE block; empty for those on other stages
  std::vector<std::vector<StrategyDecision>> decisions;
  std::vector<int> moe_blocks = cfg_.moe.moe_layers;
  std::sort(moe_blocks.begin(), moe_blocks.end());
  for (int b : moe_blocks) {
    rec.moe_blocks.push_back(b);
    routing.push_back(model_->expert_counts(b));
    decisions.push_back(model_->strategy_decisions(b));
  }
  const std::vector<uint64_t> traffic = dist_ ? dist_->meter().per_peer() : std::vector<uint64_t>(1, 0);
  std::vector<uint8_t> mine = encode_rank_records(with_spans ? spans : std::vector<Span>{}, traffic, routing, decisions);
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
  auto eval = [&] {  // a stop request ends it early: then nothing is reported
    const float loss = evaluate();
    if (eval_stopped_) {
      summary.interrupted = true;
      return;
    }
    summary.final_eval_loss = loss;
    if (cb.on_eval) cb.on_eval({step_, summary.final_eval_loss});
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
    sample(corpus_.train, corpus_.task_train, (uint64_t)step_, kTrainStream);
    model_->params().zero_grad();
    model_->begin_step();
    StepStats st;
    st.step = step_;
    st.lr = lr_at(step_, tc.lr, tc.warmup_steps, tc.steps, tc.min_lr_ratio);
    // The step's graph (train/step_builder.h): passes, reductions, norm, loss, optimizer.
    std::function<void()> optimizer;
    if (DenseShards* zero = dense_shards())  // zero3: this rank's dense shards and its experts
      optimizer = [zero, lr = st.lr, t = step_ + 1] { zero->optimizer_step(lr, t); };
    else
      optimizer = [this, lr = st.lr, t = step_ + 1] { opt_->step(model_->params(), lr, t); };
    RankStep::SparseUpdate sparse_update;  // storage.sparse = "ssd": the experts through their records
    if (tier_)
      sparse_update = [this, lr = st.lr, t = step_ + 1](TaskGraph& g, TaskId after) { return tier_->add_update(g, after, lr, t); };
    const RankStep::Result r =
        step_runner_->train([&](int m) { return micro_batch(m, step_); }, tc.grad_clip, optimizer, sparse_update);
    st.loss = r.loss;
    st.grad_norm = r.grad_norm;
    if (tier_) {
      st.sparse = tier_->take_step_stats();
      if (dist_) dist_->world_sum(*st.sparse);
    }
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
    const bool nonfinite = !std::isfinite(st.loss.ce) || !std::isfinite(st.loss.total);
    if (!tc.allow_nonfinite && (dist_ ? dist_->any(nonfinite) : nonfinite))
      throw NonFiniteLoss(nonfinite_loss_text(st, cfg_));
    if (tc.eval_every > 0 && step_ % tc.eval_every == 0 && step_ < stop_at) {
      eval();
      if (summary.interrupted) break;
    }
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
