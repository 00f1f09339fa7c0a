// fastermoe: FasterMoE (PPoPP'22) on expert_centric's exchange, each optimisation a switch of
// [strategy.fastermoe] (strategies/fastermoe.h):
// - shadow (§4.1): every pass, from the EP group's counts matrix T (known to every rank: no
//   extra communication), Algorithm 1 on the topology-aware model (eq. 1-2 over the cluster's
//   links, perf/fastermoe_model.h) picks the experts whose parameters are cheaper to broadcast
//   than their tokens are to send. Their rows never enter
//   the exchange (TokenExchange::chunk_rows leaves them out); every rank computes its own rows
//   of them with the broadcast copy, and in backward their gradients are reduced to the owner
//   (binomial tree), which adds them to its own.
// - smart (§4.2, Fig. 7-8): the EP ranks form n groups of g; chunk j of the exchange carries
//   what rank r sends to group (group(r) - j) mod n, so step j's S_j receives from group
//   (group(r) + j) mod n, C_j computes those rows and R_j returns them. TokenExchange queues
//   S_0, S_1, R_0, S_2, R_1, ..., R_{n-1}: the local group (the fastest S) first and the ring
//   step n-1 (neighbour groups only) last, the order §4.2 derives. Any number of experts per
//   rank: C_j is every local expert on the rows of group j.
// - topo_gate (§4.3): the router's choice through the topology-aware gate (moe/topo_gate.h,
//   choice_policy; the gate on the cluster: strategies/fastermoe_gate.h); the exchange is
//   unchanged by it.
// Every pass also stores eq. 1 and eq. 2's predictions with its real loads (decisions()).
#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cost_support.h"
#include "fastermoe_shadow.h"
#include "moebench/config/config.h"
#include "moebench/dist/topology.h"
#include "moebench/perf/cluster_network.h"
#include "moebench/perf/fastermoe_model.h"
#include "moebench/strategies/fastermoe_gate.h"
#include "moebench/strategies/fastermoe.h"
#include "moebench/strategies/strategy_descriptor.h"
#include "moebench/strategies/token_exchange.h"

namespace moebench {
namespace {

class FasterMoe : public TokenExchangeOf<ShadowState> {
 public:
  explicit FasterMoe(const FasterMoeOptions& options) : TokenExchangeOf(1), options_(options) {}
  std::string name() const override { return kFasterMoeName; }

  // topo_gate (§4.3): this rank's gate on the cluster the run assumes (its EP group placed by
  // the cluster's nodes), applied to every forward's choice.
  GatePolicy choice_policy(const MoeContext& ctx) const override {
    if (!options_.topo_gate) return {};
    if (!ctx.cluster) throw std::invalid_argument("fastermoe: topo_gate needs the cluster model the run assumes");
    const TopoGate gate = make_topo_gate(*ctx.cluster, ctx.ep_world, ctx.ep_rank);
    return [gate](Routing& r) { apply_topo_gate(r, gate); };
  }

  // Predicted, balanced routing (the papers' lower bound): no expert is hotter than another, so
  // Algorithm 1 shadows none and the bytes are expert_centric's; smart sends them in n steps.
  StrategyCost predict(const CostInputs& in, const MoeContext& ctx, const ClusterModel& cluster) const override {
    const int L = cost::experts_per_rank(ctx), P = (int)ctx.ep_world.size();
    const int n = options_.smart ? P / group_size(ctx) : 1;
    const double rows = in.tokens * in.top_k, row_bytes = (double)ctx.C * ctx.wire_element_bytes;
    std::vector<cost::RankCost> ranks(P);
    for (int i = 0; i < P; ++i) {
      std::vector<cost::Flow> flows;
      for (int j = 0; j < P; ++j)
        if (j != i) flows.push_back({ctx.ep_world[j], 2.0 * rows / P * row_bytes, 2.0});
      ranks[i].bytes = cost::flow_bytes(cluster, ctx.ep_world[i], flows);
      ranks[i].comm_seconds = cost::flow_seconds(cluster, ctx.ep_world[i], flows, ctx.ep_world);
      ranks[i].compute_seconds = cost::experts_seconds(cluster, (double)L * n, P * rows / ctx.experts / n, ctx.C, ctx.F);
    }
    return cost::summarize(cluster, ctx.ep_world, ranks);
  }

