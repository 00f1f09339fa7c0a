#pragma once
// The tasks of an MoE block around its strategy, shared by the runtime (MoeLayer, with
// actions) and by graphs built without buffers (`plan --graph`, the simulator):
//   forward   moe.router (compute: gate, top-k, dispatch order, gather of the slot rows)
//             -> moe.counts (comm: all-gather of the per-expert row counts over the EP group;
//                only for strategies whose layout needs them, MoeStrategy::exchanges_counts)
//             -> the strategy's tasks -> moe.combine (compute: gate-weighted sum)
//             moe.router -> moe.aux_stats (comm: all-reduce of the router's load statistics
//                over the data-parallel group, for the aux loss of the global batch; only when
//                that group has more than one rank), which the pass's end waits for too
//   backward  moe.combine_backward (compute: gate and slot gradients) -> the strategy's
//             tasks -> moe.router_backward (compute: scatter-add into dx, router gradient)
// Blocks with partial outputs (MoeStrategy::partial_outputs, ppmoe: over the EP group; experts
// sliced over the TP group, MoeContext::slice) add after the combine
//   moe.allreduce (comm: ring all-reduce of the N x C output over that group), and after the
//   router backward moe.allreduce_grad (comm: the same for this rank's dx share) ->
//   moe.grad_accumulate (compute: dx += the summed share).
// Costs: router 2NCE flops, combine 2NKC (backward 4NKC); counts a ring all-gather, (P-1) E x 8
// bytes to the ring's next EP rank in P-1 messages; aux_stats a ring all-reduce of 2E+1
// doubles over the DP group (the communicator's collectives as the link emulator paces them);
// N tokens on this rank, C hidden, E experts, K top-k.
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "moebench/moe/moe_strategy.h"

namespace moebench {

struct BlockDims {
  int N = 0, C = 0, E = 0, K = 1;
};

TaskId add_router_task(TaskGraph& g, const MoeContext& ctx, const BlockDims& d, const std::vector<TaskId>& after,
                       std::function<void()> action = {});
// mine: this rank's E counts; all: the P x E matrix (both null: no action).
TaskId add_counts_task(TaskGraph& g, MoeContext& ctx, const BlockDims& d, TaskId after, const long* mine = nullptr,
                       long* all = nullptr);
// After the router, when ctx.stats_size > 1 (else returns an invalid id): action null = none.
TaskId add_aux_stats_task(TaskGraph& g, MoeContext& ctx, const BlockDims& d, TaskId after,
                          std::function<void(Communicator&)> action = {});
// The forward pass's end: `last`, or a join (an unnamed task, no span) of it and aux_stats.
TaskId add_forward_end(TaskGraph& g, TaskId last, TaskId aux_stats);
TaskId add_combine_task(TaskGraph& g, const MoeContext& ctx, const BlockDims& d, MoePass pass,
                        const std::vector<TaskId>& after, std::function<void()> action = {});
TaskId add_router_backward_task(TaskGraph& g, const MoeContext& ctx, const BlockDims& d,
                                const std::vector<TaskId>& after, std::function<void()> action = {});

// The group a block's outputs are partial over: the EP group for ppmoe, the slice group for
// sliced experts; size 1 when the outputs are whole. rank 0 of it takes the aux gradient.
struct PartialGroup {
  int rank = 0, size = 1;
  const std::vector<int>* world = nullptr;
};
PartialGroup partial_group(const MoeStrategy& strategy, const MoeContext& ctx);

// The all-reduce of a partial N x C block output (forward) or input gradient (backward) over
// the partial group: 2 (P-1)/P x N C x 4 bytes to the ring's next rank. data null: no action.
TaskId add_partial_reduce_task(TaskGraph& g, const MoeStrategy& strategy, MoeContext& ctx, const BlockDims& d,
                               MoePass pass, const std::vector<TaskId>& after, float* data = nullptr);
TaskId add_grad_accumulate_task(TaskGraph& g, const MoeContext& ctx, const BlockDims& d,
                                const std::vector<TaskId>& after, std::function<void()> action = {});

// When the strategy asks for it (MoeStrategy::comm_priority), moves the comm tasks
// [from, g.size()) to their roles' priority lanes (GraphTask::priority): MoeLayer before each
// submit, add_block_pass for the step graph.
void prioritise_comm(TaskGraph& g, int from, const MoeStrategy& strategy);
// The MoE blocks of one rank (block index -> its strategy) share their communicators, so all of
// them take the priority lanes or none: std::invalid_argument naming two blocks that differ.
void check_comm_priority(const std::map<int, const MoeStrategy*>& blocks);

// One pass of a block without buffers, from the handle of the EP group's counts: the tasks
// MoeLayer executes for those counts (its forward graph, its backward graph), minus the
// actions. Returns the pass's last task.
TaskId add_block_pass(TaskGraph& g, MoeStrategy& strategy, MoeHandle& handle, MoePass pass, MoeContext& ctx,
                      const BlockDims& d, const std::vector<TaskId>& after);

}  // namespace moebench
