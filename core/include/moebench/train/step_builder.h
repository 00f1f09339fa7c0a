#pragma once
// The one builder of a training iteration (and of an evaluation batch) of one rank: every task of
// the step, in one TaskGraph, from the config, the layout and the topology. A rank that trains
// adds them with actions (StepActions: its model, pipeline buffers, communicators and
// optimizer; train/trainer.cpp) and runs the graph on its executor, the main thread only
// submitting and waiting; `simulate`, `plan --graph` and the cost models add the same tasks
// without actions (train/step_graph.h: StepActions null, the MoE blocks' counts from a
// StepRouting). The tasks, in order:
//   per micro-batch, in the order of the pipeline schedule (model/pipeline_schedule.h):
//     forward   [pp.forward receive (+ pp.allgather under TP)] -> the stage's forward
//               (model/stage_graph.h: embeddings, blocks with their MoE passes and ZeRO-3
//               gathers, head and loss | stage.output) -> [pp.forward send]
//     backward  [pp.backward receive (+ pp.allgather)] -> the stage's backward with each dense
//               part's gradient bucket on the last micro-batch -> [pp.backward send]
//   A pass that reuses an activation set waits for that set's previous send (sends read it).
//   then, once every bucket is reduced: tp.partial_allreduce (routers' partial gradients over
//   TP: ppmoe, sliced experts), pp.tied_grad (the tied embedding between the first and the last
//   stage), expert.allreduce per MoE block (its experts over their replicas), grad.norm
//   (compute: the DP scale of what no reduction scaled, the sums of squares), grad.norm.tp /
//   .ep / .dp / .pp (their all-reduces), grad.clip (compute: the norm, the clipping), loss.pp,
//   loss.dp (the loss's all-reduces), the optimizer; with storage.sparse = "ssd" the tier's
//   update tasks after it (built without actions: a typical later step's, the host cache full of
//   the records updated last; a training rank's: its tier's schedule for its cache now).
// Collectives over a group of one rank are not tasks. The rank's chain (compute and blocking
// collectives, role host) is one sequence; sends run beside it, activations and gradients on two
// comm roles so that one direction never queues behind the other.
// Costs: model/stage_graph.h's for the stage; a ring all-reduce of b bytes over P ranks sends
// 2 b (P-1)/P bytes to the next rank in 2 (P-1) messages; pipeline sends carry the micro-batch's
// N x C activations, 1/t of them per TP rank, all-gathered over TP at the receiver; grad.norm 2
// flops and grad.clip 1 flop per parameter held (assumed: a read-multiply-add per element, the
// clipping taken as active); the optimizer 10 flops per parameter it updates (optim/adamw.h).
#include <functional>
#include <map>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/dist/topology.h"
#include "moebench/runtime/task_graph.h"

namespace moebench {

// The rows every world rank routes to each expert of every MoE block in one step (after the
// capacity cap): rows[block][rank * E + e]. The simulator builds all ranks' graphs from one.
// The TP ranks and stages of one data-parallel rank hold the same tokens, so the same rows.
struct StepRouting {
  std::map<int, std::vector<long>> rows;
};

enum class StepOp {
  recv_forward, recv_backward,            // pp.forward / pp.backward receive (blocking)
  gather_forward, gather_backward,        // pp.allgather of the received slices under TP
  send_forward, send_backward,            // pp.forward / pp.backward send
  tp_partial, tied_grad, expert_allreduce,
  grad_norm, norm_tp, norm_ep, norm_dp, norm_pp, grad_clip,
  loss_pp, loss_dp, optimizer,
};

// What a rank that trains attaches to the step's tasks.
class StepActions {
 public:
  virtual ~StepActions() = default;
  // Before micro-batch `micro`'s forward and its pipeline receive: the MoE blocks' iteration
  // starts after `after` (MoeStrategy::build_iteration_start: Janus prefetch).
  virtual void iteration_start(TaskGraph& g, int micro, TaskId after) = 0;
  // The stage's forward / backward of micro-batch `micro` after `after` (the model's tasks with
  // their actions, its MoE passes and hooks); returns the pass's last task.
  virtual TaskId forward(TaskGraph& g, int micro, TaskId after) = 0;
  virtual TaskId backward(TaskGraph& g, int micro, TaskId after, bool last_micro) = 0;
  // The action of a pipeline or tail task (layer: expert.allreduce's block, else -1).
  virtual std::function<void()> action(StepOp op, int micro, int layer) = 0;
  // storage.sparse = "ssd": the tier's update tasks after the optimizer (the tier's schedule
  // for its cache now: storage/expert_state_tier.h); returns the last.
  virtual TaskId sparse_update(TaskGraph& g, TaskId after) = 0;
};

// The training step: adds its tasks to g. actions null: without actions, the MoE blocks' counts
// from `routing` (required then). Throws std::invalid_argument for a rank outside
// [0, run.ranks), a layout the strategies reject, or a routing without the config's blocks and ranks.
// Returns the last task (the optimizer's, or the tier's last).
TaskId add_training_step(TaskGraph& g, const Config& cfg, int rank, const Topology& topo, StepActions* actions,
                         const StepRouting* routing = nullptr);
// One evaluation batch: the micro-batches' forwards (activation set 0) with their pipeline
// receives and sends. Returns the last task.
TaskId add_evaluation_step(TaskGraph& g, const Config& cfg, int rank, const Topology& topo, StepActions& actions);

}  // namespace moebench
