// Parameter counts of one rank's model (param_count.h), tensor by tensor as
// MoeGpt::build_params registers them (tst_memory_model compares them with real models).
#include "moebench/model/param_count.h"

#include <algorithm>

namespace moebench {

ParamPieces param_pieces(const ModelConfig& m, const TpShard& tp, bool sliced_experts, const EmbedShard& embed) {
  const double C = std::max(m.hidden, 0), F = (double)std::max(m.ffn_mult, 0) * C, V = std::max(m.vocab_size, 0),
               T = std::max(m.seq_len, 0);
  const double t = std::max(tp.size, 1), vt = tp.vocab ? t : 1.0, et = sliced_experts ? t : 1.0;
  ParamPieces p;
  p.head = V / vt * C;
  p.wte = p.head / std::max(embed.size, 1);
  p.wpe = T * C;
  // ln1 (2C), QKV weight 3C/t x C and bias 3C/t, projection C x C/t and its bias C, ln2 (2C)
  p.attention = (4 * C * C + 3 * C) / t + 5 * C;
  // fc F/t x C and bias F/t, proj C x F/t and its bias C
  p.ffn = (2 * C * F + F) / t + C;
  p.expert = (2 * C * F + F) / et + C;
  p.router_row = C;
  p.final_norm = 2 * C;
  return p;
}

ParamCounts rank_param_counts(const ModelConfig& m, const MoeConfig& moe, const ExpertShard& shard, const TpShard& tp,
                              const PipeStage& pipe, const EmbedShard& embed) {
  const ParamPieces p = param_pieces(m, tp, moe.expert_tp && tp.size > 1, embed);
  ParamCounts n;
  const bool first = pipe.first(), last = pipe.last();
  if (first) n.dense += p.wte + p.wpe;
  // The last stage: ln_f and the head (an untied one; a tied one is its own copy of embed.wte
  // when the first stage is another rank).
  if (last) n.dense += p.final_norm + (!m.tied_head || !first ? p.head : 0.0);
  const int end = pipe.end_block < 0 ? m.layers : pipe.end_block;
  for (int l = std::max(pipe.first_block, 0); l < end; ++l) {
    n.dense += p.attention;
    int experts = 0;
    for (size_t i = 0; i < moe.moe_layers.size() && i < moe.experts.size(); ++i)
      if (moe.moe_layers[i] == l) experts = moe.experts[i];
    if (experts == 0) {
      n.dense += p.ffn;
      continue;
    }
    n.dense += experts * p.router_row;
    n.experts += (double)(experts / std::max(shard.size, 1)) * p.expert;
  }
  return n;
}

}  // namespace moebench
