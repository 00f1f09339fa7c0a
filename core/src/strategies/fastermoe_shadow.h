#pragma once
// fastermoe's dynamic shadowing (FasterMoE §4.1), private to strategies/: the state of one pass
// (which experts are shadowed, this rank's rows of them, the broadcast copies and their
// gradients) and the tasks that move and compute them beside the exchange
// (strategies/fastermoe.cpp).
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "moebench/moe/row_ops.h"
#include "moebench/strategies/token_exchange.h"

namespace moebench {

struct ShadowState : TransferState {
  int groups = 1;                 // smart's pairwise-exchange groups (chunks of the exchange)
  std::vector<int> experts;       // shadowed this pass, ascending
  std::vector<uint8_t> shadowed;  // [E]
  bool predicted = false;         // eq. 1 / eq. 2 of this pass (with a cluster model)
  double comp_seconds = 0, comm_seconds = 0;

  // This rank's slot rows of each shadowed expert (first slot, rows) and their offsets in the
  // gathered buffers; filled by place_rows.
  std::vector<std::pair<long, long>> rows;
  std::vector<int> offsets;  // [experts.size() + 1]
  int C = 0, F = 0, per_rank = 1;  // per_rank: experts an EP rank owns

  // Graphs with buffers, in the block's memory (MoeContext::row_ops): the shadowed experts'
  // broadcast copies, w1|b1|w2|b2 each, one after another, and their gradients; this rank's
  // shadowed rows, gathered; the experts' compute.
  RowArray params, grads;
  RowArray x, y, dy, dx;
  std::unique_ptr<ExpertCompute> bank;

  void place_rows(const ExchangeCounts& counts, const MoeContext& ctx);
  int owner(int expert) const { return expert / per_rank; }
};

// Forward: per shadowed expert a broadcast from its owner over the EP group
// (moe.shadow.broadcast, comm), then one compute task over this rank's rows of all of them
// (moe.shadow.experts), writing y. Returns the compute task.
TaskId add_shadow_forward(TaskGraph& g, ShadowState& st, const std::vector<TaskId>& after, const MoeBuffers* buffers,
                          MoeContext& ctx);
// Backward: this rank's rows of the shadowed experts (moe.shadow.experts_backward): dxg and
// each copy's gradient from dy. Returns the task.
TaskId add_shadow_backward(TaskGraph& g, ShadowState& st, const std::vector<TaskId>& after, const MoeBuffers* buffers,
                           MoeContext& ctx);
// Then per shadowed expert the sum of the gradients over the EP group to its owner
// (moe.shadow.reduce, a binomial-tree reduce) and there their addition to its own gradient (moe.shadow.accumulate, on the
// compute stream, after the owner's expert tasks). Returns the pass's last tasks.
std::vector<TaskId> add_shadow_reduce(TaskGraph& g, ShadowState& st, TaskId computed, bool act, MoeContext& ctx);

}  // namespace moebench
