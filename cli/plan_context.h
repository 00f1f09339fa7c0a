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
// Errors (exit 2): LEN < 1 or over kMaxContextTokens, no device memory described, weights that
// fill a device alone.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace moebench::cli {

// The longest --context (docs/limits.md "Sizes, memory and time"): 2^40 = 1,099,511,627,776
// tokens, 100,000 times the longest contexts trained today (about 10 million tokens), and far
// from where ceil(LEN / L) or ep x cp could overflow 64 bits.
inline constexpr long long kMaxContextTokens = 1LL << 40;

// --context's check on the text as given, before CLI11 converts it (its conversion clamps a
// number beyond 64 bits to 9223372036854775807 silently): an integer outside [1,
// kMaxContextTokens] is refused naming the value and the limit. Other text is left to the
// conversion.
CLI::Validator context_tokens();

int context_plan_main(const std::string& path, const std::vector<std::string>& sets, long long context, bool json);

}  // namespace moebench::cli
