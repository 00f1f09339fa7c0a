// data_centric: Janus (SIGCOMM'23) data-centric expert parallelism: tokens stay, experts are
// pulled with one-sided gets under a credit-based buffer and their gradients pushed back
// with one-sided accumulates. See strategies/data_centric.h for the protocol. This file: the
// pull schedule (credits, prefetch, forward, backward); data_centric_node_cache.cpp: the
// node cache and PCIe pairing; data_centric_cost.cpp: the prediction.
#include "data_centric_detail.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "moebench/dist/communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/strategies/janus_order.h"

namespace moebench {

using data_centric_detail::check_contiguous;
using data_centric_detail::phase;
using data_centric_detail::view;

DataCentric::DataCentric(DataCentricOptions options) : opts_(options) {}
DataCentric::~DataCentric() {
  // Never free a buffer with a get in flight.
  if (params_win_ && !prefetch_.empty()) {
    try {
      params_win_->flush_all();
    } catch (...) {
    }
  }
}

void DataCentric::ensure_windows(MoeContext& ctx) {
  if (params_win_) {
    if (win_params_base_ != ctx.local[0].w1 || win_grads_base_ != ctx.local_grads[0].w1)
      throw std::logic_error("data_centric: the expert arena moved after the windows were created");
    return;
  }
  const size_t count = (size_t)L_ * expert_floats_;
  params_win_ = ctx.ep->create_window(ctx.local[0].w1, count, DType::f32);
  grads_win_ = ctx.ep->create_window(ctx.local_grads[0].w1, count, DType::f32);
  win_params_base_ = ctx.local[0].w1;
  win_grads_base_ = ctx.local_grads[0].w1;
}

int DataCentric::configure(MoeContext& ctx) {
  Communicator& ep = *ctx.ep;
  const int P = ep.size(), me = ep.rank(), E = ctx.experts, C = ctx.C, F = ctx.F;
  if (E % P != 0)
    throw std::invalid_argument("MoE block " + std::to_string(ctx.layer) + ": " + std::to_string(E) +
                                " experts do not divide over " + std::to_string(P) + " EP ranks");
  const int L = E / P;
  if (L < 1 || (int)ctx.local.size() != L || (int)ctx.local_grads.size() != L || ctx.first_local != me * L)
    throw std::invalid_argument("data_centric: rank " + std::to_string(me) + " must own experts [" +
                                std::to_string(me * L) + ", " + std::to_string(me * L + L) + ")");
  const int credits = opts_.credits;
  if (credits < 1) throw std::invalid_argument("data_centric: credits must be at least 1");
  check_contiguous(ctx.local, C, F, "parameters");
  check_contiguous(ctx.local_grads, C, F, "gradients");
  P_ = P, L_ = L, C_ = C, F_ = F, E_ = E, me_ = me;
  expert_floats_ = 2 * (size_t)F * C + F + C;
  stats_.credits = credits;
  return credits;
}

void DataCentric::drop_prefetch() {
  if (!prefetch_.empty() && params_win_) params_win_->flush_all();
  prefetch_.clear();
}

void DataCentric::release_cache() {
  slots_.clear();
  have_forward_ = false;
}

void DataCentric::begin_iteration(MoeContext& ctx) {
  if (!opts_.prefetch) return;
  const int credits = configure(ctx);
  release_cache();
  drop_prefetch();
  ensure_windows(ctx);
  setup_nodes(ctx);
  // Every owner has finished its previous optimizer step before any pull.
  phase(ctx, "janus.sync", TaskCategory::comm, {}, -1, -1, [&] { params_win_->barrier(); });
  const uint64_t expert_bytes = expert_floats_ * sizeof(float);
  prefetch_order_.clear();
  hier_prefetched_ = false;
  int in_use = 0;
  for (int e : order_) {
    const int owner = e / L_, j = ext_idx_[e];
    if (hier_ && j >= 0) {
      hier_prefetched_ = true;
      if (j % m_ != local_rank_) continue;  // another local rank pulls it into the node cache
      params_win_->get(ext_cache(j), expert_floats_, owner, (size_t)(e - owner * L_) * expert_floats_ * sizeof(float));
      ++stats_.node_pulls;
    } else {
      const bool internal = j < 0;
      if (internal && in_use >= credits) continue;
      auto pf = std::make_unique<Prefetched>();
      pf->e = e;
      pf->owner = owner;
      pf->credit = internal;
      pf->buf.resize(expert_floats_);
      params_win_->get(pf->buf.data(), expert_floats_, owner, (size_t)(e - owner * L_) * expert_floats_ * sizeof(float));
      if (internal) stats_.max_in_use = std::max(stats_.max_in_use, ++in_use);
      prefetch_.push_back(std::move(pf));
    }
    ++stats_.pulls;
    ++stats_.prefetched;
    stats_.bytes_pulled += expert_bytes;
    prefetch_order_.push_back(e);
  }
  stats_.last_prefetched = (int)prefetch_order_.size();
}

void DataCentric::forward(float* y, const float* xg, const std::vector<int>& offsets, MoeContext& ctx) {
  Communicator& ep = *ctx.ep;
  const int E = ctx.experts;
  if ((int)offsets.size() != E + 1) throw std::invalid_argument("data_centric: offsets size != experts + 1");
  const int credits = configure(ctx);
  const int C = C_, F = F_, L = L_;
  const uint64_t expert_bytes = expert_floats_ * sizeof(float);

  release_cache();  // a forward without backward (evaluation) leaves nothing stale
  // Prefetched experts are kept only when this forward follows their begin_iteration.
  std::vector<std::unique_ptr<Prefetched>> prefetched;
  bool hier_prefetched = false;
  if (opts_.prefetch) {
    prefetched.swap(prefetch_);
    hier_prefetched = hier_prefetched_;
  } else {
    drop_prefetch();
  }
  hier_prefetched_ = false;
  ensure_windows(ctx);  // collective, first forward only
  setup_nodes(ctx);
  // Every owner has finished updating its experts (previous optimizer step) before any pull.
  phase(ctx, "janus.sync", TaskCategory::comm, {}, -1, -1, [&] { params_win_->barrier(); });
  offsets_ = offsets;

  // Used experts: owned ones first (no credit needed), then the remote ones in pull order.
  std::vector<Slot*> remote, cached;
  auto add = [&](int e, bool owned) {
    auto s = std::make_unique<Slot>();
    s->e = e;
    s->owner = e / L;
    s->owned = owned;
    s->off = offsets[e];
    s->n = offsets[e + 1] - offsets[e];
    s->ext = ext_idx_[e];
    if (owned) {
      s->params = ctx.local[e - ctx.first_local];
      s->grads = ctx.local_grads[e - ctx.first_local];
    } else if (hier_ && s->ext >= 0) {
      s->node_cached = true;
      cached.push_back(s.get());
    } else {
      remote.push_back(s.get());
    }
    slots_.push_back(std::move(s));
  };
  for (int e = ctx.first_local; e < ctx.first_local + L; ++e)
    if (offsets[e + 1] > offsets[e]) add(e, true);
  for (int e : order_)
    if (offsets[e + 1] > offsets[e]) add(e, false);

  pulled_order_.clear();
  forward_issued_.clear();
  for (auto& s : slots_)
    if (!s->owned) pulled_order_.push_back(s->e);

  // Prefetched buffers go to their slots; unused ones are dropped (credit returned).
  int in_use = 0;
  {
    std::vector<Slot*> by_e(E, nullptr);
    for (Slot* s : remote) by_e[s->e] = s;
    bool dropped = false;
    for (auto& pf : prefetched) {
      Slot* s = by_e[pf->e];
      if (!s) {
        dropped = true;
        continue;
      }
      s->cache = std::move(pf->buf);
      s->params = view(s->cache.data(), C, F);
      s->issued = true;
      s->credit = pf->credit;
      if (s->credit) ++in_use;
    }
    if (dropped) params_win_->flush_all();  // no get in flight into a freed buffer
    prefetched.clear();
  }

  size_t next = 0;
  auto issue = [&](Slot& s) {
    s.cache.resize(expert_floats_);
    s.params = view(s.cache.data(), C, F);
    params_win_->get(s.cache.data(), expert_floats_, s.owner,
                     (size_t)(s.e - s.owner * L) * expert_floats_ * sizeof(float));
    s.issued = true;
    s.credit = true;
    ++in_use;
    stats_.max_in_use = std::max(stats_.max_in_use, in_use);
    ++stats_.pulls;
    stats_.bytes_pulled += expert_bytes;
    forward_issued_.push_back(s.e);
  };
  auto refill = [&] {
    while (next < remote.size() && (remote[next]->issued || in_use < credits)) {
      if (!remote[next]->issued) issue(*remote[next]);
      ++next;
    }
  };
  auto compute = [&](Slot& s) {
    TaskCost cost;
    cost.flops = 4.0 * (double)s.n * C * F;
    phase(ctx, "moe.experts", TaskCategory::compute, cost, s.e, -1, [&] {
      const std::vector<int> off = {0, s.n};
      s.bank.forward(y + (size_t)s.off * C, xg + (size_t)s.off * C, off, {s.params}, C, F);
    });
  };

  // Hierarchical: the node agrees which external experts it uses; each is pulled once, by
  // local rank j % m, into the node cache (unless prefetched).
  std::vector<int> node_issued, used_rows;
  copy_order_.clear();
  if (hier_) {
    node_used_.assign(ext_.size(), 0);
    if (pairing_) {
      // Every local rank's used flags (row per local rank), for the pairs' groups.
      used_rows.assign((size_t)m_ * ext_.size(), 0);
      for (Slot* s : cached) used_rows[(size_t)local_rank_ * ext_.size() + s->ext] = 1;
      node_comm_->all_reduce(used_rows.data(), used_rows.size(), DType::i32, ReduceOp::sum);
      for (int k = 0; k < m_; ++k)
        for (size_t j = 0; j < ext_.size(); ++j)
          if (used_rows[(size_t)k * ext_.size() + j]) node_used_[j] = 1;
    } else {
      for (Slot* s : cached) node_used_[s->ext] = 1;
      node_comm_->all_reduce(node_used_.data(), node_used_.size(), DType::i32, ReduceOp::max);
    }
    for (size_t j = 0; j < ext_.size(); ++j) {
      if ((int)j % m_ != local_rank_) continue;
      const int e = ext_[j], owner = e / L;
      if (hier_prefetched) {
        node_issued.push_back(owner);
        continue;
      }
      if (!node_used_[j]) continue;
      params_win_->get(ext_cache((int)j), expert_floats_, owner, (size_t)(e - owner * L) * expert_floats_ * sizeof(float));
      node_issued.push_back(owner);
      ++stats_.node_pulls;
      ++stats_.pulls;
      stats_.bytes_pulled += expert_bytes;
      forward_issued_.push_back(e);
    }
    for (Slot* s : cached) s->params = view(ext_cache(s->ext), C, F);
  }

  refill();  // the first pulls travel while the owned experts compute
  for (auto& s : slots_)
    if (s->owned) compute(*s);
  if (hier_) {
    TaskCost cost;
    phase(ctx, "janus.pull_node", TaskCategory::comm, cost, -1, -1, [&] {
      for (int owner : node_issued) params_win_->flush(owner);
      node_win_->sync();  // every external expert the node uses is in the cache
    });
    if (pairing_) pair_copies(ctx, used_rows);
    for (Slot* s : cached) compute(*s);
  }
  for (Slot* s : remote) {
    TaskCost cost;
    cost.bytes_to_peer.push_back({ep.world_rank(s->owner), expert_bytes});
    phase(ctx, "janus.pull", TaskCategory::comm, cost, s->e, ep.world_rank(s->owner),
          [&] { params_win_->flush(s->owner); });
    compute(*s);
    if (s->credit) --in_use;  // the credit comes back: pull the next expert while computing later ones
    refill();
  }
  stats_.last_pulls = (int)(remote.size() + cached.size());
  have_forward_ = true;
}

void DataCentric::backward(float* dxg, const float* dy, MoeContext& ctx) {
  if (!have_forward_) throw std::logic_error("data_centric: backward without forward");
  const int C = C_, F = F_;
  const uint64_t expert_bytes = expert_floats_ * sizeof(float);
  if (hier_) std::fill(ext_grad(local_rank_, 0), ext_grad(local_rank_, 0) + ext_.size() * expert_floats_, 0.0f);
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (s.node_cached) {
      s.grads = view(ext_grad(local_rank_, s.ext), C, F);
      ++stats_.cache_hits;
    } else if (!s.owned) {
      s.grad.assign(expert_floats_, 0.0f);
      s.grads = view(s.grad.data(), C, F);
      ++stats_.cache_hits;
    }
    TaskCost cost;
    cost.flops = 8.0 * (double)s.n * C * F;
    phase(ctx, "moe.experts_backward", TaskCategory::compute, cost, s.e, -1, [&] {
      s.bank.backward(dxg + (size_t)s.off * C, dy + (size_t)s.off * C, {s.grads}, {s.params});
    });
  }
  // Hierarchical: every local rank's gradient slots are written before the pullers reduce.
  if (hier_) phase(ctx, "janus.sync", TaskCategory::comm, {}, -1, -1, [&] { node_win_->sync(); });
  // Owners' own gradient writes are done before anyone accumulates into them; after the
  // second barrier every owner holds all contributions.
  phase(ctx, "janus.sync", TaskCategory::comm, {}, -1, -1, [&] { grads_win_->barrier(); });
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (s.owned || s.node_cached) continue;
    TaskCost cost;
    cost.bytes_to_peer.push_back({ctx.ep->world_rank(s.owner), expert_bytes});
    phase(ctx, "janus.push_grad", TaskCategory::comm, cost, s.e, ctx.ep->world_rank(s.owner), [&] {
      grads_win_->accumulate(s.grad.data(), expert_floats_, s.owner,
                             (size_t)(s.e - s.owner * L_) * expert_floats_ * sizeof(float), ReduceOp::sum);
    });
    ++stats_.pushes;
    stats_.bytes_pushed += expert_bytes;
  }
  if (hier_) {
    node_grad_.resize(ext_.size());
    for (size_t j = 0; j < ext_.size(); ++j) {
      if ((int)j % m_ != local_rank_ || !node_used_[j]) continue;
      const int e = ext_[j], owner = e / L_;
      std::vector<float>& sum = node_grad_[j];
      sum.assign(ext_grad(0, (int)j), ext_grad(0, (int)j) + expert_floats_);
      for (int k = 1; k < m_; ++k) {  // fixed order: local rank 0, 1, ..., m-1
        const float* g = ext_grad(k, (int)j);
        for (size_t i = 0; i < expert_floats_; ++i) sum[i] += g[i];
      }
      TaskCost cost;
      cost.bytes_to_peer.push_back({ctx.ep->world_rank(owner), expert_bytes});
      phase(ctx, "janus.push_grad", TaskCategory::comm, cost, e, ctx.ep->world_rank(owner), [&] {
        grads_win_->accumulate(sum.data(), expert_floats_, owner,
                               (size_t)(e - owner * L_) * expert_floats_ * sizeof(float), ReduceOp::sum);
      });
      ++stats_.pushes;
      ++stats_.node_pushes;
      stats_.bytes_pushed += expert_bytes;
    }
  }
  phase(ctx, "janus.sync", TaskCategory::comm, {}, -1, -1, [&] { grads_win_->barrier(); });
  release_cache();
}

