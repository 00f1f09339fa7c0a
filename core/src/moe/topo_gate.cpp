// FasterMoE §4.3's topology-aware gate; the decisions are in moe/topo_gate.h.
#include "moebench/moe/topo_gate.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "moebench/config/config.h"
#include "moebench/moe/router.h"
#include "moebench/perf/cluster_model.h"

namespace moebench {

int TopoGate::expert_node(int e, int E) const {
  const int P = (int)ep_node.size();
  if (P == 0 || E % P != 0)
    throw std::invalid_argument("topo_gate: " + std::to_string(E) + " experts do not split over " +
                                std::to_string(P) + " EP ranks");
  return ep_node.at((size_t)(e / (E / P)));
}

bool TopoGate::single_node() const {
  return std::all_of(ep_node.begin(), ep_node.end(), [this](int n) { return n == my_node; });
}

int topo_gate_cap(double rho, int N, int K) {
  if (!(rho >= 0.0) || !std::isfinite(rho))
    throw std::invalid_argument("topo_gate: the cap ratio rho must be finite and >= 0, got " + std::to_string(rho));
  const double all = (double)N * K;
  if (rho >= 1.0) return (int)all;
  return (int)std::min(all, std::floor(rho * all * (1.0 + 1e-9)));
}

TopoGateStats apply_topo_gate(Routing& r, const TopoGate& gate) {
  const int N = r.N, E = r.E, K = r.K;
  TopoGateStats st;
  st.cap = topo_gate_cap(gate.rho, N, K);
  if (std::find(gate.ep_node.begin(), gate.ep_node.end(), gate.my_node) == gate.ep_node.end())
    throw std::invalid_argument("topo_gate: node " + std::to_string(gate.my_node) + " holds no EP rank");
  std::vector<int> node(E);
  std::vector<int> local;  // this node's experts, ascending
  for (int e = 0; e < E; ++e) {
    node[e] = gate.expert_node(e, E);
    if (node[e] == gate.my_node) local.push_back(e);
  }
  std::vector<int> remote;  // slots n*K+k, ascending
  for (int i = 0; i < N * K; ++i)
    if (node[r.expert[i]] != gate.my_node) remote.push_back(i);
  st.remote_before = st.remote_after = (int)remote.size();
  if ((int)remote.size() <= st.cap) return st;

  // §4.3: the L remote assignments with the highest score go; ties by slot (token, then k).
  auto prob = [&](int i) { return r.probs[(size_t)(i / K) * E + r.expert[i]]; };
  std::stable_sort(remote.begin(), remote.end(), [&](int a, int b) { return prob(a) > prob(b); });
  std::vector<uint8_t> moves((size_t)N * K, 0);
  for (size_t j = st.cap; j < remote.size(); ++j) moves[remote[j]] = 1;

  // The rest re-select within the node, token by token, k in order.
  for (int i = 0; i < N * K; ++i) {
    if (!moves[i]) continue;
    const int n = i / K;
    const float* p = r.probs.data() + (size_t)n * E;
    const int* chosen = r.expert.data() + (size_t)n * K;
    int best = -1;
    for (int e : local) {
      if (std::find(chosen, chosen + K, e) != chosen + K) continue;
      if (best < 0 || p[e] > p[best]) best = e;
    }
    if (best < 0) {
      ++st.over_cap;  // no unchosen expert on this node: the choice stays remote
      continue;
    }
    r.expert[i] = best;
    ++st.moved;
  }
  st.remote_after = st.remote_before - st.moved;
  return st;
}

double topo_gate_rho(const ClusterModel& cluster, int ranks_on_node) {
  if (ranks_on_node < 1) throw std::invalid_argument("topo_gate: a node with no EP rank");
  const double net = cluster.link(ClusterLink::inter_node).bandwidth;
  const double local = cluster.link(ClusterLink::intra_node).bandwidth;
  return net / ((double)ranks_on_node * local);
}

TopoGate make_topo_gate(const ClusterModel& cluster, const std::vector<int>& ep_world, int ep_rank) {
  if (ep_rank < 0 || ep_rank >= (int)ep_world.size())
    throw std::invalid_argument("topo_gate: EP rank " + std::to_string(ep_rank) + " outside a group of " +
                                std::to_string(ep_world.size()));
  TopoGate g;
  for (int w : ep_world) g.ep_node.push_back(cluster.node_of(w));
  g.my_node = g.ep_node[ep_rank];
  g.rho = topo_gate_rho(cluster, (int)std::count(g.ep_node.begin(), g.ep_node.end(), g.my_node));
  return g;
}

std::optional<TopoGate> topo_gate_for(const Config& cfg, const ClusterModel& cluster, const std::vector<int>& ep_world,
                                      int ep_rank) {
  if (cfg.strategy.name != "fastermoe" || !cfg.strategy.fastermoe.topo_gate) return std::nullopt;
  return make_topo_gate(cluster, ep_world, ep_rank);
}

std::string topo_gate_note(const Config& cfg) {
  if (cfg.strategy.name != "fastermoe" || !cfg.strategy.fastermoe.topo_gate) return "";
  if (cfg.cluster.nodes <= 1) return "fastermoe: topo_gate on a single node (cluster.nodes = 1) changes nothing";
  // EP groups (dist/process_groups.h): runs of `ep` consecutive DP ranks of one TP rank and
  // stage; world rank = stage * dp * tp + dp_rank * tp + tp_rank; node = rank / per_node.
  const int ranks = cfg.run.ranks, tp = std::max(1, cfg.parallel.tp), pp = std::max(1, cfg.parallel.pp);
  const int dp = cfg.parallel.dp > 0 ? cfg.parallel.dp : ranks / (tp * pp);
  const int ep = cfg.parallel.ep > 0 ? cfg.parallel.ep : dp;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : ranks / cfg.cluster.nodes;
  if (dp < 1 || ep < 1 || per_node < 1) return "";
  for (int stage = 0; stage < pp; ++stage)
    for (int t = 0; t < tp; ++t)
      for (int first = 0; first + ep <= dp; first += ep) {
        std::set<int> nodes;
        for (int i = first; i < first + ep; ++i) nodes.insert((stage * dp * tp + i * tp + t) / per_node);
        if (nodes.size() > 1) return "";
      }
  return "fastermoe: topo_gate with every expert-parallel group inside one node (parallel.ep = " + std::to_string(ep) +
         ", " + std::to_string(per_node) + " ranks per node) changes nothing";
}

}  // namespace moebench
