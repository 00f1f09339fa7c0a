#pragma once
// DataCentric: Janus' data-centric paradigm (SIGCOMM'23 §3.2, §5.1). Tokens stay where they
// are; every rank PULLS the parameters of the remote experts its tokens were routed to, with
// one-sided gets on a window over each owner's contiguous expert block (w1|b1|w2|b2 per
// expert, L experts per rank), runs them locally and, in backward, pushes each pulled
// expert's gradient back to its owner with one-sided accumulate (sum).
//
// Forward, per block: window barrier (every owner finished its previous optimizer step);
// then one task per used expert: up to `credits` pulls are in flight or held uncomputed at
// once (credit-based buffer, §5.1.1): a pull takes a credit, finishing that expert's compute
// returns it and issues the next pull, so computing one expert overlaps pulling the next.
// Owned experts are computed first (they need no credit) while the first pulls travel.
// Pulled experts stay in a host cache until the end of backward (backward never pulls).
//
// Backward: ExpertBank backward per used expert where the tokens are (dxg directly; owned
// experts' gradients into ctx.local_grads, pulled experts' into zeroed scratch); window
// barrier (every owner's local gradient writes are done); accumulate of every pulled
// expert's gradient into the owner's gradient block; window barrier (all contributions
// visible before the optimizer). The cache is freed after backward.
//
// Spans (when ctx.executor is set): "janus.pull" (comm, peer = owner world rank, bytes =
// expert bytes, expert = e; the span covers waiting for the pull: get is issued when the
// credit is taken, flush(owner) completes it), "moe.experts" (compute, one per expert),
// "moe.experts_backward" (compute, one per expert), "janus.push_grad" (comm, one per pulled
// expert), "janus.sync" (comm, the window barriers).
//
// Traffic (MPI backend): gets are counted on the PULLING rank's meter with peer = owner
// (mpi_communicator.h), accumulates on the pushing rank's meter with peer = owner; so per
// forward + backward a rank counts 2 x (distinct remote experts it routed rows to) x expert
// bytes, split by owner.
//
// Switches (MoeContext, config [strategy]):
//  priority (§5.2): remote experts are pulled in janus_expert_order (strategies/janus_order.h):
//    internal experts (owners on this node) in Algorithm 1's staggered order, then external
//    ones ascending; off: internal ones ascending for every worker. Only used experts are pulled.
//  prefetch (§5.3): begin_iteration() (window barrier, then non-blocking gets) issues the pulls
//    of every expert this rank does not own: internal ones in pull order up to C credits,
//    external ones into the host cache (no credit); forward uses them (flush) and pulls the
//    rest. Prefetched experts the routing does not use are dropped (their credit returns).
//  hierarchical (§5.1.2): external experts are pulled ONCE per node into a node-shared cache
//    (SharedWindow over the node's EP ranks, split by ctx.topology's node): external expert
//    number j (ascending) is pulled by the node's local rank j % m into its segment (only when
//    some local rank uses it, agreed by a max all-reduce of the used flags on the node), then
//    a node sync; every local rank computes on the cached copy. In backward each local rank
//    writes its gradient of external expert j into its own shared gradient slot (zero when
//    unused), node sync, and the puller sums the m slots in local-rank order (deterministic)
//    and accumulates the sum into the owner once. Per machine and iteration the inter-node
//    bytes are expert_bytes * (experts on other nodes used by the node), each way.
//  pcie_pairing (§5.2, Fig. 8-9; only with hierarchical, pairs from ctx.pcie_switch_pairs,
//    local ranks listed pairwise): after the node cache is filled, each paired rank makes a
//    private copy ("device buffer") of every cached external expert it uses. The external
//    experts the PAIR uses (union of both ranks' used flags, ascending) are split by position:
//    even -> the pair's lower local rank, odd -> the higher. In round t each paired rank copies
//    the t-th expert of its own group from the node cache into its node-shared staging slot
//    ("janus.cache_copy", copy span, peer -1), node sync, then copies the t-th expert of the
//    peer's group from the peer's staging slot ("janus.peer_copy", copy span, peer = peer's
//    world rank) when it uses it: own, peer, own, peer, ... (the longer group's tail last).
//    Own-group experts are computed from the staging slot, peer-group ones from a private
//    copy; the node-cache gradient path is unchanged (same weights, identical results).
//    Every rank of the node runs the same number of rounds (ceil(node-used / 2)); a rank in
//    no pair (or whose peer is not on the node) only joins the syncs and reads the node cache
//    as before. The staging slots are allocated with the node cache, so pcie_pairing must be
//    on at the first hierarchical call to take effect.
#include <cstdint>
#include <memory>
#include <vector>

#include "moebench/moe/moe_strategy.h"

