#pragma once
// DataCentric: Janus' data-centric paradigm (SIGCOMM'23 §3.2, §5.1). Tokens stay where they
// are; every rank PULLS the parameters of the remote experts its tokens were routed to, with
// one-sided gets on a window over each owner's contiguous expert block (w1|b1|w2|b2 per
// expert, L experts per rank), runs them locally and, in backward, pushes each pulled
// expert's gradient back to its owner with one-sided accumulate (sum).
//
// A pass is a task graph (moe/moe_strategy.h). layout() decides everything from this rank's
// counts (the node's counts when hierarchical), the shapes, the topology and the options, so
// build() appends the same tasks with or without buffers (plan --graph, the simulator).
//
// Forward tasks (after the block's router):
//   janus.sync          comm: window barrier (every owner finished its previous optimizer step).
//   janus.pull          comm, one per used remote expert e in pull order: get + flush of the
//                       expert from its owner (peer = owner's world rank, expert = e,
//                       bytes_to_peer {owner, expert bytes}, transfer get).
//   moe.experts         compute, one per used expert (flops 4 n C F), owned experts first (they
//                       depend on nothing but the router, so they run while the first pulls
//                       travel), then each remote one after its pull.
// Credit-based buffer (§5.1.1): at most `credits` remote experts are pulled and not yet
// computed. The first `credits` pulls depend on janus.sync; the pull taking the credit that
// expert k's compute returns depends on that compute (credits = 2: pull k+2 after compute k),
// so computing one expert overlaps pulling the next.
// Backward tasks:
//   moe.experts_backward  compute, one per used expert (flops 8 n C F): dxg where the tokens are;
//                       owned experts' gradients into ctx.local_grads, pulled ones into scratch.
//   janus.sync          comm: gradient-window barrier (owners' own gradient writes are done).
//   janus.push_grad     comm, one per pulled expert: accumulate (sum) into the owner (transfer put).
//   janus.sync          comm: barrier (every contribution visible before the optimizer).
// Every window operation runs on the EP group's comm worker (ctx.ep_role()), in graph order:
// one thread issues all of a window's operations of a pass, in the same order on every rank
// (MPI_THREAD_MULTIPLE allows the thread to differ from the one that created the window).
// Each collective task (window barrier, node sync) depends on the pass's previous one, so a
// rank whose task failed skips every later collective instead of waiting in one its peers
// never reach; its main thread reports the error and the job ends (cmd_run's abort).
// Pulled experts live in the pass's handle (freed with it, at the next forward).
// Memory: the pulled experts, their gradients, the node cache and the experts' compute are in the
// block's memory (MoeContext::row_ops: RowArrays and ExpertCompute), and the windows are made by
// the EP group's data communicator (MoeContext::rows_communicator: an MPI dup over host memory
// on the CPU; on a GPU, NCCL's CUDA IPC windows over the experts' device arena within a machine,
// requests served over ctx.ep across machines: dist/served_window.h). The counts stay on the
// host communicators (ctx.ep and the node's split of it).
//
// Traffic (MPI backend): gets are counted on the PULLING rank's meter with peer = owner
// (mpi_communicator.h), accumulates on the pushing rank's meter with peer = owner; so per
// forward + backward a rank counts 2 x (distinct remote experts it routed rows to) x expert
// bytes, split by owner.
//
// Switches (DataCentricOptions, config [strategy.data_centric]):
//  priority (§5.2): remote experts are pulled in janus_expert_order (strategies/janus_order.h):
//    internal experts (owners on this node) in Algorithm 1's staggered order, then external
//    ones ascending; off: internal ones ascending for every worker. Only used experts are pulled.
//  prefetch (§5.3): the iteration start (build_iteration_start, before any block's router) is
//    one comm task "janus.prefetch" on the EP group's role: the window barrier, then NON-BLOCKING
//    gets of every expert this rank does not own: internal ones in pull order up to C credits,
//    external ones into the host cache (no credit); hierarchical: this rank's share of the node
//    cache. The task carries the planned bytes, so the step graph a rank runs and the one the
//    simulator replays both move them at the start of the iteration. The forward's janus.sync
//    waits for it (its barrier completes the gets); the prefetched experts' janus.pull /
//    janus.pull_node tasks wait for it and only flush (no bytes, no credit wait). Prefetched
//    experts the routing does not use are dropped (their credit returns; their buffers live
//    until the pass's janus.sync has flushed them). A forward with prefetch on but no iteration
//    start in its graph pulls those experts in the same tasks, carrying their bytes.
//  hierarchical (§5.1.2): external experts are pulled ONCE per node into a node-shared cache
//    (SharedWindow over the node's EP ranks, split by ctx.topology's node): external expert
//    number j (ascending) is pulled by the node's local rank j % m into its segment, only when
//    some local rank uses it ("janus.pull_node", comm, bytes to the owner), then a node sync
//    ("janus.node_sync"); every local rank computes on the cached copy. The node's used set
//    comes from the node's counts: layout() gathers the node ranks' counts rows over the node
//    communicator (intra-node, E values per rank). Decision: not exchanges_counts() — the
//    block's EP-wide counts exchange would send E counts to every rank of every other node,
//    and the inter-node bytes would no longer be Comm_DC (the expert bytes alone, §5.1.3).
//    Without a communicator (plan), the counts given hold every rank's row already.
//    In backward each local rank writes its gradient of external expert j into its own
//    shared gradient slot (zero when unused), node sync, and the puller sums the m slots in
//    local-rank order ("janus.node_reduce", compute, deterministic) and accumulates the sum
//    into the owner once ("janus.push_grad"). Per machine and iteration the inter-node bytes
//    are expert_bytes * (experts on other nodes used by the node), each way.
//  pcie_pairing (§5.2, Fig. 8-9; only with hierarchical, pairs from the cluster the run
//    assumes: ctx.cluster's pcie_switch_pairs, local ranks listed pairwise; none without a cluster): after the node cache is filled, each paired rank makes a
//    private copy ("device buffer") of every cached external expert it uses. The external
//    experts the PAIR uses (union of both ranks' used flags, ascending) are split by position:
//    even -> the pair's lower local rank, odd -> the higher. In round t each paired rank copies
//    the t-th expert of its own group from the node cache into its node-shared staging slot
//    ("janus.cache_copy", copy role, copy_bytes), node sync, then copies the t-th expert of the
//    peer's group from the peer's staging slot ("janus.peer_copy", copy role, copy_bytes,
//    peer = peer's world rank) when it uses it: own, peer, own, peer, ... (the longer group's
//    tail last). Own-group experts are computed from the staging slot, peer-group ones from a
//    private copy; the node-cache gradient path is unchanged (same weights, identical results).
//    Every rank of the node runs the same number of rounds (ceil(node-used / 2)); a rank in
//    no pair (or whose peer is not on the node) only joins the syncs and reads the node cache
//    as before. The staging slots are allocated with the node cache, so pcie_pairing must be
//    on at the first hierarchical call to take effect.
#include <cstdint>
#include <memory>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/moe/typed_strategy.h"

