// data_centric's topology side: the nodes of the EP group, the pull order, the external
// experts, and (hierarchical) the node-shared cache with its gradient and staging slots and
// the PCIe-pair copies (strategies/data_centric.h).
#include "data_centric_detail.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "moebench/dist/communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/strategies/janus_order.h"

namespace moebench {

using data_centric_detail::check_contiguous;
using data_centric_detail::phase;
using data_centric_detail::view;

// Node of every EP rank (from ctx.topology; one node without it), the pull order, the
// external experts and, when hierarchical, the node communicator and shared cache (collective
// over ctx.ep the first time).
void DataCentric::setup_nodes(MoeContext& ctx) {
  Communicator& ep = *ctx.ep;
  node_of_.assign(P_, 0);
  if (ctx.topology)
    for (int p = 0; p < P_; ++p) {
      const int w = ep.world_rank(p);
      node_of_[p] = w < ctx.topology->world_size() ? ctx.topology->node_of(w) : 0;
    }
  my_node_ = node_of_[me_];
  node_ranks_.clear();
  for (int p = 0; p < P_; ++p)
    if (node_of_[p] == my_node_) node_ranks_.push_back(p);
  m_ = (int)node_ranks_.size();
  local_rank_ = (int)(std::find(node_ranks_.begin(), node_ranks_.end(), me_) - node_ranks_.begin());
  order_ = janus_expert_order(me_, node_of_, L_, opts_.priority);
  ext_.clear();
  ext_idx_.assign(E_, -1);
  for (int e = 0; e < E_; ++e)
    if (node_of_[e / L_] != my_node_) ext_idx_[e] = (int)ext_.size(), ext_.push_back(e);
  hier_ = opts_.hierarchical && !ext_.empty();
  // pcie_pairing: this rank's pair peer (local rank on this node), -1 when not listed.
  pair_peer_local_ = -1;
  {
    const auto& pairs = ctx.pcie_switch_pairs;
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
      int peer = -1;
      if (pairs[i] == local_rank_) peer = pairs[i + 1];
      else if (pairs[i + 1] == local_rank_) peer = pairs[i];
      if (peer >= 0) {
        if (peer < m_ && peer != local_rank_) pair_peer_local_ = peer;
        break;
      }
    }
  }
  if (!hier_ || node_win_) {
    pairing_ = hier_ && opts_.pcie_pairing && staging_;
    return;
  }
  staging_ = opts_.pcie_pairing;
  pairing_ = staging_;
  node_comm_ = ep.split(my_node_, me_);
  if (!node_comm_ || node_comm_->size() != m_ || node_comm_->rank() != local_rank_)
    throw std::logic_error("data_centric: node communicator does not match the topology");
  ext_slots_ = (ext_.size() + m_ - 1) / m_;
  node_win_ = node_comm_->create_shared_window((ext_slots_ + ext_.size() * (staging_ ? 2 : 1)) * expert_floats_ *
                                               sizeof(float));
  if (node_win_->local_size() != m_ || node_win_->local_rank() != local_rank_)
    throw std::runtime_error("data_centric: hierarchical mode needs each node's ranks to share memory (" +
                             std::to_string(node_win_->local_size()) + " sharing, node has " +
                             std::to_string(m_) + ")");
}

float* DataCentric::ext_cache(int j) {
  return static_cast<float*>(node_win_->segment(j % m_)) + (size_t)(j / m_) * expert_floats_;
}
float* DataCentric::ext_grad(int local, int j) {
  return static_cast<float*>(node_win_->segment(local)) + (ext_slots_ + (size_t)j) * expert_floats_;
}

float* DataCentric::ext_stage(int local, int j) {
  return static_cast<float*>(node_win_->segment(local)) + (ext_slots_ + ext_.size() + (size_t)j) * expert_floats_;
}

// pcie_pairing (Fig. 9): called by every rank of the node once the node cache holds every
// external expert the node uses; used_rows[k * n_ext + j] = 1 when local rank k uses ext_[j].
void DataCentric::pair_copies(MoeContext& ctx, const std::vector<int>& used_rows) {
  const size_t n_ext = ext_.size();
  int node_count = 0;
  for (size_t j = 0; j < n_ext; ++j) node_count += node_used_[j] ? 1 : 0;
  const int rounds = (node_count + 1) / 2;  // no pair's group is larger (same on every node rank)
  const int peer = pair_peer_local_;
  std::vector<int> own, theirs;  // indices into ext_, in round order
  if (peer >= 0) {
    int pos = 0;
    const bool lower = local_rank_ < peer;
    for (size_t j = 0; j < n_ext; ++j) {
      if (!used_rows[(size_t)local_rank_ * n_ext + j] && !used_rows[(size_t)peer * n_ext + j]) continue;
      ((pos % 2 == 0) == lower ? own : theirs).push_back((int)j);
      ++pos;
    }
  }
  std::vector<Slot*> by_j(n_ext, nullptr);
  for (auto& s : slots_)
    if (s->node_cached) by_j[s->ext] = s.get();
  const int peer_world = peer >= 0 ? ctx.ep->world_rank(node_ranks_[peer]) : -1;
  const uint64_t expert_bytes = expert_floats_ * sizeof(float);
  for (int t = 0; t < rounds; ++t) {
    if (t < (int)own.size()) {
      const int j = own[t], e = ext_[j];
      TaskCost cost;
      phase(ctx, "janus.cache_copy", TaskCategory::copy, cost, e, -1, [&] {
        std::copy(ext_cache(j), ext_cache(j) + expert_floats_, ext_stage(local_rank_, j));
      });
      if (Slot* s = by_j[j]) s->params = view(ext_stage(local_rank_, j), C_, F_);
      ++stats_.cache_copies;
      copy_order_.push_back({e, false});
    }
    phase(ctx, "janus.sync", TaskCategory::comm, {}, -1, -1, [&] { node_win_->sync(); });
    if (t < (int)theirs.size() && by_j[theirs[t]]) {
      const int j = theirs[t], e = ext_[j];
      Slot* s = by_j[j];
      TaskCost cost;
      cost.bytes_to_peer.push_back({peer_world, expert_bytes});
      phase(ctx, "janus.peer_copy", TaskCategory::copy, cost, e, peer_world, [&] {
        const float* src = ext_stage(peer, j);
        s->cache.assign(src, src + expert_floats_);
      });
      s->params = view(s->cache.data(), C_, F_);
      ++stats_.peer_copies;
      copy_order_.push_back({e, true});
    }
  }
}

}  // namespace moebench
