// FasterMoE §4.3's topology-aware gate; the decisions are in moe/topo_gate.h.
#include "moebench/moe/topo_gate.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "moebench/moe/router.h"

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

}  // namespace moebench
