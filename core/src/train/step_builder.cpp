#include "moebench/train/step_builder.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "moebench/config/config_layout.h"
#include "moebench/dist/task_assignment.h"
#include "moebench/model/param_count.h"
#include "moebench/model/pipeline_schedule.h"
#include "moebench/model/stage_graph.h"
#include "moebench/moe/block_graph.h"
#include "moebench/optim/adamw.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/storage/expert_state_tier.h"
#include "moebench/strategies/monta.h"
#include "moebench/strategies/registry.h"

namespace moebench {
namespace {

// comm.inter when the members span nodes of the topology, else comm.intra.
StreamRole role_over(const Topology& topo, const std::vector<int>& members) {
  std::set<int> nodes;
  for (int r : members) nodes.insert(topo.node_of(r));
  return nodes.size() > 1 ? StreamRole::comm_inter : StreamRole::comm_intra;
}

// The rows of `step` that fall to micro-batch m of M (as even as whole rows allow).
long micro_share(long rows, int m, int M) { return rows * (m + 1) / M - rows * m / M; }

GraphTask compute(const std::string& name, double flops) {
  GraphTask t;
  t.name = name;
  t.cost.flops = flops;
  return t;
}

GraphTask join_task() {  // waits for its dependencies; no work, no span
  GraphTask t;
  t.role = StreamRole::host;
  t.category = TaskCategory::comm;
  return t;
}

enum class Mode { train, evaluate };

TaskId add_step(TaskGraph& g, const Config& cfg, int rank, const Topology& topo, StepActions* actions,
                const StepRouting* routing, Mode mode) {
  const int W = cfg.run.ranks;
  if (rank < 0 || rank >= W)
    throw std::invalid_argument("rank " + std::to_string(rank) + " is outside the " + std::to_string(W) +
                                " ranks of the config (run.ranks)");
  const ClusterModel cluster = cluster_model(cfg);  // what cost-model choices (monta "auto") assume
  const ParallelLayout layout = layout_of(cfg);
  const RankCoords at = layout.coords(rank);
  const int M = std::max(1, cfg.parallel.microbatches);
  const BlockRange blocks = layout.stage_blocks(at.pp);
  const int first_block = blocks.first, end_block = blocks.end;
  const bool first_stage = at.pp == 0, last_stage = at.pp == layout.pp() - 1;
  const PipeSchedule schedule = cfg.parallel.schedule;

  // A rank's sequences per micro-batch: its tasks' rows with [data] tasks (MoESys §IV-A).
  const int B = micro_batch_rows(cfg.data.tasks, cfg.data.rank_tasks, cfg.train.batch_size, layout.dp(), M)[(size_t)at.dp];
  const int T = cfg.model.seq_len, C = cfg.model.hidden;
  const int F = cfg.model.ffn_mult * C, K = cfg.moe.top_k;
  const long N = (long)B * T;  // tokens of one micro-batch on this rank
  // Bytes per element in the transfers' costs: what the runtime's fp32 arrays move when the graph
  // is executed, the cluster's workload's precision when it is only predicted.
  const int wire = actions ? (int)sizeof(float) : cluster.wire_element_bytes();
  const double act_bytes = (double)N * C * wire;
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
  shape.wire_element_bytes = wire;

  // The stage's MoE blocks: their contexts and, without actions, one strategy and handle per
  // micro-batch from the routing's counts.
  struct Moe {
    std::vector<std::unique_ptr<MoeStrategy>> strategies;
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
    m.ctx.wire_element_bytes = wire;
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
    m.strategies.push_back(make_strategy(names.at(l), cfg.strategy));
    if (actions) continue;
    const auto rows = routing ? routing->rows.find(l) : std::map<int, std::vector<long>>::const_iterator{};
    if (!routing || rows == routing->rows.end() || rows->second.size() != (size_t)W * E)
      throw std::invalid_argument("the routing has no " + std::to_string(W) + " x " + std::to_string(E) +
                                  " counts for MoE block " + std::to_string(l));
    for (int mb = 0; mb < M; ++mb) {
      ExchangeCounts counts;
      counts.P = ep;
      counts.E = E;
      for (int member : ep_group)
        for (int e = 0; e < E; ++e) counts.rows.push_back(micro_share(rows->second[(size_t)member * E + e], mb, M));
      if (mb > 0) m.strategies.push_back(make_strategy(names.at(l), cfg.strategy));
      m.handles.push_back(m.strategies.back()->layout(counts, m.ctx));
    }
  }
  if (!actions) {
    std::map<int, const MoeStrategy*> block_strategy;
    for (const auto& [l, m] : moe) block_strategy[l] = m.strategies.front().get();
    check_comm_priority(block_strategy);
  }

  // storage.dense = "zero3" (storage/dense_shards.h): a ring collective of P shards of
  // s = ceil(n / P) floats, (P-1) s floats to the next rank in P-1 messages; this rank's shard.
  const bool zero3 = cfg.storage.dense == DenseStorage::zero3;
  auto shard_of = [&](double floats) { return std::ceil(floats / layout.dp()); };
  auto owned_of = [&](double floats) {
    const double s = shard_of(floats);
    return std::min(floats, (at.dp + 1) * s) - std::min(floats, at.dp * s);
  };
  auto ring_shards = [&](const char* name, int layer, double floats, StreamRole role) {
    GraphTask t = ring_allreduce_task(name, layer, 0, wire, dp_group, at.dp, role);
    if (layout.dp() > 1)
      t.cost.bytes_to_peer = {{dp_group[(size_t)(at.dp + 1) % layout.dp()],
                               (uint64_t)(layout.dp() - 1) * (uint64_t)shard_of(floats) * (uint64_t)wire}};
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
    if (it == moe.end()) return pieces.attention + pieces.ffn;
    // the router, and with storage.zero3_experts the block's experts (ep = 1: all of them)
    const double experts = zero3 && cfg.storage.zero3_experts ? (double)it->second.ctx.experts * expert_params : 0.0;
    return pieces.attention + (double)it->second.ctx.experts * C + experts;
  };
  double dense_floats = 0, dense_owned = 0;  // zero3: the optimizer updates this rank's shards only
  if (zero3)  // one stage: the embeddings, the blocks, ln_f + head
    for (int part = kEmbeddingsPart; part <= L; ++part) {
      dense_floats += part_floats(part);
      dense_owned += owned_of(part_floats(part));
    }

  std::vector<TaskId> reduces;  // the buckets' reductions: the tail waits for them
  const int from = (int)g.size();
  // Without actions, what MoeGpt and its hooks add: the MoE passes from their handles, ZeRO-3's
  // gathers in the first micro-batch's forward (a steady-state step; a run's first step gathers
  // nothing, every rank starting from the same init; prefetch, Algorithm 1: the embeddings'
  // gather in the chain, then part i+1's on the DP comm role once part i's has been waited for;
  // on demand: each in the chain before its part) and the buckets' reductions.
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
      after = g.add(join_task(), {after, gathers.at(part)});  // the part's compute after its gather
    }
    const int next = part + 1;
    if (cfg.storage.dense_prefetch && next <= L)
      gathers[next] = g.add(ring_shards("dense.allgather", next < L ? next : -1, part_floats(next), dp_role), {after});
    return after;
  };
  costs.ready = [&](TaskGraph& g, int part, TaskId after) {
    const double floats = part_floats(part);
    const int layer = part >= 0 && part < L ? part : -1;
    if (!zero3) return (void)g.add(ring_allreduce_task("grad.allreduce", layer, floats, wire, dp_group, at.dp, dp_role), {after});
    g.add(ring_shards("grad.reduce_scatter", layer, floats, dp_role), {after});
  };

