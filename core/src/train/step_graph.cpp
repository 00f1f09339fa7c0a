#include "moebench/train/step_graph.h"
#include "moebench/storage/expert_state_tier.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "moebench/config/config_layout.h"
#include "moebench/dist/topology.h"
#include "moebench/model/dense_costs.h"
#include "moebench/model/param_count.h"
#include "moebench/model/pipeline_schedule.h"
#include "moebench/model/stage_graph.h"
#include "moebench/moe/block_graph.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/optim/adamw.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/monta.h"
#include "moebench/strategies/registry.h"

namespace moebench {
namespace {

GraphTask compute(const std::string& name, double flops) {
  GraphTask t;
  t.name = name;
  t.cost.flops = flops;
  return t;
}

RoutingSpec routing_of(const Config& cfg) {
  RoutingSpec spec = parse_routing(cfg.moe.routing);
  if (spec.kind == RoutingSpec::Kind::learned) spec = parse_routing("uniform");
  return spec;
}

// comm.inter when the members span nodes of the topology, else comm.intra.
StreamRole role_over(const Topology& topo, const std::vector<int>& members) {
  std::set<int> nodes;
  for (int r : members) nodes.insert(topo.node_of(r));
  return nodes.size() > 1 ? StreamRole::comm_inter : StreamRole::comm_intra;
}

// The rows of `step` that fall to micro-batch m of M (as even as whole rows allow).
long micro_share(long rows, int m, int M) { return rows * (m + 1) / M - rows * m / M; }

}  // namespace

std::string step_graph_routing(const Config& cfg) {
  return parse_routing(cfg.moe.routing).kind == RoutingSpec::Kind::learned
             ? "uniform (the config's router is learned: synthetic routing stands in for it)"
             : cfg.moe.routing;
}

StepRouting synthetic_step_routing(const Config& cfg, long step) {
  const int W = cfg.run.ranks, K = cfg.moe.top_k;
  const ParallelLayout shape = layout_of(cfg);
  // Tokens belong to data-parallel ranks: the TP ranks (and stages) of one DP rank route the same.
  const long N = (long)(cfg.train.batch_size / shape.dp()) * cfg.model.seq_len;
  const RoutingSpec spec = routing_of(cfg);
  StepRouting out;
  std::vector<int> forced((size_t)N * K);
  for (size_t i = 0; i < cfg.moe.moe_layers.size(); ++i) {
    const int l = cfg.moe.moe_layers[i], E = cfg.moe.experts.at(i);
    std::vector<long>& rows = out.rows[l];
    rows.assign((size_t)W * E, 0);
    const long cap = cfg.moe.capacity_factor > 0 ? (long)std::ceil(cfg.moe.capacity_factor * N * K / E) : -1;
    std::vector<long> mine((size_t)E);
    for (int d = 0; d < shape.dp(); ++d) {
      synthetic_expert_choice(forced.data(), spec, (int)N, K, E, cfg.run.seed, step, l, (long)d * N);
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
  const int W = cfg.run.ranks;
  if (rank < 0 || rank >= W)
    throw std::invalid_argument("rank " + std::to_string(rank) + " is outside the " + std::to_string(W) +
                                " ranks of the config (run.ranks)");
  const int nodes = cfg.cluster.nodes;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : W / nodes;
  const Topology topo = Topology::virtual_blocks(nodes, per_node);
  const ClusterModel cluster = cluster_model(cfg);  // what cost-model choices (monta "auto") assume
  const ParallelLayout layout = layout_of(cfg);
  const RankCoords at = layout.coords(rank);
  const int M = std::max(1, cfg.parallel.microbatches);
  const BlockRange blocks = layout.stage_blocks(at.pp);
  const int first_block = blocks.first, end_block = blocks.end;
  const bool first_stage = at.pp == 0, last_stage = at.pp == layout.pp() - 1;

  const int B = cfg.train.batch_size / (layout.dp() * M), T = cfg.model.seq_len, C = cfg.model.hidden;
  const int F = cfg.model.ffn_mult * C, K = cfg.moe.top_k;
  const long N = (long)B * T;  // tokens of one micro-batch on this rank
  const double act_bytes = (double)N * C * sizeof(float);
  const double tp = layout.tp();

  // Groups as world ranks; experts over ep_group, summed over their replicas.
  const std::vector<int> tp_group = layout.tp_group(rank), dp_group = layout.dp_group(rank),
                         pp_group = layout.pp_group(rank), ep_group = layout.ep_group(rank),
                         replicas = layout.replica_group(rank);
  const int ep = layout.ep(), ep_rank = at.ep;
  const int slice = !layout.experts_in_tp() && cfg.moe.expert_tp ? layout.tp() : 1;
  const StreamRole dp_role = role_over(topo, dp_group);
  const std::map<int, std::string> names = block_strategies(cfg, topo.nodes(), topo.devices_per_node());
  std::map<int, int> experts_of;  // MoE block -> experts
  for (size_t i = 0; i < cfg.moe.moe_layers.size(); ++i) experts_of[cfg.moe.moe_layers[i]] = cfg.moe.experts.at(i);

  TaskGraph g;
  // The rank's chain (compute, blocking receives and collectives): `last`.
  TaskId last;
  auto main_task = [&](GraphTask t) { return last = g.add(std::move(t), {last}); };
  // Pipeline point to point: activations to the next stage, gradients to the previous; named
  // by the receiving stage's first block and the micro-batch. The receive blocks the main thread;
  // sends are non-blocking (isend), one FIFO per direction so they never wait behind each other.
  // Under TP each rank sends its 1/t slice and the receivers all-gather them (PipelineStep).
  auto pp_recv = [&](const char* name, int boundary, int micro) {
    GraphTask t;
    t.name = name;
    t.layer = boundary;
    t.chunk = micro;
    t.category = TaskCategory::comm;
    t.role = StreamRole::host;
    main_task(std::move(t));
    if (layout.tp() == 1) return;
    GraphTask a = ring_allreduce_task("pp.allgather", boundary, 0, tp_group, at.tp, StreamRole::host, micro);
    a.cost.bytes_to_peer = {{tp_group[(size_t)(at.tp + 1) % layout.tp()], (uint64_t)(act_bytes * (tp - 1) / tp)}};
    a.cost.messages = layout.tp() - 1;  // a ring all-gather: t - 1 slices forwarded
    main_task(std::move(a));
  };
  auto pp_send = [&](const char* name, int boundary, int micro, int to, StreamRole role) {
    GraphTask t;
    t.name = name;
    t.layer = boundary;
    t.chunk = micro;
    t.category = TaskCategory::comm;
    t.role = role;
    t.peer = to;
    t.cost.bytes_to_peer.push_back({to, (uint64_t)(act_bytes / tp)});
    g.add(std::move(t), {last});
  };
  const int next_stage = last_stage ? -1 : layout.world_rank(at.pp + 1, at.dp, at.tp);
  const int prev_stage = first_stage ? -1 : layout.world_rank(at.pp - 1, at.dp, at.tp);
  const StreamRole to_next = last_stage ? StreamRole::comm_intra : role_over(topo, {rank, next_stage});
  const StreamRole to_prev = to_next == StreamRole::comm_intra ? StreamRole::comm_inter : StreamRole::comm_intra;

  // Parameters this rank holds (AdamW's flops) and its gradient buckets, as MoeGpt registers them.
  const TpShard tp_shard{at.tp, layout.tp(), cfg.parallel.vocab_parallel};
  // MoESys §IV-C: embed.wte's columns over the DP group (model/embedding_partition.h).
  const EmbedShard embed = cfg.model.embedding_partition ? EmbedShard{at.dp, layout.dp()} : EmbedShard{};
  const bool embed_split = embed.size > 1;
  const PipeStage pipe{at.pp, layout.pp(), first_block, end_block};
  const ParamPieces pieces = param_pieces(cfg.model, tp_shard, slice > 1, embed);
  const double params_held = rank_param_counts(cfg.model, cfg.moe, ExpertShard{ep_rank, ep}, tp_shard, pipe, embed).total();
  const double wte = pieces.wte, head = pieces.head, wpe = pieces.wpe, expert_params = pieces.expert;
  StageShape shape;
  shape.model = cfg.model;
  shape.experts = experts_of;
  shape.tp = tp_shard;
  shape.pipe = pipe;
  shape.embed = embed;
  shape.B = B;
  shape.T = T;
  shape.tp_world = tp_group;
  shape.dp_world = dp_group;

  struct Moe {
    std::vector<std::unique_ptr<MoeStrategy>> strategies;  // one per micro-batch (activation set)
    std::vector<std::unique_ptr<MoeHandle>> handles;
    MoeContext ctx;
  };
  std::map<int, Moe> moe;
  for (int l = first_block; l < end_block; ++l) {
    auto it = experts_of.find(l);
    if (it == experts_of.end()) continue;
    const int E = it->second;
    Moe& m = moe[l];
    m.ctx.topology = &topo;
    m.ctx.cluster = &cluster;
    m.ctx.layer = l;
    m.ctx.experts = E;
    m.ctx.C = C;
    m.ctx.F = F / slice;
    m.ctx.ep_rank = ep_rank;
    m.ctx.ep_size = ep;
    m.ctx.ep_world = ep_group;
    m.ctx.stats_rank = at.dp;
    m.ctx.stats_size = layout.dp();
    m.ctx.stats_world = dp_group;
    m.ctx.first_local = ep_rank * (E / ep);
    m.ctx.tp_rank = at.tp;
    m.ctx.tp_size = layout.tp();
    m.ctx.tp_world = tp_group;
    m.ctx.experts_sliced = slice > 1;
    const auto rows = routing.rows.find(l);
    if (rows == routing.rows.end() || rows->second.size() != (size_t)W * E)
      throw std::invalid_argument("the routing has no " + std::to_string(W) + " x " + std::to_string(E) +
                                  " counts for MoE block " + std::to_string(l));
    for (int mb = 0; mb < M; ++mb) {
      ExchangeCounts counts;
      counts.P = ep;
      counts.E = E;
      for (int member : ep_group)
        for (int e = 0; e < E; ++e) counts.rows.push_back(micro_share(rows->second[(size_t)member * E + e], mb, M));
      m.strategies.push_back(make_strategy(names.at(l), cfg.strategy));
      m.handles.push_back(m.strategies.back()->layout(counts, m.ctx));
    }
  }
  std::map<int, const MoeStrategy*> block_strategy;
  for (const auto& [l, m] : moe) block_strategy[l] = m.strategies.front().get();
  check_comm_priority(block_strategy);

  // storage.dense = "zero3" (storage/dense_shards.h): a ring collective of P shards of
  // s = ceil(n / P) floats, (P-1) s floats to the next rank in P-1 messages; this rank's shard.
  const bool zero3 = cfg.storage.dense == "zero3";
  auto shard_of = [&](double floats) { return std::ceil(floats / layout.dp()); };
  auto owned_of = [&](double floats) {
    const double s = shard_of(floats);
    return std::min(floats, (at.dp + 1) * s) - std::min(floats, at.dp * s);
  };
  auto ring_shards = [&](const char* name, int layer, double floats, StreamRole role) {
    GraphTask t = ring_allreduce_task(name, layer, 0, dp_group, at.dp, role);
    if (layout.dp() > 1)
      t.cost.bytes_to_peer = {{dp_group[(size_t)(at.dp + 1) % layout.dp()],
                               (uint64_t)(layout.dp() - 1) * (uint64_t)shard_of(floats) * sizeof(float)}};
    t.cost.messages = layout.dp() - 1;
    return t;
  };
  // The floats of a dense part (model/stage_graph.h's parts, MoeGpt's gradient buckets).
  const int L = cfg.model.layers;
  auto part_floats = [&](int part) {
    if (part == kEmbeddingsPart) return (embed_split ? 0.0 : wte) + wpe;  // a partitioned table is not all-reduced
    if (part == L) return 2.0 * C + (cfg.model.tied_head ? 0.0 : head);
    if (part == L + 1) return head;  // the last stage's copy of the tied embedding
    auto it = moe.find(part);
    return pieces.attention + (it == moe.end() ? pieces.ffn : (double)it->second.ctx.experts * C);
  };
  double dense_floats = 0, dense_owned = 0;  // zero3: the optimizer updates this rank's shards only
  std::vector<TaskId> reduces;
  // zero3, forward of the first micro-batch: each dense part's all-gather (a steady-state step;
  // a run's first step gathers nothing, every rank starting from the same init). Prefetch
  // (Algorithm 1): the embeddings' gather on the main thread, then part i+1's on the DP comm
  // role once part i's has been waited for, part i's compute waiting for its own; on demand:
  // each on the main thread before its part. The part floats are the gradient buckets'.
  std::map<int, TaskId> gathers;  // part -> its prefetch task
  int micro = 0;                  // the micro-batch being added
  struct Costs : StageBinding {
    std::function<TaskId(TaskGraph&, int, MoePass, TaskId)> moe;
    std::function<TaskId(TaskGraph&, int, TaskId)> use;
    std::function<void(TaskGraph&, int, TaskId)> ready;
    std::function<void()> action(StageOp, int) override { return {}; }
    TaskId moe_pass(TaskGraph& g, int block, MoePass pass, TaskId after) override { return moe(g, block, pass, after); }
    TaskId use_part(TaskGraph& g, int part, TaskId after) override { return use(g, part, after); }
    void grad_ready(TaskGraph& g, int part, TaskId after) override { ready(g, part, after); }
  } costs;
  costs.moe = [&](TaskGraph& g, int l, MoePass pass, TaskId after) {
    Moe& m = moe.at(l);
    return add_block_pass(g, *m.strategies[(size_t)micro], *m.handles[(size_t)micro], pass, m.ctx,
                          {(int)N, C, m.ctx.experts, K}, {after});
  };
  costs.use = [&](TaskGraph& g, int part, TaskId after) {
    if (!zero3 || micro != 0) return after;
    const int layer = part >= 0 && part < L ? part : -1;
    if (!cfg.storage.dense_prefetch || part < 0) {
      after = g.add(ring_shards("dense.allgather", layer, part_floats(part), StreamRole::host), {after});
    } else {
      GraphTask join;  // the wait: the part's compute after its gather (a join, no span)
      join.role = StreamRole::host;
      join.category = TaskCategory::comm;
      after = g.add(std::move(join), {after, gathers.at(part)});
    }
    const int next = part + 1;
    if (cfg.storage.dense_prefetch && next <= L)
      gathers[next] = g.add(ring_shards("dense.allgather", next < L ? next : -1, part_floats(next), dp_role), {after});
    return after;
  };
  costs.ready = [&](TaskGraph& g, int part, TaskId after) {
    const double floats = part_floats(part);
    const int layer = part >= 0 && part < L ? part : -1;
    if (!zero3) return reduces.push_back(g.add(ring_allreduce_task("grad.allreduce", layer, floats, dp_group, at.dp, dp_role), {after}));
    reduces.push_back(g.add(ring_shards("grad.reduce_scatter", layer, floats, dp_role), {after}));
    dense_floats += floats;
    dense_owned += owned_of(floats);
  };
  for (const PipeOp& op : pipeline_ops(parse_pipe_schedule(cfg.parallel.schedule), layout.pp(), at.pp, M)) {
    micro = op.micro;
    const int chunk = M > 1 ? op.micro : -1;
    if (op.kind == PipeOp::Kind::forward) {
      // Before any gate: what the blocks' strategies start for this forward (Janus prefetch).
      for (auto& [l, m] : moe)
        m.strategies[(size_t)micro]->build_iteration_start(g, *m.handles[(size_t)micro], {last}, m.ctx);
      if (!first_stage) pp_recv("pp.forward", first_block, micro);
      last = add_stage_forward(g, shape, costs, last, chunk);
      if (!last_stage) pp_send("pp.forward", end_block, micro, next_stage, to_next);
      continue;
    }
    if (!last_stage) pp_recv("pp.backward", end_block, micro);
    last = add_stage_backward(g, shape, costs, last, chunk, micro == M - 1);
    if (!first_stage) pp_send("pp.backward", first_block, micro, prev_stage, to_prev);
  }
  // Once per step, on the main thread once every bucket is reduced (Distributed::
  // finish_gradients): the routers' partial gradients over TP (ppmoe, sliced experts) and the
  // tied embedding's gradient between the first and the last stage.
  auto after_buckets = [&](GraphTask t) {
    std::vector<TaskId> deps = reduces;
    deps.push_back(last);
    last = g.add(std::move(t), deps);
    reduces.push_back(last);
  };
  double partial_floats = 0;  // MoeGpt::tp_partial_ranges: partial routers, sliced experts' b2
  for (const auto& [l, m] : moe) {
    const MoeStrategy& s = *m.strategies.front();
    if (s.partial_outputs() || (m.ctx.experts_sliced && !s.sums_slices(m.ctx))) partial_floats += (double)m.ctx.experts * C;
    if (m.ctx.experts_sliced) partial_floats += (double)(m.ctx.experts / ep) * C;
  }
  if (layout.tp() > 1 && partial_floats > 0)
    after_buckets(ring_allreduce_task("tp.partial_allreduce", -1, partial_floats, tp_group, at.tp, StreamRole::host));
  if (layout.pp() > 1 && cfg.model.tied_head && (first_stage || last_stage)) {
    GraphTask t;
    t.name = "pp.tied_grad";
    t.category = TaskCategory::comm;
    t.role = StreamRole::host;
    t.peer = layout.world_rank(first_stage ? layout.pp() - 1 : 0, at.dp, at.tp);
    t.cost.bytes_to_peer.push_back({t.peer, (uint64_t)(head * sizeof(float))});
    after_buckets(std::move(t));
  }
  if (replicas.size() > 1) {  // experts summed over their replicas, block by block (layer = the block)
    for (const auto& [l, m] : moe)
      after_buckets(ring_allreduce_task("expert.allreduce", l, (double)(m.ctx.experts / ep) * expert_params, replicas, at.replica,
                                   StreamRole::host));
  }
  // Then the main thread's small all-reduces (Distributed::clip_gradients, the loss means):
  // the gradient norm's sums over TP (2 doubles), EP (1) and PP (1), the loss parts over PP (2)
  // and the loss over DP (1).
  auto host_allreduce = [&](const char* name, int doubles, const std::vector<int>& group, int me) {
    if (group.size() > 1) after_buckets(ring_allreduce_task(name, -1, 2.0 * doubles, group, me, StreamRole::host));
  };
  host_allreduce("grad.norm.tp", 2, tp_group, at.tp);
  host_allreduce("grad.norm.ep", 1, ep_group, ep_rank);
  if (embed_split || zero3) host_allreduce("grad.norm.dp", 1, dp_group, at.dp);
  host_allreduce("grad.norm.pp", 1, pp_group, at.pp);
  host_allreduce("loss.pp", 2, pp_group, at.pp);
  host_allreduce("loss.dp", 1, dp_group, at.dp);
  // storage.sparse = "ssd" (storage/expert_state_tier.h): AdamW keeps the dense moments and the
  // experts are updated through their records after it, the tier's own schedule in a typical
  // later step: the host cache full (no free slot) of the records updated last, which go first.
  std::vector<SparseUpdateRecord> records;
  if (cfg.storage.sparse == "ssd")
    for (const auto& [l, m] : moe)
      for (int e = 0; e < m.ctx.experts / ep; ++e) records.push_back({l, ep_rank * (m.ctx.experts / ep) + e});
  const double tier_floats = (double)records.size() * expert_params;
  const TaskId optimizer =
      g.add(compute("optimizer", adamw_flops((size_t)(params_held - dense_floats + dense_owned - tier_floats))),
            reduces);
  if (!records.empty()) {
    const int64_t record = expert_state_record_bytes(cfg.model);
    const int64_t fit = cfg.storage.host_cache_bytes > 0 ? cfg.storage.host_cache_bytes / record : (int64_t)records.size();
    const int cached = (int)std::min<int64_t>(fit, (int64_t)records.size());
    // The cached records first (those updated last in the step before: the last ones of the order).
    std::rotate(records.begin(), records.end() - cached, records.end());
    add_sparse_update_tasks(g, {optimizer}, records, cached, 0, cfg.storage.sparse_prefetch, (uint64_t)record,
                            adamw_flops((size_t)expert_params));
  }
  return g;
}

}  // namespace moebench
