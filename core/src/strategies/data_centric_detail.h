#pragma once
// Private to strategies/data_centric*.cpp: expert views, the per-expert state of a pass
// (Slot), the pass's handle (DataCentricPass: the schedule layout() decided), a prefetched get
// (Prefetched) and the Builder that appends a pass's typed tasks to a graph.
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "moebench/dist/topology.h"
#include "moebench/moe/row_ops.h"
#include "moebench/runtime/task_graph.h"
#include "moebench/strategies/data_centric.h"

namespace moebench::data_centric_detail {

// Checks that the L experts of `v` lie back to back as w1|b1|w2|b2, expert after expert.
inline void check_contiguous(const std::vector<ExpertParams>& v, int C, int F, const char* what) {
  const size_t n = 2 * (size_t)F * C + F + C;
  for (size_t j = 0; j < v.size(); ++j) {
    const float* base = v[0].w1 + j * n;
    if (v[j].w1 != base || v[j].b1 != base + (size_t)F * C || v[j].w2 != base + (size_t)F * C + F ||
        v[j].b2 != base + 2 * (size_t)F * C + F)
      throw std::invalid_argument(std::string("data_centric: the owned experts' ") + what +
                                  " must be one contiguous block (w1|b1|w2|b2 per expert)");
  }
}

inline ExpertParams view(float* base, int C, int F) {
  return {base, base + (size_t)F * C, base + (size_t)F * C + F, base + 2 * (size_t)F * C + F};
}

}  // namespace moebench::data_centric_detail

namespace moebench {

// One used expert of a pass. The schedule fields come from layout(); the buffers are bound
// by build() with buffers, on the main thread, before any of the pass's tasks runs.
struct DataCentric::Slot {
  int e = 0, owner = 0, off = 0, n = 0;
  bool owned = false;
  bool node_cached = false;  // hierarchical external expert: params in the node cache
  bool prefetched = false;   // planned: the iteration start pulls it (its pull waits for no credit)
  bool credit = false;       // holds a credit from its pull until its compute
  bool issued = false;       // with buffers: the iteration start issued its get
  int ext = -1;              // index in ext_ (external experts)
  ExpertParams params{}, grads{};
  RowArray cache, grad;  // pulled (or pair-copied) experts only, in the block's memory
  ExpertCompute* bank = nullptr;  // the strategy's for expert e (DataCentric::banks_)
};

struct DataCentric::Prefetched {
  int e = 0, owner = 0;
  RowArray buf;
};

// The handle of one forward (and its backward): the schedule, from the counts and topology.
struct DataCentricPass : MoeHandle {
  using Slot = DataCentric::Slot;
  using Prefetched = DataCentric::Prefetched;
  int credits = 1;
  std::vector<int> offsets;                  // this rank's slot offsets per expert [E+1]
  std::vector<std::unique_ptr<Slot>> slots;  // used experts: owned ascending, then pull order
  std::vector<Slot*> remote;                 // pulled by this rank itself, pull order
  std::vector<Slot*> cached;                 // hierarchical: computed from the node cache
  int initial_credits = 0;                   // held by used prefetched internal experts
  // Hierarchical: per ext_ index whether some rank of the node uses it; the ext_ indices
  // this rank pulls into the node cache (j % m == local rank, node-used), ascending;
  // whether the iteration start planned (node_prefetched) and issued (node_issued) those gets.
  std::vector<char> node_used;
  std::vector<int> node_share;
  bool node_prefetched = false, node_issued = false;
  // The janus.prefetch task of the iteration start in the pass's graph (build_iteration_start),
  // whose gets the prefetched pulls complete (they then carry no bytes); invalid: none.
  TaskId prefetch_task;
  std::vector<RowArray> node_grad;  // per node_share entry: the node's summed gradient
  // pcie_pairing: rounds on the node, this rank's and its peer's groups (ext_ indices, round
  // order), the peer's EP rank (-1: no peer).
  int rounds = 0;
  std::vector<int> own, theirs;
  int peer_rank = -1;
  // With buffers: the forward was built (backward may follow); prefetched buffers nobody
  // uses, alive until the pass's janus.sync has completed their gets.
  bool forward_built = false;
  std::vector<std::unique_ptr<Prefetched>> dropped;
};

// Appends one pass's tasks: typed helpers (role, category, labels, cost) that bind an action
// only when the graph is built with buffers, and the chain of the pass's collectives.
struct DataCentric::Builder {
  TaskGraph& g;
  MoeContext& ctx;
  bool act;                  // built with buffers: tasks get actions
  StreamRole comm_role;      // the EP group's comm worker: every comm task of the pass
  int first = 0;             // the pass's first task index
  TaskId last_collective{};  // every collective depends on the previous one (see data_centric.h)

