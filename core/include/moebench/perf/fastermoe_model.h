#pragma once
// FasterMoE's performance model (He et al., PPoPP '22, fastermoe-ppopp22.txt §3.1-3.2, §4.1) as
// plain functions: load-aware computation (eq. 1), topology-aware communication over the
// directed links of a ClusterNetwork (eq. 2, with the paper's all-to-all-v, ring all-reduce and
// ring broadcast / reduce traffic), and dynamic shadowing (eq. 7-10, Algorithm 1). Everything
// returned is "predicted". Units SI: seconds, bytes, bytes/s, FLOP/s. H = hidden size (C in
// our code), F = the expert FFN width (alpha H in the paper, so alpha H^2 = H F).
#include <vector>

#include "moebench/perf/cluster_network.h"

namespace moebench {

// eq. 1: Lat_comp = max over workers w of 4 B_w H F / P_w, where B_w = tokens (rows) worker w
// computes and P_w its rate on `cluster`: cluster.compute_seconds(4 B_w H F) (the device rate
// with the efficiency curve, so the max is taken over seconds, not over loads).
// tokens_per_worker[i] is the load of worker i (devices share one rate, so which world rank
// it is does not matter; more workers than the cluster's devices is an error).
double fastermoe_comp_seconds(const std::vector<double>& tokens_per_worker, double H, double F,
                              const ClusterModel& cluster);

// eq. 2: traffic accumulated per directed link of a ClusterNetwork (a flow a->b adds its bytes
// to every link of net.route(a, b)); seconds() = max over links of T_l / W_l. No latency and
// no contention order: the paper's model (LogP overhead neglected, links fully used).
class LinkTraffic {
 public:
  explicit LinkTraffic(const ClusterNetwork& net);  // keeps its own copy of `net`
  void add(int a, int b, double bytes);  // world ranks; a == b adds nothing
  // All-to-all-v: bytes[i * n + j] from ranks[i] to ranks[j] (n = ranks.size()), every pair at once.
  void add_all_to_all_v(const std::vector<int>& ranks, const std::vector<double>& bytes);
  // Ring all-reduce of S bytes per rank (§3.2): each rank sends 2 (n-1)/n S to the next in `ranks` order.
  void add_ring_all_reduce(const std::vector<int>& ranks, double S);
  // Pipelined ring broadcast from ranks[root] / reduce to ranks[root] (§3.2: S through each
  // link): S on each of the n-1 ring hops, both in `ranks` order (as NCCL's rings run).
  // Broadcast: root -> root+1 -> ... -> root-1 (nothing on the hop into the root).
  // Reduce:    root+1 -> root+2 -> ... -> root (nothing on the hop out of the root).
  void add_ring_broadcast(const std::vector<int>& ranks, int root, double S);
  void add_ring_reduce(const std::vector<int>& ranks, int root, double S);
  double seconds() const;                    // eq. 2 (0 with no traffic)
  int busiest_link() const;                  // link id of the max (ties: lowest id), -1 with no traffic
  const std::vector<double>& bytes() const;  // per link id

 private:
  void add_ring_chain(const std::vector<int>& ranks, int first, double S, const char* what);
  ClusterNetwork net_;
  std::vector<double> bytes_;
};

// §4.1, dynamic shadowing. T[s * E + e] = tokens (rows) EP rank s sends to expert e; experts are
// owned in contiguous blocks: owner(e) = e / (E / P). flops = P (device FLOP/s), w_net = the
// network bandwidth a worker gets, bytes/s; bytes_per_element: 4 (the runtime's fp32 rows) or 2 (a
// prediction for a workload in fp16 / bf16: MoeContext::wire_element_bytes).
struct ShadowModel {
  int P = 1, E = 1;
  std::vector<double> T;
  double H = 0, F = 0;
  double flops = 0, w_net = 0;
  double bytes_per_element = 4;
  int max_shadows = -1;  // the memory budget's limit; -1 = no limit
};
std::vector<double> worker_loads(const ShadowModel& m);  // B_w = sum_s T[s][experts of w]
// eq. 7 at the busiest worker's load (both terms grow with B_w, so the max over w is there):
// 3 x 4 B H F / P + 4 B H bytes_per_element / w_net
double lat_imbl(double B_max, const ShadowModel& m);
// eq. 8: 3 x 4 B' H F / P + 2 r x (2 H F bytes_per_element) / w_net. As in the paper, no term
// for the tokens of experts that stay unshadowed.
double lat_shadow(int r, double B_max_after, const ShadowModel& m);
// eq. 9 and eq. 10 (r shadows, loads before/after); the paper says shadowing pays when either
// holds. Units: loads in tokens, F in parameter elements per token of H (r H F elements of
// parameters against B H elements of activations), P / W_net with W_net in elements/s
// (w_net / bytes_per_element). How they follow from eq. 8 < eq. 7: see fastermoe_model.cpp.
bool shadow_condition_9(int r, double B_max, const ShadowModel& m);   // B_max > r F
// 3 (B_max - B_max_after) F / (r F - B_max) > P / W, evaluated multiplied by (r F - B_max) so
// it is defined at r F = B_max and never flips where r F < B_max (there it equals eq. 8 < eq. 7).
bool shadow_condition_10(int r, double B_max, double B_max_after, const ShadowModel& m);
// Algorithm 1 generalised to several experts per worker: candidates are experts in descending
// order of their total tokens (ties: lower index first); shadowing expert e moves every T[s][e]
// with s != owner(e) from the owner's load to s's load; c = lat_shadow(|Es|+1, max load); keep
// it when c < c_min (then c_min = c), else stop (the paper returns at the first expert that
// does not pay). At most max_shadows experts. The paper's listing (one expert per worker,
// line 6 "B_i <- T_ii") is the special case E == P.
struct ShadowSelection {
  std::vector<int> experts;                  // in selection order
  std::vector<double> loads_before, loads_after;
  double seconds_before = 0, seconds_after = 0;  // lat_imbl(max before), c_min at the end
};
ShadowSelection select_shadow_experts(const ShadowModel& m);

// Algorithm 1 on the topology-aware model (§3.1-3.2), what the fastermoe strategy runs: the same
// candidates, order and stop, with the latency of a shadow set S
//   3 Lat_comp (eq. 1 on the loads with S computed where their tokens are, the cluster's rate)
//   + 4 Lat_comm (eq. 2: the all-to-all of the tokens of experts outside S over the cluster's
//     directed links)
//   + eq. 2 of S's parameter traffic: per shadowed expert a ring broadcast of its 2 H F elements
//     from its owner and a ring reduce of their gradients to it (§3.2), one LinkTraffic.
// Eq. 7-8 charge every token of the busiest worker at one bandwidth and none after shadowing, so
// they shadow under balanced routing and count node-local tokens as if they crossed the network;
// FastMoE's own policy keeps the 4 B H term at the new load. ranks[i] = the world rank of EP rank
// i on net's cluster; m.flops and m.w_net are not used (the cluster's rates are).
// seconds_before / seconds_after: this latency without shadows / of the set chosen.
ShadowSelection select_shadow_experts(const ShadowModel& m, const ClusterNetwork& net, const std::vector<int>& ranks);

}  // namespace moebench
