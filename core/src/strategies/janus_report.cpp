// janus's `moebench plan CONFIG` report (strategies/janus.h): the Janus plan as JSON and text.
#include <cstdarg>
#include <cstdio>

#include "moebench/strategies/janus.h"

namespace moebench {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

nlohmann::json cost_json(const StrategyCost& c) {
  return {{"rank_intra_bytes", c.rank.intra},     {"rank_inter_bytes", c.rank.inter},
          {"machine_intra_bytes", c.machine.intra}, {"machine_inter_bytes", c.machine.inter},
          {"comm_seconds", c.comm_seconds},       {"compute_seconds", c.compute_seconds}};
}

[[gnu::format(printf, 2, 3)]] void appendf(std::string& out, const char* format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  out += line;
}

// Janus's notation (janus.h) on the cluster, and both paradigms' inter-node bytes summed over the blocks.
struct Shape {
  int n = 0, m = 0, world = 0;
  double b = 0, ec_total = 0, dc_total = 0;
};

Shape shape_of(const Config& cfg, const ClusterModel& cluster, const std::vector<JanusBlockPlan>& plan) {
  Shape z{cluster.nodes(), cluster.devices_per_node(), cluster.world_size()};
  z.b = (double)cfg.train.batch_size / z.world;
  for (const auto& p : plan) {
    z.ec_total += p.expert_centric.machine.inter;
    z.dc_total += p.data_centric.machine.inter;
  }
  return z;
}

const char* const kWhat =
    "predicted by the Janus model (SIGCOMM'23 §5.1.3, eq. 1: R = BSk/(4nHE)) and the strategies' cost models on "
    "the cluster model (E.C. = expert_centric, D.C. = data_centric with its node cache); traffic is inter-node, per machine, per "
    "iteration, forward (backward moves the same); seconds are one forward of the block on the slowest rank";

}  // namespace

nlohmann::json janus_plan_json(const Config& cfg, const ClusterModel& cluster, const std::vector<JanusBlockPlan>& plan,
                               const std::string& source) {
  const Shape z = shape_of(cfg, cluster, plan);
  nlohmann::json j;
  j["predicted"] = true;
  j["model"] = "janus";
  j["note"] = kWhat;
  j["config"] = source;
  j["cluster"] = cluster.describe();
  j["nodes"] = z.n;
  j["workers_per_node"] = z.m;
  j["world"] = z.world;
  j["sequences_per_worker"] = z.b;
  j["seq_len"] = cfg.model.seq_len;
  j["top_k"] = cfg.moe.top_k;
  j["hidden"] = cfg.model.hidden;
  j["ffn_mult"] = cfg.model.ffn_mult;
  j["janus_threshold"] = cfg.strategy.option("janus.threshold").f;
  j["blocks"] = nlohmann::json::array();
  for (const auto& p : plan)
    j["blocks"].push_back({{"block", p.decision.block},
                           {"experts", p.decision.experts},
                           {"experts_per_worker", p.decision.experts_per_worker},
                           {"R", p.decision.R},
                           {"paradigm", p.decision.paradigm},
                           {"ec_bytes", p.expert_centric.machine.inter},
                           {"dc_bytes", p.data_centric.machine.inter},
                           {"ec_gib", p.expert_centric.machine.inter / kGiB},
                           {"dc_gib", p.data_centric.machine.inter / kGiB},
                           {"expert_centric", cost_json(p.expert_centric)},
                           {"data_centric", cost_json(p.data_centric)}});
  j["total"] = {{"ec_bytes", z.ec_total}, {"dc_bytes", z.dc_total}, {"ec_gib", z.ec_total / kGiB},
                {"dc_gib", z.dc_total / kGiB}};
  return j;
}

std::string janus_plan_text(const Config& cfg, const ClusterModel& cluster, const std::vector<JanusBlockPlan>& plan,
                            const std::string& source) {
  const Shape z = shape_of(cfg, cluster, plan);
  std::string out;
  appendf(out, "Janus plan for %s: %s\n", source.c_str(), kWhat);
  appendf(out, "cluster %s\n", cluster.describe().c_str());
  appendf(out, "n = %d machines x m = %d workers, B = %g sequences/worker, S = %d, k = %d, H = %d, ffn_mult = %d, "
              "janus_threshold = %g\n",
              z.n, z.m, z.b, cfg.model.seq_len, cfg.moe.top_k, cfg.model.hidden, cfg.model.ffn_mult,
              (double)cfg.strategy.option("janus.threshold").f);
  if (plan.empty()) {
    appendf(out, "no MoE blocks: nothing to plan\n");
    return out;
  }
  appendf(out, "%6s %8s %12s %9s %15s %14s %14s %12s %12s %12s\n", "block", "experts", "E per worker", "R", "paradigm",
              "E.C. GiB", "D.C. GiB", "E.C. comm ms", "D.C. comm ms", "expert ms");
  for (const auto& p : plan) {
    const JanusDecision& d = p.decision;
    const StrategyCost& chosen = p.chosen();
    appendf(out, "%6d %8d %12d %9.2f %15s %14.4f %14.4f %12.3f %12.3f %12.3f\n", d.block, d.experts,
                d.experts_per_worker, d.R, d.paradigm.c_str(), p.expert_centric.machine.inter / kGiB,
                p.data_centric.machine.inter / kGiB, p.expert_centric.comm_seconds * 1e3,
                p.data_centric.comm_seconds * 1e3, chosen.compute_seconds * 1e3);
  }
  appendf(out, "%6s %8s %12s %9s %15s %14.4f %14.4f\n", "total", "", "", "", "", z.ec_total / kGiB, z.dc_total / kGiB);
  appendf(out, "expert ms: the chosen paradigm's expert compute (predicted)\n");
  return out;
}

}  // namespace moebench
