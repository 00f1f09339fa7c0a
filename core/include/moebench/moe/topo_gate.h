#pragma once
// FasterMoE's topology-aware gate (Zhai et al., PPoPP'22, §4.3) as a router gate policy
// (GatePolicy, moe/router.h). On a tree topology a node's NIC carries about M
// times one worker's all-to-all traffic, so at most L = W_net / (M W_local) x B of a rank's
// assignments may go to experts on another node; the others re-select among the experts of
// the rank's own node by router score. Plain functions; fastermoe's blocks apply the policy
// with [strategy.fastermoe] topo_gate (MoeStrategy::choice_policy, strategies/fastermoe_gate.h).
//
// Decisions recorded here:
// - B (the paper's tokens of a worker, one choice each) is read as the rank's N*K assignments
//   under top-k: L = floor(rho * N * K), rho = W_net / (M * W_local), clamped to [0, N*K]
//   (floor with a relative slack of 1e-9, so 0.3 * 10 gives 3). rho >= 1 changes nothing.
//   W_net = the cluster's inter_node link bandwidth (per NIC), W_local = its intra_node link
//   bandwidth, M = the EP ranks on this rank's node.
// - Node of an expert: expert e belongs to EP rank e / (E / P) (P = ep_node.size()), on that
//   rank's node.
// - When more than L assignments chose a remote expert, the L with the highest router
//   probability keep it (ties: lower token index, then lower k). Each other one, in token
//   order and within a token in k order, re-selects the highest-probability expert of this
//   rank's node that the token has not chosen (its current choices, earlier re-selections
//   included; ties: lower expert index). It stays in its slot k, so GShard capacity priority
//   follows the rank of the choice it replaces (a token's slots are then not necessarily in
//   descending probability).
// - If the node has no unchosen expert left (K >= the node's experts), the original remote
//   choice stays: that assignment goes beyond L (TopoGateStats::over_cap).
// - Gate weights, f_e, capacity: the router computes them after the policy, so the gate is the
//   final expert's probability (renormalised over the token's k choices with gate_normalize,
//   as for a top-k choice), the aux loss's f_e counts the final selections (what the experts
//   receive; P_e is over all probabilities as before), and capacity drops among the final
//   choices.
// - Forced (synthetic) routing: the policy applies to forced choices too, ranked by the
//   router's probability of the forced expert. Synthetic routing stands in for the best-fit
//   choice; the gate is the system's policy on top of it (a hot expert on another node is
//   capped like a learned one).
// - Backward: the router backward reads Routing::expert / gate, which hold the final choice; the
//   choice is piecewise constant, so the gradient is exact away from ties (tst_topo_gate).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moebench {

struct Routing;

struct TopoGate {
  std::vector<int> ep_node;  // [P] node of each EP rank, in EP order
  int my_node = 0;           // this rank's node
  double rho = 1.0;          // W_net / (M W_local): the share of N*K that may leave the node

  int expert_node(int e, int E) const;  // node of expert e of E
  bool single_node() const;             // every EP rank on my_node: the policy changes nothing
};

// What one application did.
struct TopoGateStats {
  int cap = 0;            // L
  int remote_before = 0;  // assignments whose choice was on another node
  int remote_after = 0;   // ... after the policy
  int moved = 0;          // re-selected on this node: the inter-node assignments saved
  int over_cap = 0;       // stayed remote beyond L: no unchosen expert left on the node
};

// L = floor(rho * N * K) in [0, N*K] (rho >= 0, finite; else std::invalid_argument).
int topo_gate_cap(double rho, int N, int K);

// Applies the policy to r (r.probs and r.expert filled: as a GatePolicy, moe/router.h).
// Throws std::invalid_argument when E is not a multiple of the EP ranks or my_node is not
// the node of an EP rank.
TopoGateStats apply_topo_gate(Routing& r, const TopoGate& gate);

// The gate on a synthetic choice, where no router runs (the predicted step's routing,
// train/step_graph.cpp): expert [N*K] is rewritten as apply_topo_gate would, ranking by
// stand-in probabilities drawn from `key` and each token's global index (first_token + n): a
// token's chosen experts above its others, each group in a random order. So the L remote
// assignments kept and the node's experts re-selected are random, as a learned router's scores
// would be for tokens routed at random.
TopoGateStats apply_topo_gate_to_choice(std::vector<int>& expert, int N, int K, int E, const TopoGate& gate,
                                        uint64_t key, long first_token);

}  // namespace moebench