namespace moebench {

class Window;
class SharedWindow;
class Communicator;

struct DataCentricStats {
  int credits = 0;            // the C of the last forward
  int max_in_use = 0;         // most credits ever held at once (never above C)
  long pulls = 0;             // expert pulls issued (all forwards)
  uint64_t bytes_pulled = 0;  // bytes of those pulls
  long pushes = 0;            // gradient blocks accumulated into owners (all backwards)
  uint64_t bytes_pushed = 0;
  long cache_hits = 0;        // backward uses of a cached pulled expert (never a pull)
  int last_pulls = 0;         // remote experts used by the last forward
  long prefetched = 0;        // pulls issued by begin_iteration (prefetch), all iterations
  int last_prefetched = 0;    // of the last begin_iteration
  long node_pulls = 0;        // hierarchical: external experts this rank pulled into the node cache
  long node_pushes = 0;       // hierarchical: node-reduced gradients this rank accumulated
  long cache_copies = 0;      // pcie_pairing: experts copied from the node cache (PCIe), all forwards
  long peer_copies = 0;       // pcie_pairing: experts copied from the pair peer's staging (NVLink)
};

// One copy of the pcie_pairing schedule: expert e from the node cache or from the pair peer.
struct DataCentricCopy {
  int expert = 0;
  bool from_peer = false;
  bool operator==(const DataCentricCopy& o) const { return expert == o.expert && from_peer == o.from_peer; }
};

class DataCentric : public MoeStrategy {
 public:
  // credits <= 0: use ctx.credits (MoeContext, default 2).
  explicit DataCentric(int credits = 0);
  ~DataCentric() override;
  std::string name() const override { return "data_centric"; }
  bool exchanges_counts() const override { return false; }  // tokens stay: only its own counts matter
  std::unique_ptr<MoeHandle> layout(const ExchangeCounts& counts, MoeContext& ctx) override;
  std::vector<TaskId> build(TaskGraph& g, MoeHandle& handle, MoePass pass, const std::vector<TaskId>& after,
                            const MoeBuffers* buffers, MoeContext& ctx) override;
  // One pass, blocking, on the calling thread (the compute worker): y[S,C] for the slot rows
  // xg[S,C] grouped by expert (offsets [E+1]); and dxg from dy with the gradients pushed.
  void forward(float* y, const float* xg, const std::vector<int>& offsets, MoeContext& ctx);
  void backward(float* dxg, const float* dy, MoeContext& ctx);
  StrategyCost predict(const CostInputs& in, const MoeContext& ctx, const ClusterModel& cluster) const override;
  void begin_iteration(MoeContext& ctx) override;

  void set_credits(int credits) { credits_override_ = credits; }  // <= 0: ctx.credits
  const DataCentricStats& stats() const { return stats_; }
  // Experts (global ids) pulled in the last forward, in pull order.
  // Used remote experts are listed in pull order (prefetched ones included, and external ones
  // served by the node cache when hierarchical).
  const std::vector<int>& last_pulled() const { return pulled_order_; }
  // Experts whose get this rank issued during the last forward (not prefetch, not node cache).
  const std::vector<int>& last_forward_issued() const { return forward_issued_; }
  // Experts whose get the last begin_iteration issued (prefetch), in issue order.
  const std::vector<int>& last_prefetched() const { return prefetch_order_; }
  // pcie_pairing: the copies the last forward performed, in order (empty when not paired).
  const std::vector<DataCentricCopy>& last_copy_order() const { return copy_order_; }
  // pcie_pairing: the pair peer's local rank on this node in the last forward, -1 if none.
  int pair_peer() const { return pairing_ ? pair_peer_local_ : -1; }

 private:
  struct Slot;  // one used expert: its bank, cache and gradient scratch
  struct Prefetched;
  int configure(MoeContext& ctx);  // checks the layout, sets P_, L_, ...; returns C
  void ensure_windows(MoeContext& ctx);
  void setup_nodes(MoeContext& ctx);
  void release_cache();
  void drop_prefetch();
  float* ext_cache(int j);
  float* ext_grad(int local, int j);
  float* ext_stage(int local, int j);
  void pair_copies(MoeContext& ctx, const std::vector<int>& used_rows);

  int credits_override_ = 0;
  int P_ = 1, L_ = 0, C_ = 0, F_ = 0, E_ = 0, me_ = 0;
  size_t expert_floats_ = 0;
  std::unique_ptr<Window> params_win_, grads_win_;
  const float* win_params_base_ = nullptr;
  const float* win_grads_base_ = nullptr;
  std::vector<int> offsets_;
  std::vector<std::unique_ptr<Slot>> slots_;  // used experts, compute order
  std::vector<int> pulled_order_;
  bool have_forward_ = false;
  // Topology: node of every EP rank, this rank's node, its index there, ranks per node.
  std::vector<int> node_of_, node_ranks_, order_;
  int my_node_ = 0, local_rank_ = 0, m_ = 1;
  std::vector<int> ext_;      // external experts (other nodes), ascending
  std::vector<int> ext_idx_;  // expert -> index in ext_, -1 if internal
  // Hierarchical: node communicator, shared cache (per local rank: ceil(n_ext/m) cached
  // experts, then n_ext gradient slots), experts the node uses, reduced gradient scratch.
  std::unique_ptr<Communicator> node_comm_;
  std::unique_ptr<SharedWindow> node_win_;
  size_t ext_slots_ = 0;
  std::vector<int> node_used_;
  std::vector<std::vector<float>> node_grad_;
  bool hier_ = false;
  // pcie_pairing: staging slots allocated (n_ext per local rank, after the gradient slots),
  // pairing active on this node (uniform), this rank's pair peer (local rank, -1: none).
  bool staging_ = false, pairing_ = false;
  int pair_peer_local_ = -1;
  std::vector<DataCentricCopy> copy_order_;
  // Prefetch state (begin_iteration -> forward).
  std::vector<std::unique_ptr<Prefetched>> prefetch_;
  std::vector<int> prefetch_order_, forward_issued_;
  bool hier_prefetched_ = false;
  DataCentricStats stats_;
};

std::unique_ptr<MoeStrategy> make_data_centric();

}  // namespace moebench