namespace moebench {

class Window;
class SharedWindow;
class Communicator;
class RowOps;
class ExpertCompute;

struct DataCentricStats {
  int credits = 0;            // the C of the last forward
  int max_in_use = 0;         // most credits ever held at once (never above C)
  long pulls = 0;             // expert pulls issued (all forwards)
  uint64_t bytes_pulled = 0;  // bytes of those pulls
  long pushes = 0;            // gradient blocks accumulated into owners (all backwards)
  uint64_t bytes_pushed = 0;
  long cache_hits = 0;        // backward uses of a cached pulled expert (never a pull)
  int last_pulls = 0;         // remote experts used by the last forward
  long prefetched = 0;        // pulls issued by the iteration start (prefetch), all iterations
  int last_prefetched = 0;    // of the last iteration start
  long node_pulls = 0;        // hierarchical: external experts this rank pulled into the node cache
  long node_pushes = 0;       // hierarchical: node-reduced gradients this rank accumulated
  long cache_copies = 0;      // pcie_pairing: experts copied from the node cache (PCIe), all forwards
  long peer_copies = 0;       // pcie_pairing: experts copied from the pair peer's staging (NVLink)
};

// [strategy.data_centric] (the switches above), read from the config's values.
struct DataCentricOptions {
  int credits = 2;            // credit-based buffer: pulled experts in flight at once
  bool priority = true;       // staggered pull order (Janus Algorithm 1)
  bool prefetch = false;      // pull at the start of the iteration (§5.3)
  bool hierarchical = false;  // node-level expert cache + gradient pre-reduce (§5.1.2)
  bool pcie_pairing = false;  // with hierarchical: copies from the node cache split
                              // between PCIe-switch peers (§5.2, Fig. 8-9)
  static DataCentricOptions of(const StrategyConfig& s);
};

// One copy of the pcie_pairing schedule: expert e from the node cache or from the pair peer.
struct DataCentricCopy {
  int expert = 0;
  bool from_peer = false;
  bool operator==(const DataCentricCopy& o) const { return expert == o.expert && from_peer == o.from_peer; }
};

struct DataCentricPass;  // the handle: a pass's schedule and its used experts (data_centric_detail.h)

class DataCentric : public StrategyOf<DataCentricPass> {
 public:
  // options: [strategy.data_centric].
  explicit DataCentric(DataCentricOptions options = {});
  ~DataCentric() override;
  std::string name() const override { return "data_centric"; }
  // Tokens stay: only this rank's counts matter (hierarchical: the node's, gathered by layout
  // on the node communicator; see the header comment).
  bool exchanges_counts() const override { return false; }
  bool uses_windows() const override { return true; }
  StrategyCost predict(const CostInputs& in, const MoeContext& ctx, const ClusterModel& cluster) const override;
  std::vector<TaskId> build_iteration_start(TaskGraph& g, const std::vector<TaskId>& after, bool with_buffers,
                                            MoeContext& ctx) override;

