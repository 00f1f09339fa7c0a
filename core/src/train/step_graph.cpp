#include "moebench/train/step_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "moebench/dist/topology.h"
#include "moebench/model/dense_costs.h"
#include "moebench/moe/block_graph.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/optim/adamw.h"
#include "moebench/strategies/janus.h"
#include "moebench/strategies/registry.h"

namespace moebench {
namespace {

GraphTask compute(const std::string& name, int layer, double flops) {
  GraphTask t;
  t.name = name;
  t.role = StreamRole::compute;
  t.category = TaskCategory::compute;
  t.layer = layer;
  t.cost.flops = flops;
  return t;
}

RoutingSpec routing_of(const Config& cfg) {
  RoutingSpec spec = parse_routing(cfg.moe.routing);
  if (spec.kind == RoutingSpec::Kind::learned) spec = parse_routing("uniform");
  return spec;
}

}  // namespace

std::string step_graph_routing(const Config& cfg) {
  return parse_routing(cfg.moe.routing).kind == RoutingSpec::Kind::learned
             ? "uniform (the config's router is learned: synthetic routing stands in for it)"
             : cfg.moe.routing;
}

StepRouting synthetic_step_routing(const Config& cfg, long step) {
  const int W = cfg.run.ranks, K = cfg.moe.top_k;
  const long N = (long)(cfg.train.batch_size / W) * cfg.model.seq_len;
  const RoutingSpec spec = routing_of(cfg);
  StepRouting out;
  std::vector<int> forced((size_t)N * K);
  for (size_t i = 0; i < cfg.moe.moe_layers.size(); ++i) {
    const int l = cfg.moe.moe_layers[i], E = cfg.moe.experts.at(i);
    std::vector<long>& rows = out.rows[l];
    rows.assign((size_t)W * E, 0);
    const long cap = cfg.moe.capacity_factor > 0 ? (long)std::ceil(cfg.moe.capacity_factor * N * K / E) : -1;
    for (int w = 0; w < W; ++w) {
      synthetic_expert_choice(forced.data(), spec, (int)N, K, E, cfg.run.seed, step, l, (long)w * N);
      long* mine = rows.data() + (size_t)w * E;
      for (int e : forced) ++mine[e];
      if (cap >= 0)
        for (int e = 0; e < E; ++e) mine[e] = std::min(mine[e], cap);
    }
  }
  return out;
}

TaskGraph build_step_graph(const Config& cfg, int rank) {
  return build_step_graph(cfg, rank, synthetic_step_routing(cfg, 1));
}

TaskGraph build_step_graph(const Config& cfg, int rank, const StepRouting& routing) {
  const int W = cfg.run.ranks;
  if (rank < 0 || rank >= W)
    throw std::invalid_argument("rank " + std::to_string(rank) + " is outside the " + std::to_string(W) +
                                " ranks of the config (run.ranks)");
  const int nodes = cfg.cluster.nodes;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : W / nodes;
  const Topology topo = Topology::virtual_blocks(nodes, per_node);
  if (cfg.parallel.tp > 1 || cfg.parallel.pp > 1 || cfg.parallel.microbatches > 1)
    throw std::invalid_argument("the step graph of a tensor- or pipeline-parallel layout (parallel.tp = " +
                                std::to_string(cfg.parallel.tp) + ", pp = " + std::to_string(cfg.parallel.pp) +
                                ", microbatches = " + std::to_string(cfg.parallel.microbatches) +
                                ") is not built yet: plan and the simulator cover data and expert parallelism only");
  // ppmoe's expert-parallel group is the (here single-rank) tensor-parallel group.
  const int ep = cfg.strategy.name == "ppmoe" ? 1 : cfg.parallel.ep > 0 ? cfg.parallel.ep : W;
  const int B = cfg.train.batch_size / W, T = cfg.model.seq_len, C = cfg.model.hidden, V = cfg.model.vocab_size;
  const int F = cfg.model.ffn_mult * C, K = cfg.moe.top_k;
  const long N = (long)B * T;
  const int group = rank / ep, ep_rank = rank % ep;
  const std::map<int, std::string> names = block_strategies(cfg, topo.nodes(), topo.devices_per_node());

  std::map<int, int> experts_of;  // MoE block -> experts
  for (size_t i = 0; i < cfg.moe.moe_layers.size(); ++i) experts_of[cfg.moe.moe_layers[i]] = cfg.moe.experts.at(i);

  // DP all-reduce of a gradient bucket: ring over all ranks (data parallel = world here).
  const bool dp_inter = topo.nodes() > 1;
  auto allreduce = [&](TaskGraph& g, const std::string& name, double floats, TaskId after, StreamRole role, int peers,
                       int right, int layer = -1) {
    GraphTask t;
    t.name = name;
    t.layer = layer;
    t.category = TaskCategory::comm;
    t.role = role;
    const uint64_t bytes = (uint64_t)(floats * sizeof(float));
    if (peers > 1) t.cost.bytes_to_peer.push_back({right, 2 * bytes * (uint64_t)(peers - 1) / (uint64_t)peers});
    t.cost.messages = 2 * (peers - 1);
    return g.add(std::move(t), {after});
  };
  const StreamRole dp_role = dp_inter ? StreamRole::comm_inter : StreamRole::comm_intra;
  const int dp_right = (rank + 1) % W;

  TaskGraph g;
  struct Moe {
    std::unique_ptr<MoeStrategy> strategy;
    std::unique_ptr<MoeHandle> handle;
    MoeContext ctx;
  };
  std::map<int, Moe> moe;
  double params_held = (double)V * C + (double)T * C + 2.0 * C + (cfg.model.tied_head ? 0.0 : (double)V * C);
  TaskId last = g.add(compute("embed.forward", -1, 0.0));
  for (int l = 0; l < cfg.model.layers; ++l) {
    last = g.add(compute("attn.forward", l, attn_forward_flops(N, C, T)), {last});
    params_held += 4.0 * C * C + 9.0 * C;
    auto it = experts_of.find(l);
    if (it == experts_of.end()) {
      last = g.add(compute("ffn.forward", l, ffn_forward_flops(N, C, F)), {last});
      params_held += 2.0 * C * F + F + C;
      continue;
    }
    const int E = it->second;
    Moe& m = moe[l];
    m.strategy = make_strategy(names.at(l), cfg.strategy);
    m.ctx.topology = &topo;
    m.ctx.layer = l;
    m.ctx.experts = E;
    m.ctx.C = C;
    m.ctx.F = F;
    m.ctx.ep_rank = ep_rank;
    m.ctx.ep_size = ep;
    for (int p = 0; p < ep; ++p) m.ctx.ep_world.push_back(group * ep + p);
    m.ctx.first_local = ep_rank * (E / ep);
    m.ctx.pcie_switch_pairs = cfg.cluster.pcie_switch_pairs;
    params_held += (double)E * C + (double)(E / ep) * (2.0 * C * F + F + C);
    // The EP group's rows, from the step's routing of every rank.
    const auto rows = routing.rows.find(l);
    if (rows == routing.rows.end() || rows->second.size() != (size_t)W * E)
      throw std::invalid_argument("the routing has no " + std::to_string(W) + " x " + std::to_string(E) +
                                  " counts for MoE block " + std::to_string(l));
    ExchangeCounts counts;
    counts.P = ep;
    counts.E = E;
    counts.rows.assign(rows->second.begin() + (size_t)group * ep * E, rows->second.begin() + (size_t)(group + 1) * ep * E);
    m.handle = m.strategy->layout(counts, m.ctx);
    last = add_block_pass(g, *m.strategy, *m.handle, MoePass::forward, m.ctx, {(int)N, C, E, K}, {last});
  }
  last = g.add(compute("head.forward", -1, head_forward_flops(N, C, V)), {last});
  // Backward, buckets as MoeGpt reports them: ln_f (+ untied head), each block, embeddings.
  std::vector<TaskId> reduces;
  last = g.add(compute("head.backward", -1, 2 * head_forward_flops(N, C, V)), {last});
  reduces.push_back(allreduce(g, "grad.allreduce", 2.0 * C + (cfg.model.tied_head ? 0.0 : (double)V * C), last,
                              dp_role, W, dp_right));
  for (int l = cfg.model.layers - 1; l >= 0; --l) {
    double bucket = 4.0 * C * C + 9.0 * C;
    auto it = moe.find(l);
    if (it == moe.end()) {
      last = g.add(compute("ffn.backward", l, 2 * ffn_forward_flops(N, C, F)), {last});
      bucket += 2.0 * C * F + F + C;
    } else {
      Moe& m = it->second;
      last = add_block_pass(g, *m.strategy, *m.handle, MoePass::backward, m.ctx, {(int)N, C, m.ctx.experts, K}, {last});
      bucket += (double)m.ctx.experts * C;
    }
    last = g.add(compute("attn.backward", l, 2 * attn_forward_flops(N, C, T)), {last});
    reduces.push_back(allreduce(g, "grad.allreduce", bucket, last, dp_role, W, dp_right, l));
  }
  last = g.add(compute("embed.backward", -1, 0.0), {last});
  reduces.push_back(allreduce(g, "grad.allreduce", (double)V * C + (double)T * C, last, dp_role, W, dp_right));
  const int replicas = W / ep;
  if (replicas > 1 && !moe.empty()) {  // experts summed over their replicas (ranks ep apart)
    double floats = 0;
    for (const auto& [l, m] : moe) floats += (double)(m.ctx.experts / ep) * (2.0 * C * F + F + C);
    std::set<int> edp_nodes;
    for (int r = 0; r < replicas; ++r) edp_nodes.insert(topo.node_of(r * ep + ep_rank));
    reduces.push_back(allreduce(g, "expert.allreduce", floats, last,
                                edp_nodes.size() > 1 ? StreamRole::comm_inter : StreamRole::comm_intra, replicas,
                                ((group + 1) % replicas) * ep + ep_rank));
  }
  g.add(compute("optimizer", -1, adamw_flops((size_t)params_held)), reduces);
  return g;
}

}  // namespace moebench
