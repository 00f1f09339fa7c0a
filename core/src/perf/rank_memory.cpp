// Lower bound on one rank's memory (see rank_memory.h). The parameter count follows the
// tensors MoeGpt registers (tests compare it with a real model's arena).
#include "moebench/perf/rank_memory.h"

#include <algorithm>
#include <cstdint>

namespace moebench {
namespace {
uint64_t saturate(double v) { return v >= 1.8e19 ? UINT64_MAX : (uint64_t)v; }
}  // namespace

RankMemory estimate_rank_memory(const Config& cfg, int ranks) {
  const auto& m = cfg.model;
  // In double: a config of absurd size must give a huge estimate, not a wrapped-around one.
  const double C = std::max(m.hidden, 0), F = (double)std::max(m.ffn_mult, 0) * C, V = std::max(m.vocab_size, 0),
               T = std::max(m.seq_len, 0), H = std::max(m.heads, 0);
  ranks = std::max(ranks, 1);
  const int ep = cfg.parallel.ep > 0 ? cfg.parallel.ep : ranks;
  const double ffn = F * C + F + C * F + C;  // fc / expert w1, b1, proj / w2, b2
  RankMemory r;
  double p = V * C + T * C;                                  // token and position embeddings
  const double layers = std::max(m.layers, 0);
  p += layers * (2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + ffn);  // ln1, qkv, proj, ln2, dense FFN
  for (size_t i = 0; i < cfg.moe.moe_layers.size() && i < cfg.moe.experts.size(); ++i) {
    const int experts = cfg.moe.experts[i];  // an MoE block: router + local experts instead of the FFN
    p += experts * C + (double)(experts / std::max(ep, 1)) * ffn - ffn;
  }
  p += 2 * C;                 // final LayerNorm
  if (!m.tied_head) p += V * C;
  const double tokens = (double)(std::max(cfg.train.batch_size, 0) / ranks) * T;
  const double per_token_floats = layers * (10 * C + 2 * F + 2 * H * T) + 2 * V;
  r.parameters = saturate(p);
  r.state_bytes = saturate(16 * p);
  r.activation_bytes = saturate(4 * tokens * per_token_floats);
  r.total_bytes = saturate((double)kRankBaseBytes + 16 * p + 4 * tokens * per_token_floats);
  return r;
}

}  // namespace moebench
