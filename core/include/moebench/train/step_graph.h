#pragma once
// The task graph of one training iteration of one rank, built without buffers and without
// MPI (`moebench plan --graph RANK`; the simulator replays it), for any pp x dp x tp layout
// (Megatron rank order, dist/parallel_layout.h): the step builder's tasks (train/step_builder.h,
// the ones a training rank executes) on the config's virtual topology.
//
// Routing: the MoE blocks' counts come from a StepRouting: the config's synthetic routing, or a
// measured run's recorded routing (plan/trace_routing.h). A micro-batch takes its share of the
// step's rows (as even as whole rows allow).
#include <map>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/runtime/task_graph.h"
#include "moebench/train/step_builder.h"

namespace moebench {

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
