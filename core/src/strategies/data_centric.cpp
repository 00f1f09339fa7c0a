// data_centric: Janus (SIGCOMM'23) data-centric expert parallelism: tokens stay, experts are
// pulled with one-sided gets under a credit-based buffer and their gradients pushed back
// with one-sided accumulates. See strategies/data_centric.h for the protocol.
#include "moebench/strategies/data_centric.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "moebench/dist/communicator.h"
#include "moebench/runtime/executor.h"

namespace moebench {
namespace {

// Runs fn as a task on the calling thread so it shows up as a span (when an executor is
// attached).
template <class Fn>
void phase(MoeContext& ctx, const char* name, TaskCategory category, TaskCost cost, int expert, int peer,
           Fn&& fn) {
  if (!ctx.executor) return fn();
  Task t;
  t.name = name;
  t.category = category;
  t.cost = std::move(cost);
  t.layer = ctx.layer;
  t.expert = expert;
  t.peer = peer;
  t.action = std::forward<Fn>(fn);
  ctx.executor->run_inline(t, category == TaskCategory::comm ? "compute.comm" : "compute");
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
  ExpertParams params{}, grads{};
  std::vector<float> cache, grad;  // pulled experts only
  ExpertBank bank;
};

DataCentric::DataCentric(int credits) : credits_override_(credits) {}
DataCentric::~DataCentric() = default;

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

void DataCentric::release_cache() {
  slots_.clear();
  have_forward_ = false;
}

void DataCentric::forward(float* y, const float* xg, const std::vector<int>& offsets, MoeContext& ctx) {
  Communicator& ep = *ctx.ep;
  const int P = ep.size(), me = ep.rank(), E = ctx.experts, C = ctx.C, F = ctx.F;
  if (E % P != 0)
    throw std::invalid_argument("MoE block " + std::to_string(ctx.layer) + ": " + std::to_string(E) +
                                " experts do not divide over " + std::to_string(P) + " EP ranks");
  if ((int)offsets.size() != E + 1) throw std::invalid_argument("data_centric: offsets size != experts + 1");
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
  const uint64_t expert_bytes = expert_floats_ * sizeof(float);
  stats_.credits = credits;

  release_cache();  // a forward without backward (evaluation) leaves nothing stale
  ensure_windows(ctx);  // collective, first forward only
  // Every owner has finished updating its experts (previous optimizer step) before any pull.
  phase(ctx, "janus.sync", TaskCategory::comm, {}, -1, -1, [&] { params_win_->barrier(); });
  offsets_ = offsets;

  // Used experts: owned ones first (no credit needed), then the remote ones ordered by owner
  // starting after this rank (spreads the first pulls over the owners).
  std::vector<Slot*> remote;
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < E; ++i) {
      const int e = pass == 0 ? i : ((me + 1) * L + i) % E;
      const bool owned = e / L == me;
      if (owned != (pass == 0) || offsets[e + 1] <= offsets[e]) continue;
      auto s = std::make_unique<Slot>();
      s->e = e;
      s->owner = e / L;
      s->owned = owned;
      s->off = offsets[e];
      s->n = offsets[e + 1] - offsets[e];
      if (owned) {
        s->params = ctx.local[e - ctx.first_local];
        s->grads = ctx.local_grads[e - ctx.first_local];
      } else {
        remote.push_back(s.get());
      }
      slots_.push_back(std::move(s));
    }

  pulled_order_.clear();
  int in_use = 0;
  size_t next = 0;
  auto issue = [&] {
    Slot& s = *remote[next++];
    s.cache.resize(expert_floats_);
    s.params = view(s.cache.data(), C, F);
    params_win_->get(s.cache.data(), expert_floats_, s.owner,
                     (size_t)(s.e - s.owner * L) * expert_floats_ * sizeof(float));
    ++in_use;
    stats_.max_in_use = std::max(stats_.max_in_use, in_use);
    ++stats_.pulls;
    stats_.bytes_pulled += expert_bytes;
    pulled_order_.push_back(s.e);
  };
  auto refill = [&] {
    while (next < remote.size() && in_use < credits) issue();
  };
  auto compute = [&](Slot& s) {
    TaskCost cost;
    cost.flops = 4.0 * (double)s.n * C * F;
    phase(ctx, "moe.experts", TaskCategory::compute, cost, s.e, -1, [&] {
      const std::vector<int> off = {0, s.n};
      s.bank.forward(y + (size_t)s.off * C, xg + (size_t)s.off * C, off, {s.params}, C, F);
    });
  };

  refill();  // the first pulls travel while the owned experts compute
  for (auto& s : slots_)
    if (s->owned) compute(*s);
  for (Slot* s : remote) {
    TaskCost cost;
    cost.bytes_to_peer.push_back({ep.world_rank(s->owner), expert_bytes});
    phase(ctx, "janus.pull", TaskCategory::comm, cost, s->e, ep.world_rank(s->owner),
          [&] { params_win_->flush(s->owner); });
    compute(*s);
    --in_use;  // the credit comes back: pull the next expert while computing later ones
    refill();
  }
  stats_.last_pulls = (int)remote.size();
  have_forward_ = true;
}

void DataCentric::backward(float* dxg, const float* dy, MoeContext& ctx) {
  if (!have_forward_) throw std::logic_error("data_centric: backward without forward");
  const int C = C_, F = F_;
  const uint64_t expert_bytes = expert_floats_ * sizeof(float);
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (!s.owned) {
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
  // Owners' own gradient writes are done before anyone accumulates into them; after the
  // second barrier every owner holds all contributions.
  phase(ctx, "janus.sync", TaskCategory::comm, {}, -1, -1, [&] { grads_win_->barrier(); });
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (s.owned) continue;
    TaskCost cost;
    cost.bytes_to_peer.push_back({ctx.ep->world_rank(s.owner), expert_bytes});
    phase(ctx, "janus.push_grad", TaskCategory::comm, cost, s.e, ctx.ep->world_rank(s.owner), [&] {
      grads_win_->accumulate(s.grad.data(), expert_floats_, s.owner,
                             (size_t)(s.e - s.owner * L_) * expert_floats_ * sizeof(float), ReduceOp::sum);
    });
    ++stats_.pushes;
    stats_.bytes_pushed += expert_bytes;
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

std::unique_ptr<MoeStrategy> make_data_centric() { return std::make_unique<DataCentric>(); }

}  // namespace moebench