  const DataCentricOptions& options() const { return opts_; }
  const DataCentricStats& stats() const { return stats_; }
  // Experts (global ids) pulled in the last forward, in pull order.
  // Used remote experts are listed in pull order (prefetched ones included, and external ones
  // served by the node cache when hierarchical).
  const std::vector<int>& last_pulled() const { return pulled_order_; }
  // Experts whose get this rank issued during the last forward (not prefetch, not node cache).
  const std::vector<int>& last_forward_issued() const { return forward_issued_; }
  // Experts whose get the last iteration start issued (prefetch), in issue order.
  const std::vector<int>& last_prefetched() const { return prefetch_order_; }
  // pcie_pairing: the copies the last forward performed, in order (empty when not paired).
  const std::vector<DataCentricCopy>& last_copy_order() const { return copy_order_; }
  // pcie_pairing: the pair peer's local rank on this node in the last forward, -1 if none.
  int pair_peer() const { return pairing_ ? pair_peer_local_ : -1; }

 protected:
  std::unique_ptr<DataCentricPass> layout_pass(const ExchangeCounts& counts, MoeContext& ctx) override;
  std::vector<TaskId> build_pass(TaskGraph& g, DataCentricPass& p, MoePass pass, const std::vector<TaskId>& after,
                                 const MoeBuffers* buffers, MoeContext& ctx) override;

