// Janus's analytical communication model (§5.1.3, eq. 1): predicted, not measured.
#include "moebench/perf/janus_model.h"

#include <stdexcept>

namespace moebench {

namespace {
constexpr double kBytesPerFloat = 4.0;  // fp32
}

double janus_expert_floats(int hidden, int ffn_mult) {
  const double h = hidden, a = ffn_mult;
  return 2.0 * a * h * h + (a + 1.0) * h;  // w1 [aH x H] + b1 [aH] + w2 [H x aH] + b2 [H]
}

double janus_R(double b, int s, int k, int n, int hidden, double e, int ffn_mult) {
  const double denom = (double)ffn_mult * n * hidden * e;
  return denom > 0 ? b * s * k / denom : 0.0;
}

double janus_ec_bytes(double b, int s, int k, int n, int m, int hidden) {
  if (n < 1) return 0.0;
  const double t = b * s * k;
  return 2.0 * m * hidden * t * (double)(n - 1) / n * kBytesPerFloat;
}

double janus_dc_bytes(int n, int m, int hidden, double e, int ffn_mult) {
  if (n < 1) return 0.0;
  return janus_expert_floats(hidden, ffn_mult) * e * m * (double)(n - 1) * kBytesPerFloat;
}

std::vector<JanusBlockPlan> janus_plan(const Config& config, int nodes, int workers_per_node) {
  if (nodes < 1 || workers_per_node < 1)
    throw std::invalid_argument("janus_plan: nodes and workers_per_node must be >= 1, got " +
                                std::to_string(nodes) + " and " + std::to_string(workers_per_node));
  const int world = nodes * workers_per_node;
  const double b = (double)config.train.batch_size / world;
  const int s = config.model.seq_len, k = config.moe.top_k, h = config.model.hidden;
  const int a = config.model.ffn_mult;
  std::vector<JanusBlockPlan> plan;
  for (int block = 0; block < config.model.layers; ++block) {
    const int experts = config.experts_in_block(block);
    if (experts <= 0) continue;
    const double e = (double)experts / world;
    JanusBlockPlan p;
    p.block = block;
    p.experts = experts;
    p.experts_per_worker = (experts + world - 1) / world;
    p.R = janus_R(b, s, k, nodes, h, e, a);
    p.paradigm = p.R > (double)config.strategy.janus.threshold ? "data_centric" : "expert_centric";
    p.ec_bytes = janus_ec_bytes(b, s, k, nodes, workers_per_node, h);
    p.dc_bytes = janus_dc_bytes(nodes, workers_per_node, h, e, a);
    plan.push_back(p);
  }
  return plan;
}

}  // namespace moebench
