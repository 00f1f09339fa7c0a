#pragma once
// One training step of every rank, simulated: the step graphs (train/step_graph.h) of all ranks
// built from one StepRouting and replayed on a cluster (perf/simulator.h). Everything here is
// predicted.
//
// Per MoE block split (block_splits), for each rank and pass (forward, backward; per micro-batch)
// over the block's tasks (layer L, perf/ddl_roofline.h moe_block_task; not the attention's, TP
// all-reduces, dense gradient buckets or pipeline transfers): the window from the pass's first
// start to its last end; compute = the compute role's compute tasks' time in it; comm = the time
// comm tasks run while no compute task of the block does (exposed); idle = window - compute -
// comm. The block's expert gradient all-reduce over their replicas (expert.allreduce, once per
// step after the backward, where parallel.ep < the data-parallel ranks) is a window of its own:
// all comm. Windows summed, means over the ranks whose pipeline stage holds the block.
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/perf/simulator.h"
#include "moebench/train/step_graph.h"

namespace moebench {

struct StepSimulation {
  std::vector<TaskGraph> graphs;  // by world rank
  SimulationResult result;
};

// Throws std::invalid_argument when the cluster's devices are not run.ranks, or a layout the
// step graph does not cover (step_graph.h).
StepSimulation simulate_step(const Config& cfg, const ClusterNetwork& net, const StepRouting& routing);

struct BlockSplit {
  int block = 0;
  std::string strategy;
  double compute_s = 0, comm_s = 0, idle_s = 0;  // mean per rank
};
std::vector<BlockSplit> block_splits(const Config& cfg, const StepSimulation& step);

// Mean over ranks of the time a rank's comm tasks run while its compute role computes nothing.
double exposed_comm_seconds(const StepSimulation& sim);

}  // namespace moebench
