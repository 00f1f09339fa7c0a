#pragma once
// The task graph of one training iteration of one rank, built without buffers and without
// MPI (`moebench plan --graph RANK`; the simulator replays it), for any pp x dp x tp layout
// (Megatron rank order, dist/parallel_layout.h):
//   per micro-batch, in the order of the pipeline schedule (model/pipeline_schedule.h):
//     forward   what the MoE blocks' strategies start with the iteration (MoeStrategy::
//               build_iteration_start: Janus prefetch's gets) -> [pp.forward receive] -> the
//               stage's tasks (model/stage_graph.h: the ones MoeGpt executes, the MoE blocks'
//               passes from their strategies, moe/block_graph.h) -> [pp.forward send]
//     backward  [pp.backward receive] -> the stage's backward tasks, on the last micro-batch
//               with each dense part's gradient bucket (all-reduce over the DP group; a
//               partitioned embed.wte in none: each rank owns its columns) -> [pp.backward send]
//   storage.dense = "zero3" (storage/dense_shards.h): the buckets are reduce-scattered
//     (grad.reduce_scatter) and, in the first micro-batch's forward, each dense part is
//     all-gathered before it computes (dense.allgather: the embeddings' on the main thread, then
//     with dense_prefetch part i+1's on the DP comm role while part i computes, else each on the
//     main thread); a steady-state step: a run's first step gathers nothing (same init);
//     grad.norm.dp all-reduces the shards' sums of squares; the optimizer's flops are its shards';
//   then the routers' partial gradients over TP (ppmoe, sliced experts), the tied embedding
//   between the first and the last stage, the experts' all-reduce over their replicas (one
//   expert.allreduce per MoE block, its layer the block, as Distributed::finish_gradients
//   records it), the main thread's small all-reduces (grad.norm.tp / .ep / .pp / .dp: the
//   gradient norm's sums, .dp for the partitioned embedding's columns; loss.pp, loss.dp: the loss), and the optimizer.
// The rank's work is one chain (compute on the compute role; blocking receives and collectives on
// the host role, which the executor runs in the chain); pipeline sends are non-blocking,
// activations and gradients on two comm roles so that one direction never queues behind the
// other (MPI progresses isends independently).
//
// Routing: the MoE blocks' counts come from a StepRouting: the config's synthetic routing, or a
// measured run's recorded routing (plan/trace_routing.h). A micro-batch takes its share of the
// step's rows (as even as whole rows allow).
//
// Costs: the dense stages' flops of model/dense_costs.h divided over TP (what the model's spans
// carry); a ring all-reduce of b bytes over P ranks sends 2 b (P-1)/P bytes to the next rank in
// 2 (P-1) messages; pipeline sends carry the micro-batch's N x C activations, 1/t of them per TP
// rank, all-gathered over TP at the receiver (pp.allgather); optimizer 10 flops per parameter
// held (AdamW). Not modelled: the wait for a slot's previous send.
#include <map>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/runtime/task_graph.h"

namespace moebench {

// The rows every world rank routes to each expert of every MoE block in one step (after the
// capacity cap): rows[block][rank * E + e]. The simulator builds all ranks' graphs from one.
// The TP ranks and stages of one data-parallel rank hold the same tokens, so the same rows.
struct StepRouting {
  std::map<int, std::vector<long>> rows;
};

// The config's synthetic routing at 1-based step `step` ("uniform" when it is learned): every
// rank's tokens chosen as in a run (moe/synthetic_routing.h), capped by the capacity when
// moe.capacity_factor > 0.
StepRouting synthetic_step_routing(const Config& cfg, long step);

// Throws std::invalid_argument for a rank outside [0, run.ranks), a layout the strategies
// reject, or a routing without the config's blocks and ranks.
TaskGraph build_step_graph(const Config& cfg, int rank, const StepRouting& routing);
TaskGraph build_step_graph(const Config& cfg, int rank);  // synthetic routing, step 1

// The routing the step graph assumes, in words (for the printed graph's header).
std::string step_graph_routing(const Config& cfg);

}  // namespace moebench
