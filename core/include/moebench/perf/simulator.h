#pragma once
// The simulator: replays every rank's task graph (built without buffers by the same builders the
// runtime executes: one schedule, two engines) on a ClusterModel and predicts when each task
// starts and ends. Results are predicted, never measured.
//
// Execution model (the executor's, runtime/executor.h): each rank runs each stream role's tasks
// one at a time in the graph's topological order; a task starts when its dependencies have
// ended and the previous task of its role has ended.
//   compute  ends after ClusterModel::compute_seconds(flops) (the efficiency curve by task size,
//            so expert tasks take as long as their real token counts make them); on a
//            calibrated host with a fitted cost for the name: overhead + factor x that
//   copy     ends after ClusterModel::copy_seconds(copy_bytes)
//   comm     its cost's transfers (runtime/task_graph.h Transfer) move over the cluster's directed
//            links (perf/cluster_network.h, FIFO per link):
//              send  each (peer, bytes) is matched with the peer's task of the same name, layer,
//                    expert, chunk and occurrence; the transfer is reserved when the later of the
//                    two has started; a task ends when its own transfers and those sent to it
//                    have arrived (a task with neither ends at once). An emulated run's cluster
//                    (ClusterSpec::emulated_pacing) follows the link emulator instead: a task
//                    reserves its transfers when it starts, the receivers started or not, and
//                    ends once its own have arrived and, for each peer sending to it, all of
//                    that peer's transfers of the matching task (the emulator starts the real
//                    operation only after a rank's last flow arrived)
//              get   reserved from the peer to this rank when the task starts
//              put   reserved from this rank to the peer when the task starts
//            plus the cluster's comm extra for the bytes it sends (a calibrated host's per-task
//            cost; 0 otherwise)
// Per-pair counts are never dropped: an all-to-all-v of P ranks is P (P-1) transfers with their
// own byte counts, so routing skew and link contention show.
//
// Errors: graphs that do not match the cluster's ranks (std::invalid_argument); a send whose
// peer has no matching task, or tasks that can never start (a deadlock of the schedule) —
// std::logic_error naming the rank and task.
#include <cstdint>
#include <vector>

#include "moebench/perf/cluster_network.h"
#include "moebench/runtime/task_graph.h"

namespace moebench {

struct SimulatedTask {
  double start = 0, end = 0;  // seconds from the step's start (every rank starts at 0)
};

struct SimulationResult {
  std::vector<std::vector<SimulatedTask>> tasks;  // [rank][task index]
  std::vector<double> rank_end;                   // each rank's last task end
  double makespan = 0;                            // max over ranks: the predicted step time
  uint64_t transfers = 0;                         // point-to-point transfers reserved
};

// graphs[r] is world rank r's graph; graphs.size() must equal the cluster's world size.
SimulationResult simulate_graphs(const std::vector<const TaskGraph*>& graphs, const ClusterNetwork& network);

}  // namespace moebench
