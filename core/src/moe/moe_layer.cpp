#include "moebench/moe/moe_layer.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "moebench/dist/communicator.h"
#include "moebench/moe/block_graph.h"
#include "moebench/runtime/thread_executor.h"

namespace moebench {
namespace {

void check_shape(const MoeLayerShape& s, size_t experts, bool distributed) {
  if (s.N < 0 || s.C <= 0 || s.F <= 0 || s.E <= 0)
    throw std::invalid_argument("MoeLayer: bad shape (N >= 0, C, F, E > 0 required)");
  if (s.K < 1 || s.K > s.E)
    throw std::invalid_argument("MoeLayer: top_k = " + std::to_string(s.K) +
                                " must be in [1, experts = " + std::to_string(s.E) + "]");
  if (!distributed && experts != (size_t)s.E)
    throw std::invalid_argument("MoeLayer: " + std::to_string(experts) +
                                " expert parameter sets for " + std::to_string(s.E) + " experts");
}

}  // namespace

MoeLayer::MoeLayer() : rows_(make_host_moe_rows()) {}
MoeLayer::MoeLayer(std::unique_ptr<MoeRows> rows) : rows_(std::move(rows)) {
  if (!rows_) throw std::invalid_argument("MoeLayer: no rows");
}
MoeLayer::~MoeLayer() = default;

void MoeLayer::set_strategy(std::unique_ptr<MoeStrategy> strategy, MoeContext ctx) {
  strategy_ = std::move(strategy);
  ctx_ = std::move(ctx);
  ctx_.ops = &rows_->row_ops();
  ctx_.sync_group();
  policy_ = strategy_->choice_policy(ctx_);
  handle_.reset();
}

Executor& MoeLayer::executor() {
  if (ctx_.executor) return *ctx_.executor;
  if (!own_executor_) own_executor_ = std::make_unique<ThreadExecutor>(ctx_.ep_rank);
  return *own_executor_;
}

// Router, dispatch layout and the gathered rows (the rows'); the kept counts on the host.
void MoeLayer::route(const float* x, const float* router_w, const int* forced_experts) {
  rows_->route(x, router_w, s_, forced_experts, policy_);
  if (stats_ && !strategy_) rows_->globalize_aux(*stats_);  // with a strategy: moe.aux_stats
  const std::vector<int>& off = rows_->offsets();
  kept_.resize(s_.E);
  for (int e = 0; e < s_.E; ++e) kept_[e] = off[e + 1] - off[e];
}

float MoeLayer::forward(float* out, const float* x, const float* router_w,
                        const std::vector<ExpertParams>& experts, const MoeLayerShape& s,
                        const int* forced_experts) {
  have_forward_ = false;  // until this forward completes
  check_shape(s, experts.size(), strategy_ != nullptr);
  s_ = s;
  if (strategy_) {
    Executor& ex = executor();
    fwd_graph_ = TaskGraph();
    if (std::exchange(start_pending_, false)) add_iteration_start(fwd_graph_, {});
    ex.wait(fwd_graph_, forward_tasks(fwd_graph_, ex, {}, out, x, router_w, forced_experts));
    ex.release(fwd_graph_);
    have_forward_ = true;
    return rows_->aux();
  }
  route(x, router_w, forced_experts);
  rows_->experts_forward(experts, s.F);
  rows_->combine(out);
  have_forward_ = true;
  return rows_->aux();
}

TaskId MoeLayer::forward_tasks(TaskGraph& g, Executor& ex, TaskId after, float* out, const float* x,
                               const float* router_w, const int* forced_experts) {
  const int E = s_.E, P = ctx_.ep_size;
  const BlockDims d{s_.N, s_.C, E, s_.K};
  handle_.reset();
  my_counts_.assign(E, 0);
  counts_.assign((size_t)P * E, 0);
  const int first = (int)g.size();
  const TaskId routed = add_router_task(g, ctx_, d, {after}, [this, x, router_w, forced_experts] {
    route(x, router_w, forced_experts);
    for (int e = 0; e < s_.E; ++e) my_counts_[e] = kept_[e];
  });
  const bool exchange = strategy_->exchanges_counts();
  const TaskId counted = exchange ? add_counts_task(g, ctx_, d, routed, my_counts_.data(), counts_.data()) : routed;
  TaskId aux;
  if (stats_ && stats_->size() > 1) {
    if (ctx_.stats_size != stats_->size())
      throw std::logic_error("MoeLayer: the block context's DP group does not match its statistics communicator");
    aux = add_aux_stats_task(g, ctx_, d, routed, [this](Communicator& dp) { rows_->globalize_aux(dp); });
  }
  prioritise_comm(g, first, *strategy_);
  ex.submit(g);
  ex.wait(g, counted);
  if (!exchange) std::copy(my_counts_.begin(), my_counts_.end(), counts_.begin() + (long)ctx_.ep_rank * E);
  ExchangeCounts counts;
  counts.P = P;
  counts.E = E;
  counts.rows = counts_;
  handle_ = strategy_->layout(counts, ctx_);
  MoeBuffers buf;
  buf.xg = rows_->xg();
  buf.y = rows_->y();
  const int built = (int)g.size();
  const std::vector<TaskId> done = strategy_->build(g, *handle_, MoePass::forward, {counted}, &buf, ctx_);
  TaskId combined = add_combine_task(g, ctx_, d, MoePass::forward, done, [this, out] { rows_->combine(out); });
  if (partial_group(*strategy_, ctx_).size > 1)
    combined = add_partial_reduce_task(g, *strategy_, ctx_, d, MoePass::forward, {combined}, out);
  combined = add_forward_end(g, combined, aux);
  prioritise_comm(g, built, *strategy_);
  ex.submit(g);
  return combined;
}

std::vector<TaskId> MoeLayer::add_iteration_start(TaskGraph& g, TaskId after) {
  if (!strategy_) return {};
  return strategy_->build_iteration_start(g, {after}, true, ctx_);
}

TaskId MoeLayer::add_forward(TaskGraph& g, Executor& ex, TaskId after, float* out, const float* x,
                             const float* router_w, const MoeLayerShape& s, const int* forced_experts) {
  if (!strategy_) throw std::logic_error("MoeLayer::add_forward needs a strategy");
  check_shape(s, ctx_.local.size(), true);
  s_ = s;
  const TaskId end = forward_tasks(g, ex, after, out, x, router_w, forced_experts);
  have_forward_ = true;  // queued: backward's tasks run after it
  return end;
}

TaskId MoeLayer::add_backward(TaskGraph& g, TaskId after, float* dx, float* drouter_w, const float* dout,
                              float aux_weight, const float* x, const float* router_w) {
  if (!have_forward_ || !strategy_) throw std::logic_error("MoeLayer::add_backward without a forward of a strategy");
  return backward_tasks(g, after, dx, drouter_w, dout, aux_weight, x, router_w, true);
}

void MoeLayer::backward(float* dx, float* drouter_w, const std::vector<ExpertParams>& dexperts,
                        const float* dout, float aux_weight, const float* x,
                        const float* router_w, const std::vector<ExpertParams>& experts) {
  if (!have_forward_) throw std::logic_error("MoeLayer::backward without forward");
  check_shape(s_, experts.size(), strategy_ != nullptr);
  if (strategy_) {
    Executor& ex = executor();
    bwd_graph_ = TaskGraph();
    const TaskId end = backward_tasks(bwd_graph_, {}, dx, drouter_w, dout, aux_weight, x, router_w, false);
    ex.submit(bwd_graph_);
    ex.wait(bwd_graph_, end);
    ex.release(bwd_graph_);
    return;
  }
  if (dexperts.size() != experts.size())
    throw std::invalid_argument("MoeLayer::backward: dexperts and experts differ in size");
  rows_->combine_backward(dout);
  rows_->experts_backward(dexperts, experts);
  rows_->scatter_router_backward(dx, drouter_w, aux_weight, x, router_w);
}

TaskId MoeLayer::backward_tasks(TaskGraph& g, TaskId after, float* dx, float* drouter_w, const float* dout,
                                float aux_weight, const float* x, const float* router_w, bool overwrite_dx) {
  const BlockDims d{s_.N, s_.C, s_.E, s_.K};
  const long NC = (long)s_.N * s_.C;
  // Sized before the graph is built: the strategy binds its actions to these buffers.
  rows_->prepare_backward();
  const int first = (int)g.size();
  const TaskId start = add_combine_task(g, ctx_, d, MoePass::backward, {after}, [this, dout, dx, overwrite_dx, NC] {
    if (overwrite_dx) rows_->row_ops().zero(dx, NC);
    rows_->combine_backward(dout);
  });
  MoeBuffers buf;
  buf.dy = rows_->dy();
  buf.dxg = rows_->dxg();
  const std::vector<TaskId> done = strategy_->build(g, *handle_, MoePass::backward, {start}, &buf, ctx_);
  TaskId end;
  const PartialGroup partial = partial_group(*strategy_, ctx_);
  if (partial.size == 1) {
    end = add_router_backward_task(g, ctx_, d, done, [this, dx, drouter_w, aux_weight, x, router_w] {
      rows_->scatter_router_backward(dx, drouter_w, aux_weight, x, router_w);
    });
  } else {  // this rank's share of dx (its experts or slices; the aux term on rank 0 only), summed over the group
    const float aux_here = partial.rank == 0 ? aux_weight : 0.0f;
    float* part = rows_->scratch(NC);  // the all-reduce binds its address now
    const TaskId routed = add_router_backward_task(g, ctx_, d, done, [this, part, drouter_w, aux_here, x, router_w, NC] {
      rows_->row_ops().zero(part, NC);
      rows_->scatter_router_backward(part, drouter_w, aux_here, x, router_w);
    });
    const TaskId reduced = add_partial_reduce_task(g, *strategy_, ctx_, d, MoePass::backward, {routed}, part);
    end = add_grad_accumulate_task(g, ctx_, d, {reduced}, [this, dx, part, NC] { rows_->row_ops().add(dx, part, NC); });
  }
  prioritise_comm(g, first, *strategy_);
  return end;
}

void globalize_aux(Routing& r, Communicator& group) {
  const int E = r.E;
  std::vector<double> selected(E), prob_sums(E, 0.0);
  for (int e = 0; e < E; ++e) {
    selected[e] = r.selected[e];
    for (int n = 0; n < r.N; ++n) prob_sums[e] += r.probs[(long)n * E + e];
  }
  AuxStats g = global_aux_stats(selected, r.N, prob_sums, r.K, group);
  r.f = std::move(g.f);
  r.P = std::move(g.P);
  r.aux = g.aux;
}

AuxStats global_aux_stats(const std::vector<double>& selected, double N, const std::vector<double>& prob_sums, int K,
                          Communicator& group) {
  const int E = (int)selected.size();
  if (prob_sums.size() != selected.size()) throw std::invalid_argument("global_aux_stats: selections and sums differ in E");
  std::vector<double> stats(E + 1 + E);  // selections, tokens, probability sums
  std::copy(selected.begin(), selected.end(), stats.begin());
  stats[E] = N;
  std::copy(prob_sums.begin(), prob_sums.end(), stats.begin() + E + 1);
  group.all_reduce(stats.data(), stats.size(), DType::f64);
  const double n_total = stats[E];
  AuxStats out;
  out.f.resize(E);
  out.P.resize(E);
  double aux = 0.0;
  for (int e = 0; e < E; ++e) {
    out.f[e] = n_total > 0 ? (float)(stats[e] / (n_total * K)) : 0.0f;
    out.P[e] = n_total > 0 ? (float)(stats[E + 1 + e] / n_total) : 0.0f;
    aux += n_total > 0 ? (double)out.f[e] * (stats[E + 1 + e] / n_total) : 0.0;
  }
  out.aux = (float)(E * aux);
  return out;
}

}  // namespace moebench
