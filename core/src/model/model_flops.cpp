#include "moebench/model/model_flops.h"

#include <algorithm>

#include "moebench/model/param_count.h"

namespace moebench {

ModelFlops model_flops(const Config& cfg) {
  const ModelConfig& m = cfg.model;
  const ParamPieces p = param_pieces(m, TpShard{}, false);
  const double C = std::max(m.hidden, 0);
  const double norms = 4 * C;  // ln1 and ln2 of a block (weights and biases)
  ModelFlops f;
  f.active_params = p.head;  // the LM head's product (a tied head multiplies by embed.wte)
  for (int l = 0; l < m.layers; ++l) {
    f.active_params += p.attention - norms;
    const int experts = cfg.experts_in_block(l);
    f.active_params += experts > 0 ? experts * p.router_row + std::min(cfg.moe.top_k, experts) * p.expert : p.ffn;
  }
  f.attention = 12.0 * m.layers * C * std::max(m.seq_len, 0);
  return f;
}

}  // namespace moebench
