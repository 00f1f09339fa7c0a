// ppmoe: Pipeline MoE's expert parallelism inside the tensor-parallel group (Pipeline MoE §3.3,
// Algorithm 1). The EP group is the TP group: every rank holds the same tokens (tensor
// parallelism all-reduced them before the block) and routes them identically, so nothing is
// exchanged to dispatch: a rank index-selects the rows of its own E/T experts (N x T = E),
// runs them, and leaves zeros in the other experts' slots; the combine gives this rank's share
// of the output, which MoeLayer all-reduces over the group (MoeStrategy::partial_outputs). In
// backward the mirrored all-reduce sums the shares of dx, and the router's partial gradients
// are all-reduced once per step (h x E floats, §3.3.4). No all-to-all.
//
// Dispatch order: MoeLayer's gathered rows are already grouped by expert (moe/dispatch_layout.h),
// so this rank's experts own one contiguous range of slots; the index-select is that range.
#include <stdexcept>
#include <string>
#include <vector>

#include "cost_support.h"
#include "moebench/config/config.h"
#include "moebench/moe/row_ops.h"
#include "moebench/moe/typed_strategy.h"
#include "moebench/strategies/strategy_descriptor.h"

namespace moebench {
namespace {

struct PpmoeHandle : MoeHandle {
  long first = 0, last = 0, total = 0;  // this rank's slot rows [first, last) of `total`
  std::vector<int> offsets;             // [L+1] rows of each local expert, from `first`
  std::unique_ptr<ExpertCompute> bank;  // in the block's memory (MoeContext::row_ops)
};

class Ppmoe : public StrategyOf<PpmoeHandle> {
 public:
  std::string name() const override { return "ppmoe"; }
  // Every rank of the group routes the same tokens: its own counts are everyone's.
  bool exchanges_counts() const override { return false; }
  bool partial_outputs() const override { return true; }

  std::unique_ptr<PpmoeHandle> layout_pass(const ExchangeCounts& counts, MoeContext& ctx) override {
    ctx.sync_group();
    const int P = ctx.ep_size, me = ctx.ep_rank, E = ctx.experts;
    const int L = cost::experts_per_rank(ctx);
    if (counts.E != E || counts.P != P || counts.rows.size() != (size_t)P * E)
      throw std::invalid_argument("ppmoe: counts are not a " + std::to_string(P) + " x " + std::to_string(E) + " matrix");
    if (ctx.ep && ((int)ctx.local.size() != L || ctx.first_local != me * L))
      throw std::invalid_argument("ppmoe: rank " + std::to_string(me) + " of the tensor-parallel group must own experts [" +
                                  std::to_string(me * L) + ", " + std::to_string(me * L + L) + ")");
    auto h = std::make_unique<PpmoeHandle>();
    h->offsets.assign(L + 1, 0);
    for (int e = 0; e < E; ++e) {
      const long n = counts.at(me, e);
      if (e < me * L) h->first += n;
      else if (e < me * L + L) h->offsets[e - me * L + 1] = h->offsets[e - me * L] + (int)n;
      h->total += n;
    }
    h->last = h->first + h->offsets[L];
    return h;
  }

  std::vector<TaskId> build_pass(TaskGraph& g, PpmoeHandle& h, MoePass pass, const std::vector<TaskId>& after,
                                 const MoeBuffers* buffers, MoeContext& ctx) override {
    const bool fwd = pass == MoePass::forward;
    const int C = ctx.C, F = ctx.F;
    GraphTask t;
    t.name = fwd ? "moe.experts" : "moe.experts_backward";
    t.category = TaskCategory::compute;
    t.role = StreamRole::compute;
    t.layer = ctx.layer;
    t.cost.flops = (fwd ? 4.0 : 8.0) * (double)(h.last - h.first) * C * F;
    if (buffers) {
      // Rows outside [first, last) belong to the other ranks' experts: zero here, so the
      // combine (and the scatter of dx) sums this rank's share only.
      const long lo = h.first * C, hi = h.last * C, all = h.total * C;
      RowOps& ops = ctx.row_ops();
      if (fwd) {
        if (!h.bank) h.bank = ops.make_experts();
        float* y = buffers->y;
        const float* x = buffers->xg;
        t.action = [&h, &ctx, &ops, y, x, lo, hi, all, C, F] {
          ops.zero(y, lo);
          ops.zero(y + hi, all - hi);
          h.bank->forward(y + lo, x + lo, h.offsets, ctx.local, C, F);
        };
      } else {
        if (!h.bank) throw std::logic_error("ppmoe: backward needs its forward");
        float* dx = buffers->dxg;
        const float* dy = buffers->dy;
        t.action = [&h, &ctx, &ops, dx, dy, lo, hi, all] {
          ops.zero(dx, lo);
          ops.zero(dx + hi, all - hi);
          h.bank->backward(dx + lo, dy + lo, ctx.local_grads, ctx.local);
        };
      }
    }
    return {g.add(std::move(t), after)};
  }

  // Predicted, balanced routing: each of the T ranks runs its E/T experts on tokens*k/E rows
  // each (every rank holds all `tokens`), and sends 2 (T-1)/T x tokens x C x 4 bytes to the
  // ring's next rank for the output all-reduce (§3.3.4; the router's h x E sync is per step,
  // not per block pass, and not included).
  StrategyCost predict(const CostInputs& in, const MoeContext& ctx, const ClusterModel& cluster) const override {
    const int L = cost::experts_per_rank(ctx), P = (int)ctx.ep_world.size();
    const double reduce_bytes = P > 1 ? 2.0 * (P - 1) / P * in.tokens * ctx.C * ctx.wire_element_bytes : 0.0;
    std::vector<cost::RankCost> ranks(P);
    for (int i = 0; i < P; ++i) {
      std::vector<cost::Flow> flows;
      if (P > 1) flows.push_back({ctx.ep_world[(i + 1) % P], reduce_bytes, 2.0 * (P - 1)});
      ranks[i].bytes = cost::flow_bytes(cluster, ctx.ep_world[i], flows);
      ranks[i].comm_seconds = cost::flow_seconds(cluster, ctx.ep_world[i], flows, ctx.ep_world);
      ranks[i].compute_seconds = cost::experts_seconds(cluster, L, in.tokens * in.top_k / ctx.experts, ctx.C, ctx.F);
    }
    return cost::summarize(cluster, ctx.ep_world, ranks);
  }
};

}  // namespace

StrategyDescriptor ppmoe_descriptor() {
  StrategyDescriptor d;
  d.spec.name = "ppmoe";
  d.spec.summary = "Pipeline MoE: a block's experts spread over the tensor-parallel group, which holds its tokens";
  d.spec.expert_groups = ExpertGroups::tensor_parallel;
  d.spec.expert_tp_refusal = "does not apply to strategy.name = \"{name}\" (it places whole experts inside the "
                             "tensor-parallel group); use expert_centric or hier_a2a";
  d.make = [](const StrategyConfig&) -> std::unique_ptr<MoeStrategy> { return std::make_unique<Ppmoe>(); };
  return d;
}

}  // namespace moebench