  std::vector<TaskId> build_pass(TaskGraph& g, ExchangeHandle& handle, MoePass pass, const std::vector<TaskId>& after,
                                 const MoeBuffers* buffers, MoeContext& ctx) override {
    ShadowState& st = state(handle);
    if (st.experts.empty()) return TokenExchange::build_pass(g, handle, pass, after, buffers, ctx);
    // Forward: the broadcasts lead the comm queue and the shadows' compute the compute queue;
    // backward: the shadows' compute first, their reductions after the exchange's return trip.
    if (pass == MoePass::forward) {
      const TaskId shadows = add_shadow_forward(g, st, after, buffers, ctx);
      std::vector<TaskId> exits = TokenExchange::build_pass(g, handle, pass, after, buffers, ctx);
      exits.push_back(shadows);
      return exits;
    }
    const TaskId computed = add_shadow_backward(g, st, after, buffers, ctx);
    std::vector<TaskId> exits = TokenExchange::build_pass(g, handle, pass, after, buffers, ctx);
    for (TaskId t : add_shadow_reduce(g, st, computed, buffers != nullptr, ctx)) exits.push_back(t);
    return exits;
  }

  std::vector<StrategyDecision> pass_decisions(const ExchangeHandle& handle) const override {
    std::vector<StrategyDecision> out = TokenExchange::pass_decisions(handle);
    const ShadowState& st = state(handle);
    out.push_back({"fastermoe.shadowed", (double)st.experts.size()});
    for (int e : st.experts) out.push_back({"fastermoe.shadow.e" + std::to_string(e), 1.0});
    if (st.predicted) {
      out.push_back({"fastermoe.predicted_comp_ms", st.comp_seconds * 1e3});
      out.push_back({"fastermoe.predicted_comm_ms", st.comm_seconds * 1e3});
    }
    return out;
  }

 protected:
  int state_chunks(const ShadowState& st) const override { return st.groups; }

  long state_chunk_rows(const ExchangeCounts& counts, const ShadowState& st, int s, int e, int i,
                        int chunks) const override {
    if (st.shadowed[(size_t)e]) return 0;  // computed where the tokens are
    if (chunks == 1) return counts.at(s, e);
    const int L = counts.E / counts.P, g = counts.P / chunks;
    const int from = s / g, to = (e / L) / g;
    return to == ((from - i) % chunks + chunks) % chunks ? counts.at(s, e) : 0;
  }

  std::unique_ptr<ShadowState> make_state(const ExchangeCounts& counts, MoeContext& ctx) override {
    auto st = std::make_unique<ShadowState>();
    const int P = counts.P, E = counts.E;
    st->groups = options_.smart ? P / group_size(ctx) : 1;
    st->shadowed.assign((size_t)E, 0);
    if (options_.shadow && P > 1 && !ctx.cluster)
      throw std::invalid_argument("fastermoe: shadowing needs the cluster model the run assumes");
    if (ctx.cluster) {  // graphs without a cluster (unit tests) neither shadow nor predict
      const ClusterModel& cluster = *ctx.cluster;
      ShadowModel m;
      m.P = P, m.E = E, m.H = ctx.C, m.F = ctx.F;
      m.bytes_per_element = ctx.wire_element_bytes;
      m.T.assign(counts.rows.begin(), counts.rows.end());
      if (options_.shadow_budget_mb > 0)
        m.max_shadows = (int)(options_.shadow_budget_mb * 1e6 / (2.0 * cost::expert_bytes(ctx.C, ctx.F, sizeof(float))));
      if (!network_) network_ = std::make_unique<ClusterNetwork>(cluster);  // one cluster per run
      // Algorithm 1 on eq. 1-2 over the cluster's links (perf/fastermoe_model.h).
      if (options_.shadow && P > 1) st->experts = select_shadow_experts(m, *network_, ctx.ep_world).experts;
      std::sort(st->experts.begin(), st->experts.end());
      for (int e : st->experts) st->shadowed[(size_t)e] = 1;
      predict_pass(*st, counts, cluster, ctx);
    }
    st->place_rows(counts, ctx);
    return st;
  }

