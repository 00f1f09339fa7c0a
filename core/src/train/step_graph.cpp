#include "moebench/train/step_graph.h"

#include <algorithm>
#include <cmath>

#include "moebench/config/config_layout.h"
#include "moebench/dist/task_assignment.h"
#include "moebench/dist/topology.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/moe/topo_gate.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/fastermoe_gate.h"

namespace moebench {
namespace {

RoutingSpec routing_of(const Config& cfg) {
  RoutingSpec spec = cfg.moe.routing;
  if (spec.kind == RoutingSpec::Kind::learned) spec.kind = RoutingSpec::Kind::uniform;
  return spec;
}

}  // namespace

std::string step_graph_routing(const Config& cfg) {
  return cfg.moe.routing.kind == RoutingSpec::Kind::learned
             ? "uniform (the config's router is learned: synthetic routing stands in for it)"
             : routing_text(cfg.moe.routing);
}

StepRouting synthetic_step_routing(const Config& cfg, long step) {
  const int W = cfg.run.ranks, K = cfg.moe.top_k;
  const ParallelLayout shape = layout_of(cfg);
  // Tokens belong to data-parallel ranks: the TP ranks (and stages) of one DP rank route the same.
  // A rank's tokens: its sequences of the step (its tasks' rows with [data] tasks).
  const int M = std::max(1, cfg.parallel.microbatches);
  const std::vector<int> micro = micro_batch_rows(cfg.data.tasks, cfg.data.rank_tasks, cfg.train.batch_size,
                                                  shape.dp(), M);
  const RoutingSpec spec = routing_of(cfg);
  // FasterMoE's topology-aware gate rewrites the choice as the runtime's router would (when the
  // config's strategy is the gated one; a chooser's gated members route ungated here).
  std::vector<TopoGate> gates;  // per DP rank
  if (topo_gated(cfg, cfg.strategy.name)) {
    const ClusterModel cluster = cluster_model(cfg);
    for (int d = 0; d < shape.dp(); ++d) {
      const int world = shape.world_rank(0, d, 0);
      for (const std::vector<int>& group : shape.ep_groups()) {
        const auto at = std::find(group.begin(), group.end(), world);
        if (at != group.end()) gates.push_back(make_topo_gate(cluster, group, (int)(at - group.begin())));
      }
    }
  }
  StepRouting out;
  std::vector<int> forced;
  for (size_t i = 0; i < cfg.moe.moe_layers.size(); ++i) {
    const int l = cfg.moe.moe_layers[i], E = cfg.moe.experts.at(i);
    std::vector<long>& rows = out.rows[l];
    rows.assign((size_t)W * E, 0);
    std::vector<long> mine((size_t)E);
    long first = 0;  // the rank's first token in the step's global order
    for (int d = 0; d < shape.dp(); ++d) {
      const long N = (long)micro[(size_t)d] * M * cfg.model.seq_len;
      const long cap = cfg.moe.capacity_factor > 0 ? (long)std::ceil(cfg.moe.capacity_factor * N * K / E) : -1;
      forced.resize((size_t)N * K);
      synthetic_expert_choice(forced.data(), spec, (int)N, K, E, cfg.run.seed, step, l, first);
      if (!gates.empty() && !gates[(size_t)d].single_node()) {
        const uint64_t key = cfg.run.seed ^ ((uint64_t)step * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)l << 32);
        apply_topo_gate_to_choice(forced, (int)N, K, E, gates[(size_t)d], key, first);
      }
      first += N;
      std::fill(mine.begin(), mine.end(), 0);
      for (int e : forced) ++mine[(size_t)e];
      if (cap >= 0)
        for (long& c : mine) c = std::min(c, cap);
      for (int s = 0; s < shape.pp(); ++s)
        for (int t = 0; t < shape.tp(); ++t)
          std::copy(mine.begin(), mine.end(), rows.begin() + (size_t)shape.world_rank(s, d, t) * E);
    }
  }
  return out;
}

TaskGraph build_step_graph(const Config& cfg, int rank) {
  return build_step_graph(cfg, rank, synthetic_step_routing(cfg, 1));
}

TaskGraph build_step_graph(const Config& cfg, int rank, const StepRouting& routing) {
  const int nodes = cfg.cluster.nodes;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : cfg.run.ranks / nodes;
  TaskGraph g;
  add_training_step(g, cfg, rank, Topology::virtual_blocks(nodes, per_node), nullptr, &routing);
  return g;
}

}  // namespace moebench
