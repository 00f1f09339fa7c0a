#pragma once
// The task graph of one training iteration of one rank, built without buffers and without
// MPI (`moebench plan --graph RANK`; the simulator replays it): embeddings, per block the
// attention part and the FFN (dense, or the MoE block's graph from its strategy: moe/
// block_graph.h), the LM head; backward in reverse with each gradient bucket's all-reduce
// (ring over the data-parallel ranks) as soon as the bucket is complete, the experts'
// all-reduce over their replicas, and the optimizer.
//
// Routing: the MoE blocks' counts come from a StepRouting: the config's synthetic routing, or a
// measured run's recorded routing (train/trace_routing.h).
//
// Costs: the dense stages' flops of model/dense_costs.h (what the model's spans carry);
//   grad.allreduce 2 b (P-1)/P bytes to the ring neighbour for a bucket of b bytes;
//   optimizer 10 flops per parameter held (AdamW).
#include <map>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/runtime/task_graph.h"

namespace moebench {

// The rows every world rank routes to each expert of every MoE block in one step (after the
// capacity cap): rows[block][rank * E + e]. The simulator builds all ranks' graphs from one.
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
