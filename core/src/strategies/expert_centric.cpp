// expert_centric: GShard / DeepSpeed-MoE expert parallelism. Tokens go to the rank owning
// their expert with one all-to-all-v over the EP group, outputs come back with another
// (FasterMoE §2.3, Fig. 3); with overlap_degree D (Tutel) in D chunks whose exchange overlaps
// the previous chunk's expert compute (strategies/token_exchange.h).
#include <algorithm>
#include <string>
#include <vector>

#include "cost_support.h"
#include "moebench/config/config.h"
#include "moebench/strategies/strategy_descriptor.h"
#include "moebench/strategies/token_exchange.h"

namespace moebench {
namespace {

class ExpertCentric : public TokenExchange {
 public:
  using TokenExchange::TokenExchange;
  std::string name() const override { return "expert_centric"; }

  // Predicted (never measured), balanced routing: each EP rank sends tokens*k/P rows to every
  // other EP rank and gets as many back (dispatch + combine), D = overlap_degree messages each
  // way per peer. On Janus's n x m cluster a machine sends Comm_EC = 2*m*H*T*(n-1)/n floats
  // across machines (§5.1.3, T = tokens*k). Each of its L experts computes P*tokens*k/E rows in
  // D chunk tasks.
  StrategyCost predict(const CostInputs& in, const MoeContext& ctx, const ClusterModel& cluster) const override {
    const int L = cost::experts_per_rank(ctx), P = (int)ctx.ep_world.size(), D = overlap_degree();
    const double rows = in.tokens * in.top_k, row_bytes = (double)ctx.C * ctx.wire_element_bytes;
    std::vector<cost::RankCost> ranks(P);
    for (int i = 0; i < P; ++i) {
      std::vector<cost::Flow> flows;
      for (int j = 0; j < P; ++j)
        if (j != i) flows.push_back({ctx.ep_world[j], 2.0 * rows / P * row_bytes, 2.0 * D});
      ranks[i].bytes = cost::flow_bytes(cluster, ctx.ep_world[i], flows);
      ranks[i].comm_seconds = cost::flow_seconds(cluster, ctx.ep_world[i], flows, ctx.ep_world);
      ranks[i].compute_seconds = cost::experts_seconds(cluster, (double)L * D, P * rows / ctx.experts / D, ctx.C, ctx.F);
    }
    return cost::summarize(cluster, ctx.ep_world, ranks);
  }

 protected:
  TaskId add_transfer(TaskGraph& g, const TransferSpec& t, const std::vector<TaskId>& after,
                      MoeContext& ctx) override {
    return add_all_to_all_v(g, t, after, ctx);
  }
};

}  // namespace

StrategyDescriptor expert_centric_descriptor() {
  StrategyDescriptor d;
  d.spec.name = "expert_centric";
  d.spec.summary = "GShard / DeepSpeed-MoE expert parallelism: tokens to their experts' ranks by all-to-all-v";
  d.spec.options = {overlap_degree_option(
      "Tutel's overlap degree D: each expert's rows in D chunks, chunk i+1's exchange overlaps chunk i's experts")};
  d.spec.per_block_member = true;
  d.spec.check = [](StrategyCheck& c) { check_overlap_degree(c, "expert_centric"); };
  d.spec.chunks = [](const StrategyConfig& s) { return s.option("expert_centric.overlap_degree").i; };
  d.make = [](const StrategyConfig& s) -> std::unique_ptr<MoeStrategy> {
    return std::make_unique<ExpertCentric>(s.option("expert_centric.overlap_degree").i);
  };
  // The config's overlap degree, and 2 when that is 1.
  d.candidates = [](const Config& base) {
    const int degree = base.strategy.option("expert_centric.overlap_degree").i;
    std::vector<PlannerCandidate> out = {
        {"expert_centric" + (degree > 1 ? " D=" + std::to_string(degree) : std::string()), [](StrategyConfig&) {}, true,
         true, true}};
    if (degree == 1)
      out.push_back({"expert_centric D=2", [](StrategyConfig& s) { s.option("expert_centric.overlap_degree").i = 2; }, true});
    return out;
  };
  d.inapplicable = [](const Config& c) {
    return overlap_degree_inapplicable(c, c.strategy.option("expert_centric.overlap_degree").i);
  };
  d.overlap_variants = [](const Config&, int tp, int) {
    std::vector<BenchVariant> out;
    if (tp > 1) return out;
    for (int degree : {1, 2, 4})
      out.push_back({"expert_centric D=" + std::to_string(degree),
                     [degree](StrategyConfig& s) { s.option("expert_centric.overlap_degree").i = degree; }});
    return out;
  };
  return d;
}

}  // namespace moebench