  // The rank's chain (compute, blocking receives and collectives): `last`.
  TaskId last;
  auto add = [&](GraphTask t, StepOp op, int layer, const std::vector<TaskId>& deps) {
    if (actions) t.action = actions->action(op, micro, layer);
    return g.add(std::move(t), deps);
  };
  // Pipeline point to point: activations to the next stage, gradients to the previous; named
  // by the receiving stage's first block and the micro-batch. The receive blocks the chain; the
  // sends run beside it, one comm role per direction so they never wait behind each other. Under
  // TP each rank sends its 1/t slice and the receivers all-gather them (Megatron's scatter/gather,
  // Narayanan et al. 2021 §4.1).
  auto pp_task = [&](bool fwd, int boundary, int chunk, StreamRole role) {
    GraphTask t;
    t.name = fwd ? "pp.forward" : "pp.backward";
    t.layer = boundary;
    t.chunk = chunk;
    t.category = TaskCategory::comm;
    t.role = role;
    return t;
  };
  auto pp_recv = [&](bool fwd, int boundary, int chunk) {
    last = add(pp_task(fwd, boundary, chunk, StreamRole::host), fwd ? StepOp::recv_forward : StepOp::recv_backward, -1,
               {last});
    if (layout.tp() == 1) return;
    GraphTask a = ring_allreduce_task("pp.allgather", boundary, 0, wire, tp_group, at.tp, StreamRole::host, chunk);
    a.cost.bytes_to_peer = {{tp_group[(size_t)(at.tp + 1) % layout.tp()], (uint64_t)(act_bytes * (tp - 1) / tp)}};
    a.cost.messages = layout.tp() - 1;  // a ring all-gather: t - 1 slices forwarded
    last = add(std::move(a), fwd ? StepOp::gather_forward : StepOp::gather_backward, -1, {last});
  };
  const int next_stage = last_stage ? -1 : layout.world_rank(at.pp + 1, at.dp, at.tp);
  const int prev_stage = first_stage ? -1 : layout.world_rank(at.pp - 1, at.dp, at.tp);
  const StreamRole to_next = last_stage ? StreamRole::comm_intra : role_over(topo, {rank, next_stage});
  const StreamRole to_prev = to_next == StreamRole::comm_intra ? StreamRole::comm_inter : StreamRole::comm_intra;
  auto pp_send = [&](bool fwd, int boundary, int chunk) {
    GraphTask t = pp_task(fwd, boundary, chunk, fwd ? to_next : to_prev);
    t.peer = fwd ? next_stage : prev_stage;
    t.cost.bytes_to_peer.push_back({t.peer, (uint64_t)(act_bytes / tp)});
    return add(std::move(t), fwd ? StepOp::send_forward : StepOp::send_backward, -1, {last});
  };
  // A pass that reuses an activation set starts once the set's previous send has left.
  const int slots = mode == Mode::evaluate ? 1 : pipeline_slots(schedule, layout.pp(), at.pp, M);
  std::vector<TaskId> sent_forward((size_t)slots), sent_backward((size_t)slots);
  auto start_after = [&](TaskId sent) { return sent.valid() ? g.add(join_task(), {last, sent}) : last; };
  std::vector<PipeOp> ops;
  if (mode == Mode::train) ops = pipeline_ops(schedule, layout.pp(), at.pp, M);
  else
    for (int m = 0; m < M; ++m) ops.push_back({PipeOp::Kind::forward, m});
  for (const PipeOp& op : ops) {
    micro = op.micro;
    const int chunk = M > 1 ? op.micro : -1;
    const size_t slot = (size_t)(micro % slots);
    if (op.kind == PipeOp::Kind::forward) {
      // before any gate: what the blocks' strategies start for this forward (Janus prefetch)
      if (actions) actions->iteration_start(g, micro, last);
      else
        for (auto& [l, m] : moe) m.strategies[(size_t)micro]->build_iteration_start(g, {last}, false, m.ctx);
      if (!first_stage) pp_recv(true, first_block, chunk);
      const TaskId start = start_after(sent_forward[slot]);
      last = actions ? actions->forward(g, micro, start) : add_stage_forward(g, shape, costs, start, chunk);
      if (!last_stage) sent_forward[slot] = pp_send(true, end_block, chunk);
      continue;
    }
    if (!last_stage) pp_recv(false, end_block, chunk);
    const TaskId start = start_after(sent_backward[slot]);
    last = actions ? actions->backward(g, micro, start, micro == M - 1)
                   : add_stage_backward(g, shape, costs, start, chunk, micro == M - 1);
    if (!first_stage) sent_backward[slot] = pp_send(false, first_block, chunk);
  }
  micro = -1;
  if (mode == Mode::evaluate) return last;
  // The buckets' reductions (comm tasks added by the passes beside the chain): the tail waits for them.
  for (int i = from; i < (int)g.size(); ++i) {
    const std::string& name = g.task(i).name;
    if (name == "grad.allreduce" || name == "grad.reduce_scatter") reduces.push_back(g.id(i));
  }
  // Once per step, once every bucket is reduced: each task after the one before it.
  auto tail = [&](GraphTask t, StepOp op, int layer = -1) {
    std::vector<TaskId> deps = reduces;
    deps.push_back(last);
    last = add(std::move(t), op, layer, deps);
  };
  double partial_floats = 0;  // MoeGpt::tp_partial_ranges: partial routers, sliced experts' b2
  for (const auto& [l, m] : moe) {
    const MoeStrategy& s = *m.strategies.front();
    if (s.partial_outputs() || (m.ctx.experts_sliced && !s.sums_slices(m.ctx))) partial_floats += (double)m.ctx.experts * C;
    if (m.ctx.experts_sliced) partial_floats += (double)(m.ctx.experts / ep) * C;
  }
  if (layout.tp() > 1 && partial_floats > 0)
    tail(ring_allreduce_task("tp.partial_allreduce", -1, partial_floats, wire, tp_group, at.tp, StreamRole::host),
         StepOp::tp_partial);
  if (layout.pp() > 1 && cfg.model.tied_head && (first_stage || last_stage)) {
    GraphTask t;
    t.name = "pp.tied_grad";
    t.category = TaskCategory::comm;
    t.role = StreamRole::host;
    t.peer = layout.world_rank(first_stage ? layout.pp() - 1 : 0, at.dp, at.tp);
    t.cost.bytes_to_peer.push_back({t.peer, (uint64_t)(head * wire)});
    tail(std::move(t), StepOp::tied_grad);
  }
  if (replicas.size() > 1 && !(zero3 && cfg.storage.zero3_experts))  // experts summed over their replicas, block by block
    for (const auto& [l, m] : moe)
      tail(ring_allreduce_task("expert.allreduce", l, (double)(m.ctx.experts / ep) * expert_params, wire, replicas,
                               at.replica, StreamRole::host),
           StepOp::expert_allreduce, l);
  // The gradient norm: the sums of squares, their all-reduces over TP (2 doubles), EP (1), DP
  // (1: the partitioned embedding's columns, ZeRO-3's shards) and PP (1), then the clipping;
  // then the loss parts over PP (2) and the loss over DP (1).
  tail(compute("grad.norm", 2.0 * params_held), StepOp::grad_norm);
  auto small_allreduce = [&](const char* name, int doubles, const std::vector<int>& group, int me, StepOp op) {
    if (group.size() > 1) tail(ring_allreduce_task(name, -1, doubles, sizeof(double), group, me, StreamRole::host), op);
  };
  small_allreduce("grad.norm.tp", 2, tp_group, at.tp, StepOp::norm_tp);
  small_allreduce("grad.norm.ep", 1, ep_group, ep_rank, StepOp::norm_ep);
  if (embed_split || zero3) small_allreduce("grad.norm.dp", 1, dp_group, at.dp, StepOp::norm_dp);
  small_allreduce("grad.norm.pp", 1, pp_group, at.pp, StepOp::norm_pp);
  tail(compute("grad.clip", params_held), StepOp::grad_clip);
  small_allreduce("loss.pp", 2, pp_group, at.pp, StepOp::loss_pp);
  small_allreduce("loss.dp", 1, dp_group, at.dp, StepOp::loss_dp);
  // storage.sparse = "ssd" (storage/expert_state_tier.h): AdamW keeps the dense moments and the
  // experts are updated through their records after it, the tier's own schedule in a typical
  // later step: the host cache full (no free slot) of the records updated last, which go first.
  std::vector<SparseUpdateRecord> records;
  if (cfg.storage.sparse == SparseStorage::ssd)
    for (const auto& [l, m] : moe)
      for (int e = 0; e < m.ctx.experts / ep; ++e) records.push_back({l, ep_rank * (m.ctx.experts / ep) + e});
  const double tier_floats = (double)records.size() * expert_params;
  tail(compute("optimizer", adamw_flops((size_t)(params_held - dense_floats + dense_owned - tier_floats))),
       StepOp::optimizer);
  if (records.empty()) return last;
  if (actions) return actions->sparse_update(g, last);
  const int64_t record = expert_state_record_bytes(cfg.model);
  const int64_t fit = cfg.storage.host_cache_bytes > 0 ? cfg.storage.host_cache_bytes / record : (int64_t)records.size();
  const int cached = (int)std::min<int64_t>(fit, (int64_t)records.size());
  // The cached records first (those updated last in the step before: the last ones of the order).
  std::rotate(records.begin(), records.end() - cached, records.end());
  const size_t before = g.size();
  // On a GPU the expert's gradients and weights cross PCIe through staging (device copies).
  const uint64_t device_bytes = cfg.run.device == Device::cuda ? (uint64_t)expert_params * sizeof(float) : 0;
  add_sparse_update_tasks(g, {last}, records, cached, 0, cfg.storage.sparse_prefetch, (uint64_t)record,
                          adamw_flops((size_t)expert_params), device_bytes);
  return g.size() > before ? g.id((int)g.size() - 1) : last;
}

}  // namespace

TaskId add_training_step(TaskGraph& g, const Config& cfg, int rank, const Topology& topo, StepActions* actions,
                         const StepRouting* routing) {
  return add_step(g, cfg, rank, topo, actions, routing, Mode::train);
}

TaskId add_evaluation_step(TaskGraph& g, const Config& cfg, int rank, const Topology& topo, StepActions& actions) {
  return add_step(g, cfg, rank, topo, &actions, nullptr, Mode::evaluate);
}

}  // namespace moebench