  TaskId add_state_transfer(TaskGraph& g, const TransferSpec& t, ShadowState& st, const std::vector<TaskId>& after,
                            MoeContext& ctx) override {
    (void)st;
    return add_all_to_all_v(g, t, after, ctx);
  }

 private:
  // smart's group size: group_size, else the EP ranks on this rank's node (the config checks
  // that every node holds as many of the group and that they divide it).
  int group_size(const MoeContext& ctx) const {
    if (options_.group_size > 0) return options_.group_size;
    auto node = [&](int r) { return ctx.cluster ? ctx.cluster->node_of(r) : ctx.topology ? ctx.topology->node_of(r) : 0; };
    const int mine = node(ctx.ep_world[(size_t)ctx.ep_rank]);
    int g = 0;
    for (int r : ctx.ep_world) g += node(r) == mine ? 1 : 0;
    if (g < 1 || (int)ctx.ep_world.size() % g != 0)
      throw std::invalid_argument("fastermoe: smart groups the EP ranks of a node, but " + std::to_string(g) +
                                  " of this node do not divide the EP group of " + std::to_string(ctx.ep_world.size()));
    return g;
  }

  // eq. 1 on the loads this pass computes (owners' rows of unshadowed experts, every rank's own
  // rows of shadowed ones) and eq. 2 on one all-to-all of the unshadowed rows plus the shadows'
  // ring broadcasts from their owners; forward, predicted.
  void predict_pass(ShadowState& st, const ExchangeCounts& counts, const ClusterModel& cluster, const MoeContext& ctx) {
    const int P = counts.P, E = counts.E, L = E / P;
    std::vector<double> loads(P, 0.0), bytes((size_t)P * P, 0.0);
    const double row_bytes = (double)ctx.C * ctx.wire_element_bytes;
    for (int s = 0; s < P; ++s)
      for (int e = 0; e < E; ++e) {
        const int w = st.shadowed[(size_t)e] ? s : e / L;
        loads[w] += (double)counts.at(s, e);
        if (w != s) bytes[(size_t)s * P + w] += (double)counts.at(s, e) * row_bytes;
      }
    LinkTraffic traffic(*network_);
    traffic.add_all_to_all_v(ctx.ep_world, bytes);
    for (int e : st.experts) traffic.add_ring_broadcast(ctx.ep_world, e / L, cost::expert_bytes(ctx.C, ctx.F, ctx.wire_element_bytes));
    st.comp_seconds = fastermoe_comp_seconds(loads, ctx.C, ctx.F, cluster);
    st.comm_seconds = traffic.seconds();
    st.predicted = true;
  }

