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

namespace {

// A draw in [0, 1) per (key, token, expert): splitmix64 of the three.
double stand_in_draw(uint64_t key, uint64_t token, uint64_t e) {
  uint64_t z = key ^ (token * 0x9E3779B97F4A7C15ull) ^ (e * 0xD1B54A32D192ED03ull);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-53;
}

}  // namespace

TopoGateStats apply_topo_gate_to_choice(std::vector<int>& expert, int N, int K, int E, const TopoGate& gate,
                                        uint64_t key, long first_token) {
  if ((long)expert.size() != (long)N * K)
    throw std::invalid_argument("topo_gate: a choice of " + std::to_string(expert.size()) + " slots for " +
                                std::to_string(N) + " tokens x top-" + std::to_string(K));
  Routing r;
  r.N = N;
  r.E = E;
  r.K = K;
  r.expert = std::move(expert);
  r.probs.resize((size_t)N * E);
  for (int n = 0; n < N; ++n) {
    float* p = r.probs.data() + (size_t)n * E;
    for (int e = 0; e < E; ++e) p[e] = (float)(0.5 * stand_in_draw(key, (uint64_t)(first_token + n), (uint64_t)e));
    for (int k = 0; k < K; ++k) p[r.expert[(size_t)n * K + k]] += 0.5f;
  }
  const TopoGateStats st = apply_topo_gate(r, gate);
  expert = std::move(r.expert);
  return st;
}

}  // namespace moebench
