// data_centric's topology side: the nodes of the EP group, the pull order, the external
// experts, and (hierarchical) the node-shared cache with its gradient and staging slots, the
// node's used experts and the PCIe-pair copies, as tasks (strategies/data_centric.h).
#include "data_centric_detail.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "moebench/dist/communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/janus_order.h"

namespace moebench {

using data_centric_detail::view;

// Node of every EP rank (from ctx.topology and ctx.ep_world; one node without a topology),
// the pull order, the external experts and the pair peer. Pure: no communicator needed.
void DataCentric::setup_topology(const MoeContext& ctx) {
  node_of_.assign(P_, 0);
  if (ctx.topology)
    for (int p = 0; p < P_; ++p) {
      const int w = p < (int)ctx.ep_world.size() ? ctx.ep_world[(size_t)p] : p;
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
  static const std::vector<int> none;
  const std::vector<int>& pairs = ctx.cluster ? ctx.cluster->spec().pcie_switch_pairs : none;
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

// Hierarchical, first call: the node communicator and the node-shared cache (collective over
// ctx.ep, on the main thread). pcie_pairing's staging slots exist only when it is on now.
void DataCentric::ensure_node_cache(MoeContext& ctx) {
  if (!hier_ || node_win_) return;
  staging_ = opts_.pcie_pairing;
  node_comm_ = ctx.ep->split(my_node_, me_);  // the counts (host)
  node_data_comm_ = ctx.rows_communicator(*node_comm_, "data_centric.node");  // the cache (the experts' memory)
  for (const auto* c : {node_comm_.get(), node_data_comm_.get()})
    if (!c || c->size() != m_ || c->rank() != local_rank_)
      throw std::logic_error("data_centric: node communicator does not match the topology");
  ext_slots_ = (ext_.size() + m_ - 1) / m_;
  node_win_ = node_data_comm_->create_shared_window((ext_slots_ + ext_.size() * (staging_ ? 2 : 1)) * expert_floats_ *
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

// The node's counts rows (this rank's included) over the node communicator: the block
// exchanges no counts for data_centric (data_centric.h, hierarchical).
void DataCentric::gather_node_counts(std::vector<long>& rows) {
  std::vector<long> node_rows((size_t)m_ * E_);
  node_comm_->all_gather(rows.data() + (size_t)me_ * E_, node_rows.data(), (size_t)E_, DType::i64);
  for (int k = 0; k < m_; ++k)
    std::copy(node_rows.begin() + (long)k * E_, node_rows.begin() + (long)(k + 1) * E_,
              rows.begin() + (long)node_ranks_[k] * E_);
}

// The external experts the node uses, this rank's share of them and, with pairing, the
// pair's groups: the union of both ranks' used external experts, ascending, split by
// position (even -> the pair's lower local rank, odd -> the higher).
void DataCentric::plan_node(Pass& p, const std::vector<long>& rows) const {
  const size_t n_ext = ext_.size();
  auto uses = [&](int local, size_t j) { return rows[(size_t)node_ranks_[local] * E_ + ext_[j]] > 0; };
  p.node_used.assign(n_ext, 0);
  int node_count = 0;
  for (size_t j = 0; j < n_ext; ++j) {
    for (int k = 0; k < m_; ++k) p.node_used[j] = p.node_used[j] || uses(k, j);
    node_count += p.node_used[j];
    if ((int)j % m_ == local_rank_ && p.node_used[j]) p.node_share.push_back((int)j);
  }
  if (!pairing_) return;
  p.rounds = (node_count + 1) / 2;  // no pair's group is larger (same on every node rank)
  const int peer = pair_peer_local_;
  if (peer < 0) return;
  p.peer_rank = node_ranks_[peer];
  int pos = 0;
  const bool lower = local_rank_ < peer;
  for (size_t j = 0; j < n_ext; ++j) {
    if (!uses(local_rank_, j) && !uses(peer, j)) continue;
    ((pos % 2 == 0) == lower ? p.own : p.theirs).push_back((int)j);
    ++pos;
  }
}

// This rank's share of the node cache: one get + flush per node-used external expert it
// owns the slot of (flush only when the iteration start issued the get).
std::vector<TaskId> DataCentric::build_node_pulls(Builder& b, Pass& p, TaskId sync) {
  const uint64_t expert_bytes = expert_floats_ * sizeof(float);  // in memory
  const uint64_t wire_bytes = expert_floats_ * (uint64_t)b.ctx.wire_element_bytes;
  Window* win = params_win_.get();
  std::vector<TaskId> pulls;
  for (int j : p.node_share) {
    const int e = ext_[(size_t)j], owner = e / L_;
    const size_t off = (size_t)(e - owner * L_) * expert_bytes;
    float* dst = b.act ? ext_cache(j) : nullptr;
    const bool issued = p.node_issued;
    const size_t ef = expert_floats_;
    const bool staged = p.node_prefetched && p.prefetch_task.valid();  // moved by janus.prefetch
    pulls.push_back(b.comm("janus.pull_node", Transfer::get, e, b.ctx.ep_world[(size_t)owner], staged ? 0 : wire_bytes,
                           staged ? std::vector<TaskId>{sync, p.prefetch_task} : std::vector<TaskId>{sync},
                           [win, dst, ef, owner, off, issued] {
                             if (!issued) win->get(dst, ef, owner, off);
                             win->flush(owner);
                           }));
    if (b.act && !issued) {
      ++stats_.node_pulls;
      ++stats_.pulls;
      stats_.bytes_pulled += expert_bytes;
      forward_issued_.push_back(e);
    }
  }
  return pulls;
}

// Node sync (every external expert the node uses is in the cache), then with pairing the
// rounds of Fig. 9: own group's t-th expert node cache -> own staging slot, node sync, the
// peer's t-th expert peer's staging slot -> private copy when this rank uses it.
std::vector<TaskId> DataCentric::build_node_ready(Builder& b, Pass& p, const std::vector<TaskId>& node_pulls) {
  const size_t n_ext = ext_.size(), ef = expert_floats_;
  const uint64_t wire_bytes = ef * (uint64_t)b.ctx.wire_element_bytes;  // the copies' cost
  SharedWindow* node = node_win_.get();
  const TaskId filled = b.collective("janus.node_sync", node_pulls, [node] { node->sync(); }, true);
  std::vector<TaskId> ready(n_ext, filled);
  std::vector<Slot*> by_j(n_ext, nullptr);
  for (Slot* s : p.cached) by_j[(size_t)s->ext] = s;
  if (b.act)
    for (Slot* s : p.cached) s->params = view(ext_cache(s->ext), C_, F_);
  const int local = local_rank_, peer = pair_peer_local_;
  for (int t = 0; t < p.rounds; ++t) {
    TaskId copied{};
    if (t < (int)p.own.size()) {
      const int j = p.own[(size_t)t], e = ext_[(size_t)j];
      const float* src = b.act ? ext_cache(j) : nullptr;
      float* dst = b.act ? ext_stage(local, j) : nullptr;
      RowOps* ops = ops_;
      copied = b.copy("janus.cache_copy", e, -1, wire_bytes, {b.last_collective},
                      [ops, src, dst, ef] { ops->copy(dst, src, (long)ef); });
      ready[(size_t)j] = copied;
      if (b.act) {
        if (Slot* s = by_j[(size_t)j]) s->params = view(dst, C_, F_);
        ++stats_.cache_copies;
        copy_order_.push_back({e, false});
      }
    }
    const TaskId round = b.collective("janus.node_sync", {copied}, [node] { node->sync(); }, true);
    if (t < (int)p.theirs.size() && by_j[(size_t)p.theirs[(size_t)t]]) {
      const int j = p.theirs[(size_t)t], e = ext_[(size_t)j];
      Slot& s = *by_j[(size_t)j];
      const float* src = b.act ? ext_stage(peer, j) : nullptr;
      if (b.act) {
        s.params = view(s.cache.resize(*ops_, (long)ef), C_, F_);
        ++stats_.peer_copies;
        copy_order_.push_back({e, true});
      }
      RowOps* ops = ops_;
      ready[(size_t)j] = b.copy("janus.peer_copy", e, b.ctx.ep_world[(size_t)p.peer_rank], wire_bytes, {round},
                                [ops, src, &s, ef] { ops->copy(s.cache.data(), src, (long)ef); });
    }
  }
  return ready;
}

TaskId DataCentric::build_node_sync_backward(Builder& b, const std::vector<TaskId>& cached_done) {
  SharedWindow* node = node_win_.get();
  return b.collective("janus.node_sync", cached_done, [node] { node->sync(); }, true);
}

// Per expert of this rank's share: the m local ranks' gradient slots summed in local-rank
// order (deterministic), then one accumulate into the owner after the gradient barrier.
void DataCentric::build_node_push(Builder& b, Pass& p, TaskId node_sync, TaskId barrier, std::vector<TaskId>& pushes) {
  const size_t ef = expert_floats_;
  const uint64_t expert_bytes = ef * sizeof(float);  // in memory
  const uint64_t wire_bytes = ef * (uint64_t)b.ctx.wire_element_bytes;
  Window* win = grads_win_.get();
  p.node_grad.resize(p.node_share.size());
  for (size_t i = 0; i < p.node_share.size(); ++i) {
    const int j = p.node_share[i], e = ext_[(size_t)j], owner = e / L_;
    RowArray& sum = p.node_grad[i];
    std::vector<const float*> slots;
    if (b.act) {
      sum.resize(*ops_, (long)ef);
      for (int k = 0; k < m_; ++k) slots.push_back(ext_grad(k, j));
    }
    RowOps* ops = ops_;
    const TaskId reduced = b.compute("janus.node_reduce", e, (double)(m_ - 1) * ef, {node_sync}, [ops, &sum, slots, ef] {
      ops->copy(sum.data(), slots[0], (long)ef);
      for (size_t k = 1; k < slots.size(); ++k) ops->add(sum.data(), slots[k], (long)ef);  // local rank 0, 1, ..., m-1
    });
    const size_t off = (size_t)(e - owner * L_) * expert_bytes;
    pushes.push_back(b.comm("janus.push_grad", Transfer::put, e, b.ctx.ep_world[(size_t)owner], wire_bytes, {barrier, reduced},
                            [win, &sum, ef, owner, off] {
                              win->accumulate(sum.data(), ef, owner, off, ReduceOp::sum);
                            }));
    if (b.act) {
      ++stats_.pushes;
      ++stats_.node_pushes;
      stats_.bytes_pushed += expert_bytes;
    }
  }
}

}  // namespace moebench
