#include "moebench/moe/block_graph.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "moebench/dist/communicator.h"
#include "moebench/dist/topology.h"

namespace moebench {
namespace {

GraphTask compute(const char* name, const MoeContext& ctx, double flops, std::function<void()> action) {
  GraphTask t;
  t.name = name;
  t.category = TaskCategory::compute;
  t.role = StreamRole::compute;
  t.layer = ctx.layer;
  t.cost.flops = flops;
  t.action = std::move(action);
  return t;
}

}  // namespace

TaskId add_router_task(TaskGraph& g, const MoeContext& ctx, const BlockDims& d, const std::vector<TaskId>& after,
                       std::function<void()> action) {
  return g.add(compute("moe.router", ctx, 2.0 * d.N * d.C * d.E, std::move(action)), after);
}

TaskId add_counts_task(TaskGraph& g, MoeContext& ctx, const BlockDims& d, TaskId after, const long* mine, long* all) {
  GraphTask t;
  t.name = "moe.counts";
  t.category = TaskCategory::comm;
  t.role = ctx.ep_role();
  t.layer = ctx.layer;
  const int P = ctx.ep_size;
  if (P > 1)
    t.cost.bytes_to_peer.push_back({ctx.ep_world[(size_t)(ctx.ep_rank + 1) % P], (uint64_t)(P - 1) * d.E * sizeof(long)});
  t.cost.messages = std::max(1, P - 1);  // ring all-gather
  if (mine && all) {
    Communicator* comm = &ctx.role_comm(t.role);
    const int E = d.E;
    t.action = [comm, mine, all, E] { comm->all_gather(mine, all, E, DType::i64); };
  }
  return g.add(std::move(t), {after});
}

TaskId add_aux_stats_task(TaskGraph& g, MoeContext& ctx, const BlockDims& d, TaskId after,
                          std::function<void(Communicator&)> action) {
  const int P = ctx.stats_size;
  if (P < 2) return {};
  GraphTask t;
  t.name = "moe.aux_stats";
  t.category = TaskCategory::comm;
  t.role = ctx.role_over(ctx.stats_world);
  t.layer = ctx.layer;
  const uint64_t bytes = (2 * (uint64_t)d.E + 1) * sizeof(double);
  t.cost.bytes_to_peer.push_back({ctx.stats_world[(size_t)(ctx.stats_rank + 1) % P], 2 * (P - 1) * bytes / P});
  t.cost.messages = 2 * (P - 1);  // ring: reduce-scatter then all-gather
  if (action) {
    if (!ctx.stats) throw std::logic_error("add_aux_stats_task: no DP communicators for the comm workers");
    Communicator* comm = (t.role == StreamRole::comm_inter ? ctx.stats->inter : ctx.stats->intra).get();
    t.action = [comm, action = std::move(action)] { action(*comm); };
  }
  return g.add(std::move(t), {after});
}

TaskId add_forward_end(TaskGraph& g, TaskId last, TaskId aux_stats) {
  if (!aux_stats.valid()) return last;
  GraphTask join;  // unnamed: no span, no cost
  join.role = g[last].role;
  return g.add(std::move(join), {last, aux_stats});
}

TaskId add_combine_task(TaskGraph& g, const MoeContext& ctx, const BlockDims& d, MoePass pass,
                        const std::vector<TaskId>& after, std::function<void()> action) {
  const bool fwd = pass == MoePass::forward;
  return g.add(compute(fwd ? "moe.combine" : "moe.combine_backward", ctx, (fwd ? 2.0 : 4.0) * d.N * d.K * d.C,
                       std::move(action)),
               after);
}

TaskId add_router_backward_task(TaskGraph& g, const MoeContext& ctx, const BlockDims& d,
                                const std::vector<TaskId>& after, std::function<void()> action) {
  return g.add(compute("moe.router_backward", ctx, 4.0 * d.N * d.C * d.E + (double)d.N * d.K * d.C, std::move(action)),
               after);
}

PartialGroup partial_group(const MoeStrategy& strategy, const MoeContext& ctx) {
  if (strategy.partial_outputs()) return {ctx.ep_rank, ctx.ep_size, &ctx.ep_world};
  if (ctx.experts_sliced && ctx.tp_size > 1 && !strategy.sums_slices(ctx)) return {ctx.tp_rank, ctx.tp_size, &ctx.tp_world};
  return {};
}

TaskId add_partial_reduce_task(TaskGraph& g, const MoeStrategy& strategy, MoeContext& ctx, const BlockDims& d,
                               MoePass pass, const std::vector<TaskId>& after, float* data) {
  const PartialGroup group = partial_group(strategy, ctx);
  const bool sliced = !strategy.partial_outputs();
  GraphTask t;
  t.name = pass == MoePass::forward ? "moe.allreduce" : "moe.allreduce_grad";
  t.category = TaskCategory::comm;
  t.role = StreamRole::comm_intra;
  if (ctx.topology) {
    std::set<int> nodes;
    for (int w : *group.world) nodes.insert(ctx.topology->node_of(w));
    if (nodes.size() > 1) t.role = StreamRole::comm_inter;
  }
  t.layer = ctx.layer;
  const uint64_t P = (uint64_t)group.size, count = (uint64_t)d.N * d.C;
  if (P > 1)
    t.cost.bytes_to_peer.push_back({(*group.world)[(size_t)(group.rank + 1) % P], 2 * (P - 1) * count * (uint64_t)ctx.wire_element_bytes / P});
  t.cost.messages = (int)(2 * (P - 1));  // ring: reduce-scatter then all-gather
  if (data) {
    // the TP group's or the EP group's rows communicator (the block output and dx share are
    // rows' memory); the block's reduces run in order on its role
    Communicator* comm = sliced ? &ctx.tp_rows_comm(t.role) : &ctx.rows_comm(t.role);
    t.action = [comm, data, count] { comm->all_reduce(data, count, DType::f32); };
  }
  return g.add(std::move(t), after);
}

TaskId add_grad_accumulate_task(TaskGraph& g, const MoeContext& ctx, const BlockDims& d,
                                const std::vector<TaskId>& after, std::function<void()> action) {
  return g.add(compute("moe.grad_accumulate", ctx, (double)d.N * d.C, std::move(action)), after);
}

namespace {
TaskId add_block_pass_tasks(TaskGraph& g, MoeStrategy& strategy, MoeHandle& handle, MoePass pass, MoeContext& ctx,
                            const BlockDims& d, const std::vector<TaskId>& after);
}  // namespace

void prioritise_comm(TaskGraph& g, int from, const MoeStrategy& strategy) {
  if (!strategy.comm_priority()) return;
  for (int i = from; i < (int)g.size(); ++i)
    if (g.task(i).category == TaskCategory::comm) g.set_priority(i, true);
}

void check_comm_priority(const std::map<int, const MoeStrategy*>& blocks) {
  if (blocks.empty()) return;
  const auto& [first, s] = *blocks.begin();
  for (const auto& [block, other] : blocks)
    if (other->comm_priority() != s->comm_priority())
      throw std::invalid_argument("MoE block " + std::to_string(first) + " (" + s->name() + ") " +
                                  (s->comm_priority() ? "puts" : "does not put") + " its comm tasks on the priority lanes, block " +
                                  std::to_string(block) + " (" + other->name() + ") " +
                                  (other->comm_priority() ? "does" : "does not") +
                                  ": the MoE blocks of a rank share their communicators, so all or none of them may");
}

TaskId add_block_pass(TaskGraph& g, MoeStrategy& strategy, MoeHandle& handle, MoePass pass, MoeContext& ctx,
                      const BlockDims& d, const std::vector<TaskId>& after) {
  const int from = (int)g.size();
  const TaskId last = add_block_pass_tasks(g, strategy, handle, pass, ctx, d, after);
  prioritise_comm(g, from, strategy);
  return last;
}

namespace {
TaskId add_block_pass_tasks(TaskGraph& g, MoeStrategy& strategy, MoeHandle& handle, MoePass pass, MoeContext& ctx,
                            const BlockDims& d, const std::vector<TaskId>& after) {
  if (pass == MoePass::forward) {
    const TaskId router = add_router_task(g, ctx, d, after);
    const TaskId gathered = strategy.exchanges_counts() ? add_counts_task(g, ctx, d, router) : router;
    const TaskId aux = add_aux_stats_task(g, ctx, d, router);
    const TaskId combined = add_combine_task(g, ctx, d, pass, strategy.build(g, handle, pass, {gathered}, nullptr, ctx));
    return add_forward_end(g, partial_group(strategy, ctx).size > 1
                                  ? add_partial_reduce_task(g, strategy, ctx, d, pass, {combined})
                                  : combined,
                           aux);
  }
  const TaskId start = add_combine_task(g, ctx, d, pass, after);
  const TaskId routed = add_router_backward_task(g, ctx, d, strategy.build(g, handle, pass, {start}, nullptr, ctx));
  if (partial_group(strategy, ctx).size == 1) return routed;
  return add_grad_accumulate_task(g, ctx, d, {add_partial_reduce_task(g, strategy, ctx, d, pass, {routed})});
}
}  // namespace

}  // namespace moebench