  FasterMoeOptions options_;
  std::unique_ptr<ClusterNetwork> network_;  // of ctx.cluster, made on first use
};

// [strategy.fastermoe] against the layout: smart's groups divide the expert-parallel group (by
// group_size, or as the nodes cut it: group_size = 0), and a shadow budget holds one expert.
// A group is `ep` consecutive data-parallel ranks of one tensor-parallel rank (world ranks tp
// apart, as hier_a2a.cpp's check_node_groups), so the ranks of one node are consecutive in it.
void check_fastermoe(StrategyCheck& check, const ParallelLayout& layout, int per_node) {
  const Config& c = check.config();
  const FasterMoeOptions f = FasterMoeOptions::of(c.strategy);
  const int ep = layout.ep();
  if (check.ok({"strategy.fastermoe.smart", "strategy.fastermoe.group_size"}) && f.smart) {
    if (f.group_size > 0 && ep % f.group_size != 0) {
      check.fail("strategy.fastermoe.group_size", "must divide the expert-parallel group of " + std::to_string(ep) +
                                                " ranks, got " + std::to_string(f.group_size));
    } else if (f.group_size == 0) {
      int g = 0;  // EP ranks per node: equal on every node of every group
      for (const std::vector<int>& members : layout.ep_groups()) {
        std::map<int, int> on_node;
        for (int r : members) ++on_node[r / per_node];
        for (const auto& [node, n] : on_node) {
          if (g == 0) g = n;
          if (n == g && ep % g == 0) continue;
          check.fail("strategy.fastermoe.smart", "groups the EP ranks of a node (group_size = 0), but an expert-parallel "
                                                 "group of " + std::to_string(ep) + " ranks holds " + std::to_string(n) +
                                                 " on node " + std::to_string(node) + " and " + std::to_string(g) +
                                                 " on another; set group_size to a divisor of " + std::to_string(ep));
          return;
        }
      }
    }
  }
  if (check.ok({"strategy.fastermoe.shadow", "strategy.fastermoe.shadow_budget_mb", "model.hidden", "model.ffn_mult"}) &&
      f.shadow && f.shadow_budget_mb > 0) {
    const double C = c.model.hidden, F = (double)c.model.ffn_mult * c.model.hidden;
    const double bytes = 2.0 * 4.0 * (2.0 * C * F + C + F);  // w1, b1, w2, b2 and their gradients, fp32
    if (f.shadow_budget_mb * 1e6 < bytes)
      check.fail("strategy.fastermoe.shadow_budget_mb", "cannot hold one shadowed expert: its parameters and gradients take " +
                                                      std::to_string(bytes / 1e6) + " MB (model.hidden = " +
                                                      std::to_string(c.model.hidden) + ", model.ffn_mult = " +
                                                      std::to_string(c.model.ffn_mult) + "), the budget is " +
                                                      std::to_string(f.shadow_budget_mb) + " MB");
  }
}

}  // namespace

FasterMoeOptions FasterMoeOptions::of(const StrategyConfig& s) {
  return {s.option("fastermoe.shadow").b, s.option("fastermoe.shadow_budget_mb").d, s.option("fastermoe.smart").b,
          s.option("fastermoe.group_size").i, s.option("fastermoe.topo_gate").b};
}

StrategyDescriptor fastermoe_descriptor() {
  StrategyDescriptor d;
  d.spec.name = "fastermoe";
  d.spec.summary = "FasterMoE: expert_centric's exchange with dynamic shadowing, the smart schedule, a topology-aware gate";
  d.spec.options = {
      bool_option("shadow", false,
                  "dynamic shadowing: broadcast the experts cheaper to move than their tokens (FasterMoE Algorithm 1)"),
      double_option("shadow_budget_mb", 0.0, "per-rank memory for shadowed experts' parameters and gradients, MB; 0 = no limit")
          .at_least(0),
      bool_option("smart", false,
                  "smart schedule: the exchange in pairwise group steps overlapping the experts (FasterMoE Fig. 8)"),
      int_option("group_size", 0, "EP ranks per pairwise-exchange group of smart; 0 = the EP ranks of a node")
          .at_least(0, " (0 = the EP ranks of a node)"),
      bool_option("topo_gate", false,
                  "topology-aware gate: at most W_net / (M W_local) x B assignments per rank leave the node")};
  d.spec.per_block_member = true;
  d.spec.expert_tp_refusal = "does not apply to fastermoe (strategy.name = \"{name}\"): shadowing broadcasts whole "
                             "experts; use expert_centric, hier_a2a or monta";
  d.spec.check_layout = check_fastermoe;
  d.make = [](const StrategyConfig& s) -> std::unique_ptr<MoeStrategy> {
    return std::make_unique<FasterMoe>(FasterMoeOptions::of(s));
  };
  d.topo_gate = [](const StrategyConfig& s) { return FasterMoeOptions::of(s).topo_gate; };
  // The smart schedule with the ranks of a node as a group (more than one node), and groups of one.
  d.overlap_variants = [](const Config&, int tp, int nodes) {
    std::vector<BenchVariant> out;
    if (tp > 1) return out;
    for (int group : {0, 1})
      if (group > 0 || nodes >= 2)
        out.push_back({"fastermoe smart g=" + (group > 0 ? std::to_string(group) : std::string("node")),
                       [group](StrategyConfig& s) {
                         s.option("fastermoe.smart").b = true;
                         s.option("fastermoe.group_size").i = group;
                       }});
    return out;
  };
  return d;
}

}  // namespace moebench
