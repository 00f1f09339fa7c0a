// janus: R (eq. 1) per MoE block, the paradigm it picks, and both paradigms' predictions.
#include "moebench/strategies/janus.h"

#include <cstdio>
#include <stdexcept>

#include "moebench/config/config_layout.h"
#include "moebench/strategies/registry.h"
#include "moebench/strategies/strategy_descriptor.h"

namespace moebench {

double janus_R(double b, int s, int k, int n, int hidden, double e, int ffn_mult) {
  const double denom = (double)ffn_mult * n * hidden * e;
  return denom > 0 ? b * s * k / denom : 0.0;
}

std::vector<JanusDecision> janus_decisions(const Config& cfg, int nodes, int workers_per_node) {
  if (nodes < 1 || workers_per_node < 1)
    throw std::invalid_argument("janus: nodes and workers_per_node must be >= 1, got " + std::to_string(nodes) +
                                " and " + std::to_string(workers_per_node));
  const int world = nodes * workers_per_node;
  const double b = (double)cfg.train.batch_size / world;
  std::vector<JanusDecision> out;
  for (int block = 0; block < cfg.model.layers; ++block) {
    const int experts = cfg.experts_in_block(block);
    if (experts <= 0) continue;
    JanusDecision d;
    d.block = block;
    d.experts = experts;
    d.experts_per_worker = (experts + world - 1) / world;
    d.R = janus_R(b, cfg.model.seq_len, cfg.moe.top_k, nodes, cfg.model.hidden, (double)experts / world,
                  cfg.model.ffn_mult);
    d.paradigm = d.R > (double)cfg.strategy.option("janus.threshold").f ? "data_centric" : "expert_centric";
    out.push_back(d);
  }
  return out;
}

std::vector<JanusBlockPlan> janus_plan(const Config& cfg, const ClusterModel& cluster) {
  const int world = cluster.world_size();
  const ParallelLayout layout = layout_of(cfg);
  const CostInputs load{(double)cfg.train.batch_size / world * cfg.model.seq_len, cfg.moe.top_k};
  // data_centric as Janus designs it (the node cache: Comm_DC pulls each expert once per machine).
  StrategyConfig node_cache = cfg.strategy;
  node_cache.option("data_centric.hierarchical").b = true;
  const auto expert_centric = make_strategy("expert_centric", cfg.strategy);
  const auto data_centric = make_strategy("data_centric", node_cache);
  std::vector<JanusBlockPlan> out;
  for (const JanusDecision& d : janus_decisions(cfg, cluster.nodes(), cluster.devices_per_node())) {
    MoeContext ctx;
    ctx.layer = d.block;
    ctx.experts = d.experts;
    ctx.C = cfg.model.hidden;
    ctx.F = cfg.model.ffn_mult * cfg.model.hidden;
    ctx.ep_size = layout.ep();  // rank 0's EP group
    ctx.ep_world = layout.ep_group(0);
    ctx.wire_element_bytes = cluster.wire_element_bytes();  // a prediction: the cluster's workload
    JanusBlockPlan p;
    p.decision = d;
    p.expert_centric = expert_centric->predict(load, ctx, cluster);
    p.data_centric = data_centric->predict(load, ctx, cluster);
    out.push_back(p);
  }
  return out;
}

const StrategyCost& JanusBlockPlan::chosen() const {
  return decision.paradigm == "data_centric" ? data_centric : expert_centric;
}

std::string janus_decision_table(const Config& cfg, int nodes, int workers_per_node) {
  char line[160];
  std::snprintf(line, sizeof line, "janus: per MoE block, R = BSk/(4nHE) (predicted), data_centric where R > %g\n",
                cfg.strategy.option("janus.threshold").f);
  std::string out = line;
  std::snprintf(line, sizeof line, "  %5s %7s %6s %8s  %s\n", "block", "experts", "E/rank", "R", "paradigm");
  out += line;
  for (const JanusDecision& d : janus_decisions(cfg, nodes, workers_per_node)) {
    std::snprintf(line, sizeof line, "  %5d %7d %6d %8.2f  %s\n", d.block, d.experts, d.experts_per_worker, d.R,
                  d.paradigm.c_str());
    out += line;
  }
  return out;
}

StrategyDescriptor janus_descriptor() {
  StrategyDescriptor d;
  d.spec.name = "janus";
  d.spec.summary = "Janus's unified paradigm: per MoE block data_centric where R = BSk/(4nHE) > threshold, else expert_centric";
  d.spec.options = {float_option("threshold", 1.0f, "data_centric where R = BSk/(4nHE) > threshold").at_least(0)};
  d.spec.reads = {"expert_centric", "data_centric"};
  d.spec.chooser = true;
  d.choose = [](const Config& cfg, int nodes, int per_node) {
    std::map<int, std::string> out;
    for (const JanusDecision& j : janus_decisions(cfg, nodes, per_node)) out[j.block] = j.paradigm;
    return out;
  };
  d.choice_note = janus_decision_table;
  return d;
}

}  // namespace moebench
