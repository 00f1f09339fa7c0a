#pragma once
// The model FLOPs of training one token, what model FLOPs utilisation (MFU) divides by the
// device's rate: PaLM's accounting (Chowdhery et al. 2022, "PaLM", Appendix B): 6N + 12 L H Q T
// per token, N the parameters a token's computation multiplies by (forward 2N, backward 4N),
// the second term the attention's score and value products (L layers, H heads of width Q, so
// H Q = hidden, context T = seq_len; counted without the causal mask's savings, as PaLM does).
// For an MoE model N is the *active* parameters (Megatron-Core and DeepSpeed-MoE's MFU): every
// dense tensor that takes part in a matrix product — attention, dense FFNs, routers, the LM head
// (tied or not: its V x C product is computed) — plus top_k experts per MoE block. Lookups
// (the token and position embeddings) and elementwise parameters (LayerNorms, biases) do no
// matrix product; biases are counted with their matrices (what a GEMM with bias costs, within
// 1 / hidden), LayerNorms and embeddings are not. Recomputation, optimizer arithmetic and
// capacity drops are not model FLOPs either.
#include "moebench/config/config.h"

namespace moebench {

struct ModelFlops {
  double active_params = 0;  // N above
  double attention = 0;      // 12 L hidden seq_len
  double per_token() const { return 6.0 * active_params + attention; }
};

ModelFlops model_flops(const Config& cfg);

}  // namespace moebench
