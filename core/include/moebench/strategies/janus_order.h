#pragma once
// Janus' topology-aware pull order (SIGCOMM'23 §5.2, Algorithm 1), as pure functions.
//
// Internal experts (owned by the ranks of this worker's node) are indexed node-locally:
// i = local_rank(owner) * E + j for the owner's j-th expert, E experts per rank, m ranks per
// node. With priority, worker r pulls i over [(r+1)*E, m*E) then [0, r*E) (Algorithm 1),
// i.e. by ascending P_i^r = rank(i) - r if rank(i) > r else rank(i) + m - r, so at any moment
// each owner serves one puller. Without priority every worker pulls in the same (ascending)
// order. External experts (other nodes) come after the internal ones, ascending.
#include <stdexcept>
#include <string>
#include <vector>

namespace moebench {

// P_i^r of Algorithm 1 (smaller = earlier). Throws for i owned by r itself (never pulled).
inline int janus_priority(int i, int local_rank, int per_node, int experts_per_rank) {
  const int owner = i / experts_per_rank;
  if (owner == local_rank) throw std::invalid_argument("janus_priority: expert owned by the puller");
  return owner > local_rank ? owner - local_rank : owner + per_node - local_rank;
}

// Node-local internal expert indices worker `local_rank` pulls, in pull order (own excluded).
inline std::vector<int> janus_pull_order(int local_rank, int per_node, int experts_per_rank, bool priority = true) {
  if (per_node < 1 || experts_per_rank < 1 || local_rank < 0 || local_rank >= per_node)
    throw std::invalid_argument("janus_pull_order: need 0 <= local_rank < per_node, experts_per_rank >= 1 (got r=" +
                                std::to_string(local_rank) + ", m=" + std::to_string(per_node) +
                                ", E=" + std::to_string(experts_per_rank) + ")");
  const int r = local_rank, m = per_node, E = experts_per_rank;
  std::vector<int> order;
  order.reserve((size_t)(m - 1) * E);
  if (priority) {
    for (int i = (r + 1) * E; i < m * E; ++i) order.push_back(i);
    for (int i = 0; i < r * E; ++i) order.push_back(i);
  } else {
    for (int i = 0; i < m * E; ++i)
      if (i / E != r) order.push_back(i);
  }
  return order;
}

// Global expert ids (rank p owns [p*E, p*E+E)) that EP rank `me` does not own, in pull order:
// internal ones by janus_pull_order (node-local index from the owners' order among the EP
// ranks of the node), then external ones ascending. node_of[p]: node of EP rank p.
inline std::vector<int> janus_expert_order(int me, const std::vector<int>& node_of, int experts_per_rank,
                                           bool priority = true) {
  const int P = (int)node_of.size(), E = experts_per_rank;
  if (me < 0 || me >= P) throw std::invalid_argument("janus_expert_order: rank outside node_of");
  std::vector<int> local_ranks;  // EP ranks of my node, ascending
  for (int p = 0; p < P; ++p)
    if (node_of[p] == node_of[me]) local_ranks.push_back(p);
  int r = 0;
  while (local_ranks[r] != me) ++r;
  std::vector<int> order;
  for (int i : janus_pull_order(r, (int)local_ranks.size(), E, priority))
    order.push_back(local_ranks[i / E] * E + i % E);
  for (int p = 0; p < P; ++p)
    if (node_of[p] != node_of[me])
      for (int j = 0; j < E; ++j) order.push_back(p * E + j);
  return order;
}

}  // namespace moebench
