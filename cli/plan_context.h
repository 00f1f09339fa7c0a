#pragma once
// `moebench plan CONFIG --context LEN [--cluster FILE] [--json]`: MoNTA's long-context cluster
// expansion (monta.txt "Cluster Expansion", Fig. 12), PREDICTED. The memory model
// (perf/memory_model.h: baseline weights, activations with sequence parallelism and selective
// recomputation, one sequence per micro-batch) gives the longest sequence L one EP group of the
// config's layout holds in cluster.device_memory_gib per device; a context of LEN tokens needs
// cp_world_size = ceil(LEN / L) context-parallel EP groups. The paper's rule:
//   cp_world_size < ep_world_size and a switch network of ep x cp nodes -> horizontal (CP
//   orthogonal to EP, network scale cp x ep);
//   otherwise (cp >= ep, or the switch is smaller)                      -> vertical (CP aligned
//   with EP, network scale max(ep, cp)).
// The switch network's scale is cluster.nodes_per_switch, or all cluster.nodes when 0.
// Errors (exit 2): LEN < 1, no device memory described, weights that fill a device alone.
#include <string>
#include <vector>

namespace moebench::cli {

int context_plan_main(const std::string& path, const std::vector<std::string>& sets, long long context, bool json);

}  // namespace moebench::cli