 private:
  friend struct DataCentricPass;
  using Pass = DataCentricPass;
  struct Slot;        // one used expert of a pass: its rows, parameters, cache, bank
  struct Prefetched;  // a get issued by the iteration start
  struct Builder;     // appends a pass's typed tasks (data_centric_detail.h)
  struct PlannedPull {  // one expert the iteration start pulls (prefetch)
    int e = 0, ext = -1;
    bool credit = false;  // internal expert: holds a credit
  };
  int configure(const MoeContext& ctx);  // checks the layout (with a communicator), sets P_, L_, ...; returns C
  void ensure_windows(MoeContext& ctx);
  void setup_topology(const MoeContext& ctx);  // pure: nodes, pull order, external experts, pair peer
  void ensure_node_cache(MoeContext& ctx);     // hierarchical: node communicator and shared cache (collective)
  std::vector<PlannedPull> prefetch_plan(int credits) const;
  void drop_prefetch();
  void take_prefetch(Pass& p, const MoeContext& ctx);  // the iteration start's buffers into the pass
  // The pull schedule (data_centric.cpp).
  void build_forward(Builder& b, Pass& p, const MoeBuffers* buffers, const std::vector<TaskId>& after);
  void build_backward(Builder& b, Pass& p, const MoeBuffers* buffers, const std::vector<TaskId>& after);
  // The node cache and pairing (data_centric_node_cache.cpp): the node's counts rows, the
  // node-used experts and this rank's share, the pairs' groups; their tasks.
  void gather_node_counts(std::vector<long>& rows);
  void plan_node(Pass& p, const std::vector<long>& rows) const;
  // Forward: this rank's node pulls (after the window barrier `sync`), then the node sync
  // and the pairing rounds; build_node_ready returns, per ext_ index, the task after which
  // this rank may compute on its copy of that expert.
  std::vector<TaskId> build_node_pulls(Builder& b, Pass& p, TaskId sync);
  std::vector<TaskId> build_node_ready(Builder& b, Pass& p, const std::vector<TaskId>& node_pulls);
  // Backward: node sync after the cached experts' gradients (cached_done), returned.
  TaskId build_node_sync_backward(Builder& b, const std::vector<TaskId>& cached_done);
  // Backward: sum of the m gradient slots and push, per node_share expert, after `barrier`.
  void build_node_push(Builder& b, Pass& p, TaskId node_sync, TaskId barrier, std::vector<TaskId>& pushes);
  float* ext_cache(int j);
  float* ext_grad(int local, int j);
  float* ext_stage(int local, int j);

  DataCentricOptions opts_;
  int P_ = 1, L_ = 0, C_ = 0, F_ = 0, E_ = 0, me_ = 0;
  size_t expert_floats_ = 0;
  RowOps* ops_ = nullptr;  // the block's memory (ctx.row_ops) for the pulled experts and the node slots
  // Per expert, its compute and kept activations, reused pass after pass (one pass of a block
  // and activation set is in flight at a time; a GPU's allocations stay).
  std::vector<std::unique_ptr<ExpertCompute>> banks_;
  std::shared_ptr<Communicator> win_comm_;  // the EP group's data communicator: the windows
  std::unique_ptr<Window> params_win_, grads_win_;
  const float* win_params_base_ = nullptr;
  const float* win_grads_base_ = nullptr;
  std::vector<int> pulled_order_;
  // Topology: node of every EP rank, EP ranks of this rank's node, pull order, this rank's
  // index on its node, ranks per node.
  std::vector<int> node_of_, node_ranks_, order_;
  int my_node_ = 0, local_rank_ = 0, m_ = 1;
  std::vector<int> ext_;      // external experts (other nodes), ascending
  std::vector<int> ext_idx_;  // expert -> index in ext_, -1 if internal
  // Hierarchical: node communicators (the counts' on the host; the shared window's, a split of
  // win_comm_), shared cache (per local rank: ceil(n_ext/m) cached experts, then n_ext gradient
  // slots, then n_ext staging slots with pcie_pairing).
  std::unique_ptr<Communicator> node_comm_;
  std::shared_ptr<Communicator> node_data_comm_;
  std::unique_ptr<SharedWindow> node_win_;
  size_t ext_slots_ = 0;
  bool hier_ = false;
  // pcie_pairing: staging slots allocated, pairing active on this node (uniform), this
  // rank's pair peer (local rank, -1: none).
  bool staging_ = false, pairing_ = false;
  int pair_peer_local_ = -1;
  std::vector<DataCentricCopy> copy_order_;
  // Prefetch state (the iteration start -> the next forward's build): its buffers, whether its
  // gets await a forward, its janus.prefetch task and the graph that holds it.
  std::vector<std::unique_ptr<Prefetched>> prefetch_;
  bool prefetch_pending_ = false;
  TaskId prefetch_task_;
  const TaskGraph* prefetch_graph_ = nullptr;
  std::vector<int> prefetch_order_, forward_issued_;
  DataCentricStats stats_;
};

// Instantiated once, in data_centric.cpp, where DataCentricPass is complete.
extern template class StrategyOf<DataCentricPass>;

}  // namespace moebench