  Builder(TaskGraph& graph, MoeContext& context, bool with_actions)
      : g(graph), ctx(context), act(with_actions), comm_role(context.ep_role()), first((int)graph.size()) {}

  TaskId add(GraphTask t, const std::vector<TaskId>& deps, std::function<void()> action) {
    t.layer = ctx.layer;
    if (act) t.action = std::move(action);
    return g.add(std::move(t), deps);
  }
  // A one-sided comm task on the EP group's comm worker: `transfer` get (pulled from
  // peer_world) or put (accumulated into it), bytes > 0.
  TaskId comm(const char* name, Transfer transfer, int expert, int peer_world, uint64_t bytes,
              const std::vector<TaskId>& deps, std::function<void()> action) {
    GraphTask t;
    t.name = name;
    t.category = TaskCategory::comm;
    t.role = comm_role;
    t.expert = expert;
    t.peer = peer_world;
    t.cost.transfer = transfer;
    if (bytes) t.cost.bytes_to_peer.push_back({peer_world, bytes});
    return add(std::move(t), deps, std::move(action));
  }
  // A collective (window barrier over the EP group, or node sync over its ranks on this node):
  // after `deps` and the pass's previous collective. Its cost lists zero bytes to every other
  // member: a barrier for the simulator (runtime/task_graph.h, Transfer::send).
  TaskId collective(const char* name, std::vector<TaskId> deps, std::function<void()> action, bool node_only = false) {
    deps.push_back(last_collective);
    GraphTask t;
    t.name = name;
    t.category = TaskCategory::comm;
    t.role = comm_role;
    const int me = ctx.ep_world[(size_t)ctx.ep_rank];
    for (int w : ctx.ep_world)
      if (w != me && (!node_only || (ctx.topology && ctx.topology->node_of(w) == ctx.topology->node_of(me))))
        t.cost.bytes_to_peer.push_back({w, 0});
    last_collective = add(std::move(t), deps, std::move(action));
    return last_collective;
  }
  TaskId compute(const char* name, int expert, double flops, const std::vector<TaskId>& deps,
                 std::function<void()> action) {
    GraphTask t;
    t.name = name;
    t.category = TaskCategory::compute;
    t.role = StreamRole::compute;
    t.expert = expert;
    t.cost.flops = flops;
    return add(std::move(t), deps, std::move(action));
  }
  TaskId copy(const char* name, int expert, int peer_world, uint64_t bytes, const std::vector<TaskId>& deps,
              std::function<void()> action) {
    GraphTask t;
    t.name = name;
    t.category = TaskCategory::copy;
    t.role = StreamRole::copy;
    t.expert = expert;
    t.peer = peer_world;
    t.cost.copy_bytes = bytes;
    return add(std::move(t), deps, std::move(action));
  }
  // The pass's tasks no other task of the pass waits for: the pass is complete when they are.
  std::vector<TaskId> sinks() const {
    std::vector<char> waited((size_t)(g.size() - first), 0);
    for (int i = first; i < (int)g.size(); ++i)
      for (int d : g.task(i).deps)
        if (d >= first) waited[(size_t)(d - first)] = 1;
    std::vector<TaskId> out;
    for (int i = first; i < (int)g.size(); ++i)
      if (!waited[(size_t)(i - first)]) out.push_back(g.id(i));
    return out;
  }
};

}  // namespace moebench
