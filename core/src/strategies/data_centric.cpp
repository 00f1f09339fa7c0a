// data_centric: Janus (SIGCOMM'23) data-centric expert parallelism: tokens stay, experts are
// pulled with one-sided gets under a credit-based buffer and their gradients pushed back
// with one-sided accumulates. See strategies/data_centric.h for the protocol and its tasks.
// This file: the pull schedule (layout, credits, prefetch, the forward and backward tasks);
// data_centric_node_cache.cpp: the node cache and PCIe pairing; data_centric_cost.cpp: the
// prediction.
#include "data_centric_detail.h"
#include "moebench/strategies/strategy_descriptor.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "moebench/dist/communicator.h"
#include "moebench/dist/served_window.h"
#include "moebench/runtime/executor.h"

namespace moebench {

using data_centric_detail::check_contiguous;
using data_centric_detail::view;

DataCentric::DataCentric(DataCentricOptions options) : opts_(options) {}
DataCentric::~DataCentric() {
  // Never free a buffer with a get in flight (MPI windows; a GPU's gets are stream-ordered and
  // its row arrays go back to the block's pool, freed with cudaFree, which waits for them).
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
  // The experts' memory: MPI on the host; on GPUs CUDA IPC within a machine, requests served
  // over the EP group's MPI communicator across machines (dist/served_window.h).
  win_comm_ = ctx.rows_communicator(*ctx.ep, "data_centric.windows");  // every block's: the ep role's calls
  params_win_ = create_served_window(*win_comm_, *ctx.ep, ctx.local[0].w1, count, DType::f32);
  grads_win_ = create_served_window(*win_comm_, *ctx.ep, ctx.local_grads[0].w1, count, DType::f32);
  win_params_base_ = ctx.local[0].w1;
  win_grads_base_ = ctx.local_grads[0].w1;
}

// The EP group from ctx (ep_rank / ep_size, filled from ctx.ep when set); the owned experts'
// buffers are checked only with a communicator (a graph without buffers has none).
int DataCentric::configure(const MoeContext& ctx) {
  const int P = ctx.ep_size, me = ctx.ep_rank, E = ctx.experts, C = ctx.C, F = ctx.F;
  if (P < 1 || E % P != 0)
    throw std::invalid_argument("MoE block " + std::to_string(ctx.layer) + ": " + std::to_string(E) +
                                " experts do not divide over " + std::to_string(P) + " EP ranks");
  const int L = E / P;
  if (L < 1 || ctx.first_local != me * L ||
      (ctx.ep && ((int)ctx.local.size() != L || (int)ctx.local_grads.size() != L)))
    throw std::invalid_argument("data_centric: rank " + std::to_string(me) + " must own experts [" +
                                std::to_string(me * L) + ", " + std::to_string(me * L + L) + ")");
  const int credits = opts_.credits;
  if (credits < 1) throw std::invalid_argument("data_centric: credits must be at least 1");
  if (ctx.ep) {
    check_contiguous(ctx.local, C, F, "parameters");
    check_contiguous(ctx.local_grads, C, F, "gradients");
  }
  P_ = P, L_ = L, C_ = C, F_ = F, E_ = E, me_ = me;
  ops_ = &ctx.row_ops();
  expert_floats_ = 2 * (size_t)F * C + F + C;
  stats_.credits = credits;
  return credits;
}

// What the iteration start pulls, in issue order: every expert this rank does not own in pull
// order; internal ones only while a credit is free, external ones into the host cache (no
// credit) or, hierarchical, this rank's share of the node cache (ext index j % m == local rank).
std::vector<DataCentric::PlannedPull> DataCentric::prefetch_plan(int credits) const {
  std::vector<PlannedPull> plan;
  int in_use = 0;
  for (int e : order_) {
    const int j = ext_idx_[e];
    if (hier_ && j >= 0) {
      if (j % m_ == local_rank_) plan.push_back({e, j, false});
      continue;
    }
    const bool internal = j < 0;
    if (internal && in_use >= credits) continue;
    plan.push_back({e, -1, internal});
    if (internal) ++in_use;
  }
  return plan;
}

void DataCentric::drop_prefetch() {
  if (!prefetch_.empty() && params_win_) params_win_->flush_all();
  prefetch_.clear();
  prefetch_pending_ = false;
}

// One comm task "janus.prefetch" on the EP group's role, after `after`, before any block's
// router: the window barrier (every owner has finished its previous optimizer step), then the
// non-blocking gets of the plan, which the forward's pull tasks complete (data_centric.h,
// prefetch). Its cost is the plan's bytes; the pass built next takes the task (its prefetched
// pulls wait for it and carry no bytes). With buffers, the destinations are allocated here, on
// the building thread, so the action touches nothing the building thread reads later.
std::vector<TaskId> DataCentric::build_iteration_start(TaskGraph& g, const std::vector<TaskId>& after,
                                                       bool with_buffers, MoeContext& ctx) {
  prefetch_task_ = {};
  if (!opts_.prefetch || (with_buffers && !ctx.ep)) return {};
  const bool act = with_buffers;  // the gets themselves (a training rank), else their cost only
  ctx.sync_group();
  const int credits = configure(ctx);
  setup_topology(ctx);
  if (act) {
    drop_prefetch();
    ensure_windows(ctx);  // collective, first call only
    ensure_node_cache(ctx);
  }
  const std::vector<PlannedPull> plan = prefetch_plan(credits);
  if (plan.empty()) return {};
  const uint64_t expert_bytes = expert_floats_ * sizeof(float);  // in memory
  const uint64_t wire_bytes = expert_floats_ * (uint64_t)ctx.wire_element_bytes;
  GraphTask t;
  t.name = "janus.prefetch";
  t.category = TaskCategory::comm;
  t.role = ctx.ep_role();
  t.layer = ctx.layer;
  t.cost.transfer = Transfer::get;
  struct Get {
    float* dst;
    int owner;
    size_t off;
  };
  std::vector<Get> gets;
  int in_use = 0;
  for (const PlannedPull& pp : plan) {
    const int owner = pp.e / L_;
    const size_t off = (size_t)(pp.e - owner * L_) * expert_bytes;
    t.cost.bytes_to_peer.push_back({ctx.ep_world[(size_t)owner], wire_bytes});
    if (!act) continue;
    if (pp.ext >= 0) {
      gets.push_back({ext_cache(pp.ext), owner, off});
      ++stats_.node_pulls;
    } else {
      auto pf = std::make_unique<Prefetched>();
      pf->e = pp.e;
      pf->owner = owner;
      // moved into the pass's slot later: the data stays put
      gets.push_back({pf->buf.resize(*ops_, (long)expert_floats_), owner, off});
      if (pp.credit) stats_.max_in_use = std::max(stats_.max_in_use, ++in_use);
      prefetch_.push_back(std::move(pf));
    }
    ++stats_.pulls;
    ++stats_.prefetched;
    stats_.bytes_pulled += expert_bytes;
  }
  if (act) {
    Window* win = params_win_.get();
    const size_t ef = expert_floats_;
    t.action = [win, gets = std::move(gets), ef] {
      win->barrier();
      for (const Get& get : gets) win->get(get.dst, ef, get.owner, get.off);
    };
    prefetch_order_.clear();
    for (const PlannedPull& pp : plan) prefetch_order_.push_back(pp.e);
    prefetch_pending_ = true;
    stats_.last_prefetched = (int)plan.size();
  }
  prefetch_task_ = g.add(std::move(t), after);
  prefetch_graph_ = &g;
  return {prefetch_task_};
}

// Moves the iteration start's buffers into the pass's slots (the gets stay in flight: the pull
// tasks complete them); unused ones stay alive in the pass until its janus.sync flushed them.
void DataCentric::take_prefetch(Pass& p, const MoeContext& ctx) {
  const bool pending = prefetch_pending_ && opts_.prefetch;
  prefetch_pending_ = false;
  p.node_issued = pending && p.node_prefetched;
  std::vector<Slot*> by_e((size_t)E_, nullptr);
  for (Slot* s : p.remote) by_e[(size_t)s->e] = s;
  for (auto& pf : prefetch_) {
    Slot* s = pending ? by_e[(size_t)pf->e] : nullptr;
    if (s && s->prefetched) {
      s->cache = std::move(pf->buf);
      s->issued = true;
    } else {
      p.dropped.push_back(std::move(pf));
    }
  }
  prefetch_.clear();
}

template class StrategyOf<DataCentricPass>;

std::unique_ptr<DataCentricPass> DataCentric::layout_pass(const ExchangeCounts& counts, MoeContext& ctx) {
  ctx.sync_group();
  const int credits = configure(ctx);
  setup_topology(ctx);
  if (ctx.ep) {
    ensure_windows(ctx);  // collective, first call only
    ensure_node_cache(ctx);
  }
  // Pairing needs the staging slots, allocated with the node cache (plan: as if they were).
  pairing_ = hier_ && opts_.pcie_pairing && (staging_ || !ctx.ep);
  auto p = std::make_unique<Pass>();
  p->credits = credits;
  std::vector<long> rows = counts.rows;
  if (hier_ && ctx.ep) gather_node_counts(rows);
  const long* mine = rows.data() + (size_t)me_ * E_;
  p->offsets.assign(E_ + 1, 0);
  for (int e = 0; e < E_; ++e) p->offsets[e + 1] = p->offsets[e] + (int)mine[e];

  // Planned prefetch (the same plan the iteration start issues).
  std::vector<char> planned((size_t)E_, 0), planned_credit((size_t)E_, 0);
  if (opts_.prefetch)
    for (const PlannedPull& pp : prefetch_plan(credits)) {
      planned[(size_t)pp.e] = 1;
      planned_credit[(size_t)pp.e] = pp.credit;
      if (pp.ext >= 0) p->node_prefetched = true;
    }
  // Used experts: owned ones first (no credit needed), then the others in pull order.
  auto add = [&](int e, bool owned) {
    auto s = std::make_unique<Slot>();
    s->e = e;
    s->owner = e / L_;
    s->owned = owned;
    s->off = p->offsets[e];
    s->n = (int)mine[e];
    s->ext = ext_idx_[e];
    if (!owned && hier_ && s->ext >= 0) {
      s->node_cached = true;
      p->cached.push_back(s.get());
    } else if (!owned) {
      s->prefetched = planned[(size_t)e];
      s->credit = planned_credit[(size_t)e];  // prefetched internal experts hold theirs already
      if (s->credit) ++p->initial_credits;
      p->remote.push_back(s.get());
    }
    p->slots.push_back(std::move(s));
  };
  for (int e = me_ * L_; e < me_ * L_ + L_; ++e)
    if (mine[e] > 0) add(e, true);
  for (int e : order_)
    if (mine[e] > 0) add(e, false);
  if (hier_) plan_node(*p, rows);
  return p;
}

std::vector<TaskId> DataCentric::build_pass(TaskGraph& g, Pass& p, MoePass pass, const std::vector<TaskId>& after,
                                            const MoeBuffers* buffers, MoeContext& ctx) {
  Builder b(g, ctx, buffers != nullptr);
  if (pass == MoePass::forward) {
    // The iteration start's task, when it was added to this graph (step graphs, MoeLayer::forward).
    p.prefetch_task = prefetch_graph_ == &g ? prefetch_task_ : TaskId{};
    prefetch_task_ = {};
    prefetch_graph_ = nullptr;
    build_forward(b, p, buffers, after);
  }
  else build_backward(b, p, buffers, after);
  return b.sinks();
}

void DataCentric::build_forward(Builder& b, Pass& p, const MoeBuffers* buffers, const std::vector<TaskId>& after) {
  const bool act = b.act;
  const int C = C_, F = F_, credits = p.credits;
  const size_t ef = expert_floats_;
  const uint64_t expert_bytes = ef * sizeof(float);  // in memory
  const uint64_t wire_bytes = ef * (uint64_t)b.ctx.wire_element_bytes;
  const std::vector<int>& world = b.ctx.ep_world;
  float* y = act ? buffers->y : nullptr;
  const float* xg = act ? buffers->xg : nullptr;
  Window* win = params_win_.get();
  if (act) {
    take_prefetch(p, b.ctx);
    banks_.resize((size_t)E_);
    for (auto& s : p.slots) {
      std::unique_ptr<ExpertCompute>& bank = banks_[(size_t)s->e];
      if (!bank) bank = ops_->make_experts();
      s->bank = bank.get();
    }
    for (auto& s : p.slots)
      if (s->owned) {
        s->params = b.ctx.local[(size_t)(s->e - b.ctx.first_local)];
        s->grads = b.ctx.local_grads[(size_t)(s->e - b.ctx.first_local)];
      }
    for (Slot* s : p.remote) {
      s->params = view(s->cache.resize(*ops_, (long)ef), C, F);  // sized here: the pull's action never reallocates
    }
    pulled_order_.clear();
    forward_issued_.clear();
    copy_order_.clear();
    for (auto& s : p.slots)
      if (!s->owned) pulled_order_.push_back(s->e);
    stats_.last_pulls = (int)(p.remote.size() + p.cached.size());
  }
  auto compute = [&](Slot& s, const std::vector<TaskId>& deps) {
    return b.compute("moe.experts", s.e, 4.0 * s.n * C * F, deps, [&s, y, xg, C, F] {
      const std::vector<int> off = {0, s.n};
      s.bank->forward(y + (size_t)s.off * C, xg + (size_t)s.off * C, off, {s.params}, C, F);
    });
  };

  // Every owner has finished updating its experts (previous optimizer step) before any pull;
  // the barrier also completes the iteration start's gets.
  std::vector<TaskId> sync_after = after;
  if (p.prefetch_task.valid()) sync_after.push_back(p.prefetch_task);  // its barrier and gets come first
  const TaskId sync = b.collective("janus.sync", sync_after, [win] { win->barrier(); });
  // Hierarchical: this rank's share of the node cache is pulled first (the inter-node pulls
  // the whole node waits for).
  const std::vector<TaskId> node_pulls = hier_ ? build_node_pulls(b, p, sync) : std::vector<TaskId>{};

  // Credits: refill issues pulls in pull order while a credit is free (a prefetched expert's
  // get is already issued: it passes without one), each after the task that freed its credit.
  const size_t R = p.remote.size();
  std::vector<TaskId> pull_of(R);
  int in_use = p.initial_credits;
  if (act) stats_.max_in_use = std::max(stats_.max_in_use, in_use);
  size_t next = 0;
  auto refill = [&](TaskId freed) {
    while (next < R && (p.remote[next]->prefetched || in_use < credits)) {
      Slot& s = *p.remote[next];
      if (!s.prefetched) {
        s.credit = true;
        ++in_use;
      }
      const size_t off = (size_t)(s.e - s.owner * L_) * expert_bytes;
      // Its bytes moved in the step graph's janus.prefetch: the pull only completes them.
      const bool staged = s.prefetched && p.prefetch_task.valid();
      pull_of[next] = b.comm("janus.pull", Transfer::get, s.e, world[(size_t)s.owner], staged ? 0 : wire_bytes,
                             staged ? std::vector<TaskId>{sync, p.prefetch_task}
                                    : std::vector<TaskId>{s.prefetched ? sync : freed},
                             [win, &s, ef, off] {
                               if (!s.issued) win->get(s.cache.data(), ef, s.owner, off);
                               win->flush(s.owner);
                             });
      if (act) {
        stats_.max_in_use = std::max(stats_.max_in_use, in_use);
        if (!s.issued) {
          ++stats_.pulls;
          stats_.bytes_pulled += expert_bytes;
          forward_issued_.push_back(s.e);
        }
      }
      ++next;
    }
  };
  refill(sync);  // the first pulls travel while the owned experts compute
  for (auto& s : p.slots)
    if (s->owned) compute(*s, after);
  const std::vector<TaskId> node_ready = hier_ ? build_node_ready(b, p, node_pulls) : std::vector<TaskId>{};
  for (Slot* s : p.cached) compute(*s, {node_ready[(size_t)s->ext]});
  for (size_t i = 0; i < R; ++i) {
    Slot& s = *p.remote[i];
    if (!pull_of[i].valid()) throw std::logic_error("data_centric: expert " + std::to_string(s.e) + " computed before its pull");
    const TaskId done = compute(s, {pull_of[i]});
    if (s.credit) --in_use;  // the credit comes back: the next pull overlaps later computes
    refill(done);
  }
  if (act) p.forward_built = true;
}

void DataCentric::build_backward(Builder& b, Pass& p, const MoeBuffers* buffers, const std::vector<TaskId>& after) {
  const bool act = b.act;
  if (act && !p.forward_built) throw std::logic_error("data_centric: backward without forward");
  const int C = C_, F = F_;
  const size_t ef = expert_floats_;
  const uint64_t expert_bytes = ef * sizeof(float);  // in memory
  const uint64_t wire_bytes = ef * (uint64_t)b.ctx.wire_element_bytes;
  const std::vector<int>& world = b.ctx.ep_world;
  float* dxg = act ? buffers->dxg : nullptr;
  const float* dy = act ? buffers->dy : nullptr;
  Window* win = grads_win_.get();
  std::vector<TaskId> owned_done, cached_done, remote_done;  // backward tasks, slot order
  for (auto& sp : p.slots) {
    Slot& s = *sp;
    if (act && !s.owned) {
      if (s.node_cached) {
        s.grads = view(ext_grad(local_rank_, s.ext), C, F);
      } else {
        s.grads = view(s.grad.resize(*ops_, (long)ef), C, F);
      }
      ++stats_.cache_hits;
    }
    RowOps* ops = ops_;
    const TaskId t = b.compute("moe.experts_backward", s.e, 8.0 * s.n * C * F, after, [&s, ops, dxg, dy, C, ef] {
      if (!s.owned && !s.node_cached) ops->zero(s.grad.data(), (long)ef);  // a pulled expert's: this pass's alone
      s.bank->backward(dxg + (size_t)s.off * C, dy + (size_t)s.off * C, {s.grads}, {s.params});
    });
    (s.owned ? owned_done : s.node_cached ? cached_done : remote_done).push_back(t);
  }
  // Hierarchical: every local rank's gradient slots are written before the pullers reduce.
  std::vector<TaskId> slots_written = cached_done;
  slots_written.insert(slots_written.end(), after.begin(), after.end());
  const TaskId node_sync = hier_ ? build_node_sync_backward(b, slots_written) : TaskId{};
  // Owners' own gradient writes are done before anyone accumulates into them.
  std::vector<TaskId> before = owned_done;
  before.insert(before.end(), after.begin(), after.end());
  const TaskId barrier = b.collective("janus.sync", before, [win] { win->barrier(); });
  std::vector<TaskId> pushes;
  for (auto& sp : p.slots) {
    Slot& s = *sp;
    if (s.owned || s.node_cached) continue;
    const size_t off = (size_t)(s.e - s.owner * L_) * expert_bytes;
    const TaskId grad = remote_done[pushes.size()];  // pushes holds only remote experts' so far
    pushes.push_back(b.comm("janus.push_grad", Transfer::put, s.e, world[(size_t)s.owner], wire_bytes, {barrier, grad},
                            [win, &s, ef, off] { win->accumulate(s.grad.data(), ef, s.owner, off, ReduceOp::sum); }));
    if (act) {
      ++stats_.pushes;
      stats_.bytes_pushed += expert_bytes;
    }
  }
  if (hier_) build_node_push(b, p, node_sync, barrier, pushes);
  // After this barrier every owner holds all contributions; the node's gradient slots are
  // read, so each rank zeroes its own for the next backward (they start zeroed).
  const bool hier = hier_;
  b.collective("janus.sync", pushes, [this, win, hier] {
    win->barrier();
    if (hier) ops_->zero(ext_grad(local_rank_, 0), (long)(ext_.size() * expert_floats_));
  });
}

DataCentricOptions DataCentricOptions::of(const StrategyConfig& s) {
  return {s.option("data_centric.credits").i, s.option("data_centric.priority").b, s.option("data_centric.prefetch").b,
          s.option("data_centric.hierarchical").b, s.option("data_centric.pcie_pairing").b};
}

namespace {

// Plain (no node cache, no prefetch, no pairing) or with the node cache (hierarchical), prefetch on or off.
void set_cache(StrategyConfig& s, bool hierarchical, bool prefetch) {
  s.option("data_centric.hierarchical").b = hierarchical;
  s.option("data_centric.prefetch").b = prefetch;
  if (!hierarchical) s.option("data_centric.pcie_pairing").b = false;
}

}  // namespace

StrategyDescriptor data_centric_descriptor() {
  StrategyDescriptor d;
  d.spec.name = "data_centric";
  d.spec.summary = "Janus: workers keep their tokens and pull the experts they need with one-sided gets";
  d.spec.options = {int_option("credits", 2, "credit-based buffer size C (experts pulled ahead)").at_least(1),
                    bool_option("priority", true, "staggered pull order (Janus Algorithm 1)"),
                    bool_option("prefetch", false, "start pulling at the beginning of the iteration"),
                    bool_option("hierarchical", false, "node-level expert cache and gradient pre-reduce"),
                    bool_option("pcie_pairing", false, "split node-cache copies between PCIe-switch peers (with hierarchical)")};
  d.spec.per_block_member = true;
  d.spec.exchanges_tokens = false;
  // The pulls move an owner's experts as one block w1|b1|w2|b2 each; a sliced expert's
  // replicated b2 lives apart from its slices in the parameter arena.
  d.spec.expert_tp_refusal = "does not apply to data_centric pulls (strategy.name = \"{name}\"): they fetch whole "
                             "experts; use expert_centric, hier_a2a or monta";
  d.spec.check = [](StrategyCheck& c) {
    if (c.ok({"strategy.data_centric.pcie_pairing", "cluster.pcie_switch_pairs"}) &&
        c.config().strategy.option("data_centric.pcie_pairing").b && c.config().cluster.pcie_switch_pairs.empty())
      c.fail("strategy.data_centric.pcie_pairing", "needs cluster.pcie_switch_pairs (which local ranks share a PCIe switch)");
  };
  d.make = [](const StrategyConfig& s) -> std::unique_ptr<MoeStrategy> {
    return std::make_unique<DataCentric>(DataCentricOptions::of(s));
  };
  // Plain, with the node cache, with the cache and prefetch (its gets start with the iteration
  // in the step graph); plain and cached with twice the config's credits (Janus §5.2's buffer).
  d.candidates = [](const Config& base) {
    const int credits = 2 * base.strategy.option("data_centric.credits").i;
    const std::string more = " C=" + std::to_string(credits);
    return std::vector<PlannerCandidate>{
        {"data_centric", [](StrategyConfig& s) { set_cache(s, false, false); }, true, true},
        {"data_centric + cache", [](StrategyConfig& s) { set_cache(s, true, false); }, true, true, true},
        {"data_centric + cache + prefetch", [](StrategyConfig& s) { set_cache(s, true, true); }},
        {"data_centric" + more,
         [credits](StrategyConfig& s) {
           set_cache(s, false, false);
           s.option("data_centric.credits").i = credits;
         }},
        {"data_centric + cache" + more, [credits](StrategyConfig& s) {
           set_cache(s, true, false);
           s.option("data_centric.credits").i = credits;
         }}};
  };
  d.overlap_variants = [](const Config&, int tp, int) {
    return tp > 1 ? std::vector<BenchVariant>{} : std::vector<BenchVariant>{{"data_centric", [](StrategyConfig&) {}}};
  };
  d.inapplicable = [](const Config& c) -> std::string {
    if (c.strategy.option("data_centric.hierarchical").b && c.cluster.nodes < 2) return "one node: nothing hierarchical to exploit";
    return "";
  };
  return d;
}

}  // namespace moebench
