#pragma once
// MoeLayer: one MoE block on one rank: router -> dispatch (gather the kept assignments'
// tokens grouped by expert) -> experts -> gate-weighted combine; and its backward. The row
// work runs on the layer's MoeRows (moe/moe_rows.h: the host's by default, a GPU's for a model
// in device memory). The experts run locally (all E experts on this rank, on the calling
// thread) or,
// once set_strategy() is called, through a distributed MoeStrategy: then each pass is a task
// graph (moe/block_graph.h) run by ctx.executor (or the layer's own): the calling thread
// submits the router and the counts exchange, waits for the counts, lets the strategy lay
// out and build its tasks, submits them with the combine and waits for the combine. It keeps
// the routing, the strategy's handle and the activations of the last forward for backward.
// A gate policy (moe/router.h: the strategy's MoeStrategy::choice_policy, e.g. FasterMoE's
// topology-aware gate, or set_gate_policy's) rewrites the router's choice before gates,
// capacity and aux (forced choices too).
//
// Determinism: as the rows' (both implementations are bit-identical run to run).
#include <memory>
#include <vector>

#include "moebench/moe/moe_rows.h"
#include "moebench/moe/moe_strategy.h"

namespace moebench {

class Communicator;
class Executor;

class MoeLayer {
 public:
  MoeLayer();  // the host's rows
  explicit MoeLayer(std::unique_ptr<MoeRows> rows);
  ~MoeLayer();
  // Distributed experts: from now on `experts` arguments are ignored and ctx.local (the
  // experts this rank owns) is used through the strategy; the gate policy becomes the
  // strategy's (MoeStrategy::choice_policy).
  void set_strategy(std::unique_ptr<MoeStrategy> strategy, MoeContext ctx);
  // Computes the aux loss from the statistics of the whole global batch (all-reduced over
  // `dp`, the data-parallel group) instead of this rank's tokens, so the loss and its
  // gradient equal those of one rank holding the global batch.
  void set_stats_communicator(Communicator* dp) { stats_ = dp; }
  // The gate policy of the following forwards (empty: none); replaces the strategy's. For
  // the layer without a strategy: tests, one-rank experiments.
  void set_gate_policy(GatePolicy policy) { policy_ = std::move(policy); }
  // Start of a model forward pass, before the gate: the strategy's iteration-start tasks (Janus
  // prefetch's gets) added to g after `after` (none without a strategy); the next add_forward
  // into g waits for them. begin_iteration() puts them at the start of the next forward()'s graph.
  std::vector<TaskId> add_iteration_start(TaskGraph& g, TaskId after);
  void begin_iteration() { start_pending_ = true; }

  // out[N,C] (overwritten) = sum over kept (n,k) of gate[n,k] * expert_{e[n,k]}(x[n]);
  // expert(x) = W2 gelu(W1 x + b1) + b2. router_w is [E,C]. Returns the unweighted aux loss.
  // forced_experts: optional [N,K] override of the top-k choice (synthetic routing).
  float forward(float* out, const float* x, const float* router_w,
                const std::vector<ExpertParams>& experts, const MoeLayerShape& s,
                const int* forced_experts = nullptr);

  // Accumulates (+=) dx[N,C], drouter_w[E,C] and the expert gradients (dexperts: same layout
  // as experts; with a strategy, ctx.local_grads) given dout[N,C]; aux_weight is the weight
  // of this block's aux loss in the total loss.
  void backward(float* dx, float* drouter_w, const std::vector<ExpertParams>& dexperts,
                const float* dout, float aux_weight, const float* x, const float* router_w,
                const std::vector<ExpertParams>& experts);

