// data_centric: Janus (SIGCOMM'23) data-centric expert parallelism: tokens stay, experts are
// pulled with one-sided gets under a credit-based buffer and their gradients pushed back
// with one-sided accumulates. See strategies/data_centric.h for the protocol.
#include "moebench/strategies/data_centric.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "moebench/dist/communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/strategies/janus_order.h"
#include "moebench/runtime/executor.h"

namespace moebench {
namespace {

// Runs fn on the calling thread (the compute worker running the block's task) and records
// it as a span with its own role, category and cost (when an executor is attached).
template <class Fn>
void phase(MoeContext& ctx, const char* name, TaskCategory category, TaskCost cost, int expert, int peer,
           Fn&& fn) {
  if (!ctx.executor) return fn();
  Span span;
  span.name = name;
  span.category = category;
  span.role = category == TaskCategory::comm ? ctx.ep_role()
              : category == TaskCategory::copy ? StreamRole::copy : StreamRole::compute;
  span.flops = cost.flops;
  span.bytes = cost.bytes_sent();
  span.layer = ctx.layer;
  span.expert = expert;
  span.peer = peer;
  span.start = ctx.executor->now();
  fn();
  span.end = ctx.executor->now();
  ctx.executor->add_span(std::move(span));
}

// Checks that the L experts of `v` lie back to back as w1|b1|w2|b2, expert after expert.
void check_contiguous(const std::vector<ExpertParams>& v, int C, int F, const char* what) {
  const size_t n = 2 * (size_t)F * C + F + C;
  for (size_t j = 0; j < v.size(); ++j) {
    const float* base = v[0].w1 + j * n;
    if (v[j].w1 != base || v[j].b1 != base + (size_t)F * C || v[j].w2 != base + (size_t)F * C + F ||
        v[j].b2 != base + 2 * (size_t)F * C + F)
      throw std::invalid_argument(std::string("data_centric: the owned experts' ") + what +
                                  " must be one contiguous block (w1|b1|w2|b2 per expert)");
  }
}

ExpertParams view(float* base, int C, int F) {
  return {base, base + (size_t)F * C, base + (size_t)F * C + F, base + 2 * (size_t)F * C + F};
}

}  // namespace

struct DataCentric::Slot {
  int e = 0, owner = 0, off = 0, n = 0;
  bool owned = false;
  bool node_cached = false;  // hierarchical external expert: params in the node cache
  bool issued = false;       // its get has been issued (prefetch or forward)
  bool credit = false;       // holds a credit until computed
  int ext = -1;              // index in ext_ (external experts)
  ExpertParams params{}, grads{};
  std::vector<float> cache, grad;  // pulled experts only
  ExpertBank bank;
};

struct DataCentric::Prefetched {
  int e = 0, owner = 0;
  bool credit = false;  // internal: holds a credit
  std::vector<float> buf;
};

DataCentric::DataCentric(int credits) : credits_override_(credits) {}
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
  const int credits = credits_override_ > 0 ? credits_override_ : ctx.credits;
  if (credits < 1) throw std::invalid_argument("data_centric: credits must be at least 1");
  check_contiguous(ctx.local, C, F, "parameters");
  check_contiguous(ctx.local_grads, C, F, "gradients");
  P_ = P, L_ = L, C_ = C, F_ = F, E_ = E, me_ = me;
  expert_floats_ = 2 * (size_t)F * C + F + C;
  stats_.credits = credits;
  return credits;
}

// Node of every EP rank (from ctx.topology; one node without it), the pull order, the
// external experts and, when hierarchical, the node communicator and shared cache (collective
// over ctx.ep the first time).
void DataCentric::setup_nodes(MoeContext& ctx) {
  Communicator& ep = *ctx.ep;
  node_of_.assign(P_, 0);
  if (ctx.topology)
    for (int p = 0; p < P_; ++p) {
      const int w = ep.world_rank(p);
      node_of_[p] = w < ctx.topology->world_size() ? ctx.topology->node_of(w) : 0;
    }
  my_node_ = node_of_[me_];
  node_ranks_.clear();
  for (int p = 0; p < P_; ++p)
    if (node_of_[p] == my_node_) node_ranks_.push_back(p);
  m_ = (int)node_ranks_.size();
  local_rank_ = (int)(std::find(node_ranks_.begin(), node_ranks_.end(), me_) - node_ranks_.begin());
  order_ = janus_expert_order(me_, node_of_, L_, ctx.priority);
  ext_.clear();
  ext_idx_.assign(E_, -1);
  for (int e = 0; e < E_; ++e)
    if (node_of_[e / L_] != my_node_) ext_idx_[e] = (int)ext_.size(), ext_.push_back(e);
  hier_ = ctx.hierarchical && !ext_.empty();
  // pcie_pairing: this rank's pair peer (local rank on this node), -1 when not listed.
  pair_peer_local_ = -1;
  {
    const auto& pairs = ctx.pcie_switch_pairs;
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
      int peer = -1;
      if (pairs[i] == local_rank_) peer = pairs[i + 1];
      else if (pairs[i + 1] == local_rank_) peer = pairs[i];
      if (peer >= 0) {
        if (peer < m_ && peer != local_rank_) pair_peer_local_ = peer;
        break;
      }
    }
  }
  if (!hier_ || node_win_) {
    pairing_ = hier_ && ctx.pcie_pairing && staging_;
    return;
  }
  staging_ = ctx.pcie_pairing;
  pairing_ = staging_;
  node_comm_ = ep.split(my_node_, me_);
  if (!node_comm_ || node_comm_->size() != m_ || node_comm_->rank() != local_rank_)
    throw std::logic_error("data_centric: node communicator does not match the topology");
  ext_slots_ = (ext_.size() + m_ - 1) / m_;
  node_win_ = node_comm_->create_shared_window((ext_slots_ + ext_.size() * (staging_ ? 2 : 1)) * expert_floats_ *
                                               sizeof(float));
  if (node_win_->local_size() != m_ || node_win_->local_rank() != local_rank_)
    throw std::runtime_error("data_centric: hierarchical mode needs each node's ranks to share memory (" +
                             std::to_string(node_win_->local_size()) + " sharing, node has " +
                             std::to_string(m_) + ")");
}

