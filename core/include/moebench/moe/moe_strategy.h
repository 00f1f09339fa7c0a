#pragma once
// MoeStrategy: how an MoE block gets its routed tokens processed by experts that live on
// other ranks, as a task graph (runtime/task_graph.h). The router, the local dispatch order
// (kept assignments grouped by expert) and the gate-weighted combine are the same for every
// strategy (moe/moe_layer.h); a strategy takes the gathered slot rows xg and produces the
// expert outputs y for them, and the reverse (dy -> dxg) in backward. Two steps per block,
// pass and micro-batch (DeepEP's get_dispatch_layout + handle, Megatron's pre/comm/post):
//   layout(counts, ctx)  -> MoeHandle: everything derived from the EP group's routing counts
//                           (row counts per peer and chunk, receive orders) plus the pass's
//                           buffers; per micro-batch state lives here, never in the strategy.
//                           Each strategy's handle is its own type (moe/typed_strategy.h).
//   build(g, handle, pass, after, buffers, ctx): appends the pass's tasks to g after the tasks
//                           `after` and returns the tasks that complete it. Without buffers
//                           it appends the same tasks without actions: what `plan --graph` and
//                           the simulator use (no communicator needed).
// The implementations live in strategies/, one file per strategy holding it, its analytical
// cost model (predict) and its factory; strategies/registry.h makes them by name.
#include <functional>
#include <memory>
#include <utility>
#include <mutex>
#include <map>
#include <string>
#include <vector>

#include "moebench/moe/expert_bank.h"
#include "moebench/moe/router.h"
#include "moebench/moe/row_ops.h"
#include "moebench/runtime/task_graph.h"

namespace moebench {

class ClusterModel;
class Communicator;
class Topology;
class Executor;

// Communicators of the EP group for the executor's comm roles (dups of the group: concurrent
// collectives on different roles never share matching). Shared by the blocks of a rank.
struct EpStreams {
  std::unique_ptr<Communicator> intra, inter;  // used only by the comm.intra / comm.inter workers
};

// The rows' communicators of a strategy's own groups, one per group (its world ranks) and
// purpose for the whole run, shared by the blocks (MoeContext::rows_communicator).
struct RowsCommunicators {
  std::mutex m;
  std::map<std::pair<std::string, std::vector<int>>, std::shared_ptr<Communicator>> made;
};

// What a strategy may use for one MoE block on one rank.
struct MoeContext {
  Communicator* ep = nullptr;          // expert-parallel group (main thread: setup collectives)
  std::shared_ptr<EpStreams> streams;  // per-role dups of ep (created on first use when null)
  const Topology* topology = nullptr;  // world topology (link classes, nodes)
  const ClusterModel* cluster = nullptr;  // the cluster the run assumes (cost-model choices; may be null)
  Executor* executor = nullptr;        // runs the block's graph (the block makes one when null)
  int layer = -1;                      // block index (span labels)
  int experts = 0;                     // E of this block, over the whole EP group
  int C = 0, F = 0;
  // Bytes per row, gradient or weight element in the costs of this block's transfers and row
  // copies and in predict(): 4, what the runtime's fp32 arrays move, except in graphs built
  // without buffers for a cluster whose workload trains in fp16 / bf16 (ClusterModel::
  // wire_element_bytes, cluster.train_precision): 2. The arrays themselves stay fp32.
  int wire_element_bytes = 4;
  // The EP group without a communicator (graphs without buffers): this rank's index, the
  // group's size and world ranks. Filled from ep when it is set.
  int ep_rank = 0, ep_size = 1;
  std::vector<int> ep_world;
  // This rank owns experts [first_local, first_local + local.size()); gradients of owned
  // experts accumulate into local_grads.
  int first_local = 0;
  std::vector<ExpertParams> local, local_grads;
  // Where the rows live and how they are moved (the block's MoeRows', set by MoeLayer; null: the
  // host's). A strategy's buffers and row work go through row_ops(), and rows cross the EP group
  // over rows_comm(role): rows_streams, the EP group's communicators for the rows' memory (NCCL
  // for a model on a GPU), or role_comm's MPI dups when null (host memory). Host values (the
  // counts) always go over role_comm.
  RowOps* ops = nullptr;
  RowOps& row_ops() const { return ops ? *ops : host_row_ops(); }
  std::shared_ptr<EpStreams> rows_streams;
  // The same for a group a strategy makes (hier_a2a's node groups, data_centric's windows):
  // rows_group makes the communicator rows cross `group` over (collective over it; null: a dup).
  // rows_communicator returns the run's one for `group`'s ranks and `purpose` (made on the first
  // call, collective then; a new one per call without rows_shared): the blocks share it, so
  // every call on it must come from one stream role, in the graph's order on every rank (NCCL
  // communicators hold buffers of their own; one per block would multiply them).
  std::function<std::unique_ptr<Communicator>(Communicator& group)> rows_group;
  std::shared_ptr<RowsCommunicators> rows_shared;
  std::shared_ptr<Communicator> rows_communicator(Communicator& group, const std::string& purpose) const;
  // Strategy options are not here: each strategy holds its own option struct
  // ([strategy.<name>], config/config.h), given when it is made (strategies/registry.h), and
  // reads what else it needs from the cluster (data_centric's PCIe switch pairs).
  // The tensor-parallel group (tp > 1): a dup used only by the comm workers (null in graphs
  // without buffers or without TP), this rank's index, the group's size and world ranks. TP
  // ranks hold the same tokens, so their EP groups see the same routing counts.
  // experts_sliced (moe.expert_tp, DeepSpeed-TED): this rank holds 1/tp_size of every expert's
  // FFN columns (local / local_grads are those slices, F their width), so expert outputs and
  // input gradients are partial sums over the TP group.
  std::shared_ptr<Communicator> tp;
  // Rows cross the TP group over tp_rows_comm(role): tp_rows, the TP group's per-role
  // communicators for the rows' memory (NCCL for a model on a GPU), or tp when null.
  std::shared_ptr<EpStreams> tp_rows;
  Communicator& tp_rows_comm(StreamRole role);
  int tp_rank = 0, tp_size = 1;
  std::vector<int> tp_world;
  bool experts_sliced = false;
  // The data-parallel group the router's load statistics are summed over (the aux loss of the
  // global batch, MoeLayer::globalize_aux): its per-role dups (used only by the comm workers;
  // null in graphs without buffers), this rank's index, size and world ranks.
  std::shared_ptr<EpStreams> stats;
  int stats_rank = 0, stats_size = 1;
  std::vector<int> stats_world;