namespace {
struct DataCentricHandle : MoeHandle {
  std::vector<int> offsets;  // this rank's slot offsets per expert [E+1]
};
}  // namespace

std::unique_ptr<MoeHandle> DataCentric::layout(const ExchangeCounts& counts, MoeContext& ctx) {
  ctx.sync_group();
  auto h = std::make_unique<DataCentricHandle>();
  h->offsets.assign(counts.E + 1, 0);
  for (int e = 0; e < counts.E; ++e) h->offsets[e + 1] = h->offsets[e] + (int)counts.at(ctx.ep_rank, e);
  return h;
}

// Until data_centric's pulls, credits and node cache become tasks of their own, a pass is one
// task on the compute stream running the protocol above; its phases record their own spans
// (the task itself has no name, so it records none).
std::vector<TaskId> DataCentric::build(TaskGraph& g, MoeHandle& handle, MoePass pass, const std::vector<TaskId>& after,
                                       const MoeBuffers* buffers, MoeContext& ctx) {
  auto& h = dynamic_cast<DataCentricHandle&>(handle);
  GraphTask t;
  t.category = TaskCategory::compute;
  t.role = StreamRole::compute;
  t.layer = ctx.layer;
  if (buffers) {
    const MoeBuffers b = *buffers;
    if (pass == MoePass::forward) t.action = [this, &h, &ctx, b] { forward(b.y, b.xg, h.offsets, ctx); };
    else t.action = [this, &ctx, b] { backward(b.dxg, b.dy, ctx); };
  }
  return {g.add(std::move(t), after)};
}

std::unique_ptr<MoeStrategy> make_data_centric(const StrategyConfig& options) {
  return std::make_unique<DataCentric>(options.data_centric);
}

}  // namespace moebench