  // A step graph's pass of the block (needs a strategy): the forward's tasks added to g after
  // `after` and run by ex — g is submitted, the counts waited for (the routing point), the
  // strategy's tasks and the combine added and submitted — returning the pass's last task
  // without waiting for it; the backward's tasks added (not submitted). Backward's dx is
  // overwritten (the combine-backward task zeroes it). forward()/backward() run the same tasks
  // in a graph of their own and wait for them.
  TaskId add_forward(TaskGraph& g, Executor& ex, TaskId after, float* out, const float* x, const float* router_w,
                     const MoeLayerShape& s, const int* forced_experts = nullptr);
  TaskId add_backward(TaskGraph& g, TaskId after, float* dx, float* drouter_w, const float* dout, float aux_weight,
                      const float* x, const float* router_w);

  // The last forward's routing on the host (a device's rows throw std::logic_error), its
  // unweighted aux loss (the group's with a statistics communicator) and kept assignments per
  // expert [E].
  const Routing& routing() const { return rows_->host_routing(); }
  float aux() const { return rows_->aux(); }
  const std::vector<int>& kept_counts() const { return kept_; }
  const MoeLayerShape& shape() const { return s_; }
  const MoeStrategy* strategy() const { return strategy_.get(); }
  // The strategy's choices for the last forward (MoeStrategy::decisions); none without one.
  std::vector<StrategyDecision> decisions() const {
    return strategy_ && handle_ ? strategy_->decisions(*handle_) : std::vector<StrategyDecision>{};
  }
  // Dispatch layout of the last forward: expert e owns slots [offsets[e], offsets[e+1]) of
  // the gathered buffers; slot_of[n*K+k] is the slot of an assignment (-1 when dropped).
  const std::vector<int>& expert_offsets() const { return rows_->offsets(); }
  const std::vector<int>& slot_of() const { return rows_->host_slot_of(); }
  // With a strategy: the graphs the last forward and backward ran (their schedules; the
  // actions went to the executor).
  const TaskGraph& last_forward_graph() const { return fwd_graph_; }
  const TaskGraph& last_backward_graph() const { return bwd_graph_; }

 private:
  MoeLayerShape s_{};
  bool have_forward_ = false;
  bool start_pending_ = false;  // begin_iteration(): forward()'s graph starts with the iteration start
  void route(const float* x, const float* router_w, const int* forced_experts);
  TaskId forward_tasks(TaskGraph& g, Executor& ex, TaskId after, float* out, const float* x, const float* router_w,
                       const int* forced_experts);
  TaskId backward_tasks(TaskGraph& g, TaskId after, float* dx, float* drouter_w, const float* dout, float aux_weight,
                        const float* x, const float* router_w, bool overwrite_dx);
  Executor& executor();

  std::unique_ptr<MoeRows> rows_;
  std::unique_ptr<MoeStrategy> strategy_;
  MoeContext ctx_;
  std::unique_ptr<Executor> own_executor_;  // when ctx_.executor is null
  std::unique_ptr<MoeHandle> handle_;       // the strategy's state of the last forward
  TaskGraph fwd_graph_, bwd_graph_;
  std::vector<long> my_counts_, counts_;    // [E], [P*E] rows per expert (this rank, the group)
  GatePolicy policy_;                       // applied to the router's choice (empty: none)
  Communicator* stats_ = nullptr;
  std::vector<int> kept_;      // [E] kept assignments per expert of the last forward
};

// Replaces the aux-loss statistics of r (computed from this rank's tokens) by those of the
// whole group: f_e from the summed selections over N_total * K, P_e from the summed
// probabilities over N_total, aux = E * sum f_e P_e. r.N stays local, so the router's
// gradient, once averaged over the group, is that of the global-batch aux loss.
void globalize_aux(Routing& r, Communicator& group);

// The same from the statistics alone (a device block's, model/cuda_backend.h): this rank's
// selections per expert [E], tokens N and probability sums per expert [E] in, the group's f, P
// [E] and aux out (the all-reduce of 2E + 1 doubles over `group`).
struct AuxStats {
  std::vector<float> f, P;
  float aux = 0.0f;
};
AuxStats global_aux_stats(const std::vector<double>& selected, double N, const std::vector<double>& prob_sums, int K,
                          Communicator& group);

}  // namespace moebench