float* DataCentric::ext_cache(int j) {
  return static_cast<float*>(node_win_->segment(j % m_)) + (size_t)(j / m_) * expert_floats_;
}
float* DataCentric::ext_grad(int local, int j) {
  return static_cast<float*>(node_win_->segment(local)) + (ext_slots_ + (size_t)j) * expert_floats_;
}

float* DataCentric::ext_stage(int local, int j) {
  return static_cast<float*>(node_win_->segment(local)) + (ext_slots_ + ext_.size() + (size_t)j) * expert_floats_;
}

// pcie_pairing (Fig. 9): called by every rank of the node once the node cache holds every
// external expert the node uses; used_rows[k * n_ext + j] = 1 when local rank k uses ext_[j].
void DataCentric::pair_copies(MoeContext& ctx, const std::vector<int>& used_rows) {
  const size_t n_ext = ext_.size();
  int node_count = 0;
  for (size_t j = 0; j < n_ext; ++j) node_count += node_used_[j] ? 1 : 0;
  const int rounds = (node_count + 1) / 2;  // no pair's group is larger (same on every node rank)
  const int peer = pair_peer_local_;
  std::vector<int> own, theirs;  // indices into ext_, in round order
  if (peer >= 0) {
    int pos = 0;
    const bool lower = local_rank_ < peer;
    for (size_t j = 0; j < n_ext; ++j) {
      if (!used_rows[(size_t)local_rank_ * n_ext + j] && !used_rows[(size_t)peer * n_ext + j]) continue;
      ((pos % 2 == 0) == lower ? own : theirs).push_back((int)j);
      ++pos;
    }
  }
  std::vector<Slot*> by_j(n_ext, nullptr);
  for (auto& s : slots_)
    if (s->node_cached) by_j[s->ext] = s.get();
  const int peer_world = peer >= 0 ? ctx.ep->world_rank(node_ranks_[peer]) : -1;
  const uint64_t expert_bytes = expert_floats_ * sizeof(float);
  for (int t = 0; t < rounds; ++t) {
    if (t < (int)own.size()) {
      const int j = own[t], e = ext_[j];
      TaskCost cost;
      phase(ctx, "janus.cache_copy", TaskCategory::copy, cost, e, -1, [&] {
        std::copy(ext_cache(j), ext_cache(j) + expert_floats_, ext_stage(local_rank_, j));
      });
      if (Slot* s = by_j[j]) s->params = view(ext_stage(local_rank_, j), C_, F_);
      ++stats_.cache_copies;
      copy_order_.push_back({e, false});
    }
    phase(ctx, "janus.sync", TaskCategory::comm, {}, -1, -1, [&] { node_win_->sync(); });
    if (t < (int)theirs.size() && by_j[theirs[t]]) {
      const int j = theirs[t], e = ext_[j];
      Slot* s = by_j[j];
      TaskCost cost;
      cost.bytes_to_peer.push_back({peer_world, expert_bytes});
      phase(ctx, "janus.peer_copy", TaskCategory::copy, cost, e, peer_world, [&] {
        const float* src = ext_stage(peer, j);
        s->cache.assign(src, src + expert_floats_);
      });
      s->params = view(s->cache.data(), C_, F_);
      ++stats_.peer_copies;
      copy_order_.push_back({e, true});
    }
  }
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
  if (!ctx.prefetch) return;
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
  if (ctx.prefetch) {
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

// Predicted (never measured), uniform routing: each of the E - L experts this rank does not
// own receives at least one of its tokens*k assignments with probability 1 - (1 - 1/E)^(tk)
// and is then pulled whole (2HF + F + H floats); (d-1)*L of them live on this rank's node.
// The pulls run back to back on each link class (the slower one bounds), one latency per
// pull; backward pushes the same bytes back (not included, as for the other strategies).
StrategyCost DataCentric::predict(const CostInputs& in) const {
  StrategyCost c;
  const int P = std::max(1, in.ep_size), E = in.experts;
  if (E <= 0 || E % P != 0) return c;
  const int L = E / P, d = std::clamp(in.devices_per_node, 1, P);
  const double expert_bytes = (2.0 * in.hidden * in.ffn + in.ffn + in.hidden) * sizeof(float);
  const double assignments = in.tokens * in.top_k;
  const double p_used = assignments > 0 ? 1.0 - std::pow(1.0 - 1.0 / E, assignments) : 0.0;
  const double n_intra = (double)(d - 1) * L * p_used, n_inter = (double)(P - d) * L * p_used;
  c.bytes_intra = n_intra * expert_bytes;
  c.bytes_inter = n_inter * expert_bytes;
  const double t_intra = in.intra_bw > 0 ? c.bytes_intra / in.intra_bw : 0;
  const double t_inter = in.inter_bw > 0 ? c.bytes_inter / in.inter_bw : 0;
  c.comm_seconds = std::max(t_intra, t_inter) + (n_intra + n_inter) * in.latency;
  c.compute_seconds = in.flops_rate > 0 ? 4.0 * in.tokens * in.top_k * in.hidden * in.ffn / in.flops_rate : 0;
  return c;
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

std::unique_ptr<MoeStrategy> make_data_centric() { return std::make_unique<DataCentric>(); }

}  // namespace moebench
