#pragma once
// A lower bound on the memory one training rank needs for a config, used to refuse local
// launches that cannot fit the machine (`moebench run --ranks N`). Counted:
//   - the process itself: kRankBaseBytes (MPI, OpenBLAS and the binary; a quickstart rank
//     measured 33 MB resident on Debian 12 / OpenMPI 4.1, so 32 MiB is below any real rank);
//   - parameter states: 16 bytes per parameter the rank holds (fp32 weight, gradient, AdamW m
//     and v): every dense parameter plus its share of each MoE block's experts;
//   - the activations one step keeps for backward on the rank's share of the global batch
//     (per token and block: LayerNorm/attention/FFN buffers ~ 10C + 2F floats plus 2 x heads x
//     T attention scores; per token: logits and their gradient, 2V floats).
// Not counted (so the bound stays a lower one): the corpus, communication buffers, MoE
// dispatch buffers, allocator slack.
#include <cstdint>

#include "moebench/config/config.h"

namespace moebench {

inline constexpr uint64_t kRankBaseBytes = uint64_t(32) << 20;

struct RankMemory {
  uint64_t parameters = 0;       // held by one rank: dense + its experts
  uint64_t state_bytes = 0;      // 16 x parameters
  uint64_t activation_bytes = 0;
  uint64_t total_bytes = 0;      // kRankBaseBytes + state + activations
};

// For a world of `ranks` data-parallel ranks with expert-parallel groups of parallel.ep
// (0 = all ranks). The config is assumed valid for that rank count.
RankMemory estimate_rank_memory(const Config& cfg, int ranks);

}  // namespace moebench