  // Fills ep_rank / ep_size / ep_world from ep (when set), tp_rank / tp_size / tp_world from tp.
  void sync_group();
  // The role of a collective over `world` (world ranks): comm.inter when they span nodes of
  // the topology, else comm.intra.
  StreamRole role_over(const std::vector<int>& world) const;
  // The role a collective over the whole EP group runs on (role_over(ep_world)).
  StreamRole ep_role() const { return role_over(ep_world); }
  // The EP communicator for a comm role (creates `streams` on first use: collective over ep).
  Communicator& role_comm(StreamRole role);
  Communicator& rows_comm(StreamRole role);
};

// The EP group's routing counts of one pass: rows[src * E + e] slot rows EP rank src sends to
// expert e (known to every rank after the counts exchange).
struct ExchangeCounts {
  int P = 1, E = 0;
  std::vector<long> rows;
  long at(int src, int e) const { return rows[(size_t)src * E + e]; }
};

enum class MoePass { forward, backward };

// Buffers of one pass: forward reads xg [S,C] and writes y [S,C]; backward reads dy and
// writes dxg. They stay valid until the pass's tasks have run (xg until backward).
struct MoeBuffers {
  const float* xg = nullptr;
  float* y = nullptr;
  const float* dy = nullptr;
  float* dxg = nullptr;
};

// The state of one pass of a block, made by its strategy's layout and given back to it
// (moe/typed_strategy.h: each strategy's own type, checked when it comes back).
class MoeHandle {
 public:
  virtual ~MoeHandle() = default;
};

// predict(): the analytical cost of one forward pass of one MoE block on a ClusterModel,
// "predicted", never measured. The block's shapes (ctx.C hidden, ctx.F ffn, ctx.experts), the
// EP group's placement (ctx.ep_world: world ranks, placed on the cluster by
// ClusterModel::node_of) and the strategy's switches come from the same MoeContext build()
// reads; CostInputs adds the routing. Routing is balanced (every rank sends tokens*top_k/E rows
// to each expert; a rank uses min(E, tokens*top_k) experts), the papers' lower bound.
// Backward moves the same bytes again (not included).
struct CostInputs {
  double tokens = 0;  // tokens per EP rank entering the block
  int top_k = 1;
};
// Bytes by link class: intra = another device of the same machine (pcie_pair, intra_node),
// inter = another machine (inter_node, inter_switch).
struct LinkBytes {
  double intra = 0, inter = 0;
};
struct StrategyCost {
  LinkBytes rank;     // sent (pulled, for data_centric) by one EP rank: the mean over the group
  LinkBytes machine;  // by the EP ranks of one machine together: the mean over the group's machines
  // The slowest EP rank's seconds on the cluster's links and devices (core/src/strategies/cost_support.h:
  // latency + bytes / bandwidth per link class, NIC shared; compute_seconds per expert task).
  // Not added together: how they overlap is the simulator's business.
  double comm_seconds = 0, compute_seconds = 0;
};

// A choice a strategy made for one pass (monta's level and chunks under "auto"): stored per step
// and MoE block as the run's metric "<key>/block<b>" (train/run_recorder.h), so a run says what
// it ran, not only what it was asked.
struct StrategyDecision {
  std::string key;  // "monta.level", ...
  double value = 0;
};

class MoeStrategy {
 public:
  virtual ~MoeStrategy() = default;
  virtual std::string name() const = 0;
  // Whether layout needs every EP rank's counts (then the block exchanges them first, task
  // moe.counts) or only this rank's (the other rows of the counts are zero).
  virtual bool exchanges_counts() const { return true; }
  // Whether each EP rank holds the same tokens and computes only its own experts' share of the
  // block (ppmoe: the EP group is the tensor-parallel group): the block output and the input
  // gradient are then partial sums that MoeLayer all-reduces over the group (tasks
  // moe.allreduce / moe.allreduce_grad), the aux-loss gradient is taken on EP rank 0 only, and
  // the router gradient is partial too (all-reduced once per step, MoeGpt::tp_partial_ranges).
  // The strategy writes zero rows for the slots of other ranks' experts.
  virtual bool partial_outputs() const { return false; }
  // Whether the strategy itself sums the sliced experts' partial outputs over the TP group
  // (monta: a reduce-scatter before its dropped return trip), so the block's output and input
  // gradient leave it whole (no moe.allreduce) although ctx.experts_sliced.
  virtual bool sums_slices(const MoeContext& ctx) const { (void)ctx; return false; }
  // Whether the strategy reads or writes other ranks' memory through one-sided windows
  // (Communicator::create_window): the trainer then enables windows on the world before any
  // block is set up (data_centric pulls experts; a process whose strategies pull nothing never
  // needs the MPI one-sided component).
  virtual bool uses_windows() const { return false; }
  // Whether the block's comm tasks run on their roles' priority lanes (GraphTask::priority;
  // monta's [strategy.monta] ep_priority): MoeLayer and the step graph move them there. The
  // blocks of a rank share the EP, TP and statistics dups and each communicator's tasks must
  // stay on one lane, so all MoE blocks of a rank answer alike (check_comm_priority,
  // moe/block_graph.h).
  virtual bool comm_priority() const { return false; }
  // A rewrite of the router's choice of this rank's tokens for the block of ctx (moe/router.h
  // GatePolicy: after the top-k or forced choice, before gates, capacity and aux), or none.
  // MoeLayer asks once, when the strategy is set, and applies it to every forward (fastermoe's
  // topology-aware gate, §4.3). Default: none.
  virtual GatePolicy choice_policy(const MoeContext& ctx) const {
    (void)ctx;
    return {};
  }
  // The handle of one pass of the block from the EP group's counts (pure: no communication,
  // except collective setup the first time when ctx.ep is set).
  virtual std::unique_ptr<MoeHandle> layout(const ExchangeCounts& counts, MoeContext& ctx) = 0;
  // Appends the tasks of `pass` (backward uses the forward's handle) after `after`; returns
  // the tasks that complete the pass. buffers == nullptr: the same tasks without actions.
  virtual std::vector<TaskId> build(TaskGraph& g, MoeHandle& handle, MoePass pass, const std::vector<TaskId>& after,
                                    const MoeBuffers* buffers, MoeContext& ctx) = 0;
  // Throws std::invalid_argument when the experts do not divide over the EP group, and
  // std::out_of_range when an EP rank is outside the cluster.
  virtual StrategyCost predict(const CostInputs& in, const MoeContext& ctx, const ClusterModel& cluster) const = 0;
  // The choices behind `handle` (the last forward's), for the run store. Default: none.
  virtual std::vector<StrategyDecision> decisions(const MoeHandle& handle) const {
    (void)handle;
    return {};
  }
  // The start of a forward, before any block's gate (Janus prefetch, §5.3): the transfers the
  // strategy starts for its next pass, as tasks of g after `after` — with actions when
  // with_buffers (a training rank; collective over ctx.ep), with their costs only otherwise (the
  // step graph the simulator replays). The next forward built into the same graph waits for
  // them instead of moving those bytes again. Returns the tasks (default: none).
  virtual std::vector<TaskId> build_iteration_start(TaskGraph& g, const std::vector<TaskId>& after, bool with_buffers,
                                                    MoeContext& ctx) {
    (void)g, (void)after, (void)with_buffers, (void)ctx;
    return {};
  }
};

}  // namespace moebench
