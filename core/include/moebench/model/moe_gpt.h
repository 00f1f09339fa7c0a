#pragma once
// MoeGpt: a GPT-style decoder whose FFN is an MoE block in the blocks listed by
// [moe] moe_layers. Token + position embedding, pre-LayerNorm blocks with causal multi-head
// attention, GeLU FFN or MoE block, final LayerNorm, tied or untied LM head, cross-entropy.
// Loss = mean cross-entropy + aux_loss_weight * sum over MoE blocks of the GShard aux loss.
#include <memory>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/model/param_arena.h"
#include "moebench/moe/moe_layer.h"

namespace moebench {

struct LossParts {
  float ce = 0.0f;    // mean cross-entropy over the batch tokens
  float aux = 0.0f;   // sum of the MoE blocks' (unweighted) aux losses
  float total = 0.0f; // ce + aux_loss_weight * aux: what backward() differentiates
};

class MoeGpt {
 public:
  MoeGpt(const ModelConfig& model, const MoeConfig& moe);
  ~MoeGpt();
  MoeGpt(const MoeGpt&) = delete;
  MoeGpt& operator=(const MoeGpt&) = delete;

  // GPT-2 style init from a seed: N(0, init_std) matrices, residual projections scaled by
  // 1/sqrt(2 * layers), zero biases, unit LayerNorm weights.
  void init(uint64_t seed);

  // inputs/targets: [B,T] token ids, T <= seq_len. Keeps the activations for backward().
  LossParts forward(const int* inputs, const int* targets, int B, int T);
  // Gradients of the last forward's total loss, accumulated into params().grads().
  void backward();

  ParamArena& params() { return params_; }
  const ParamArena& params() const { return params_; }
  const ModelConfig& model_config() const { return model_; }
  const MoeConfig& moe_config() const { return moe_; }
  // The MoE layer of a block (nullptr for a dense block): routing of the last forward.
  const MoeLayer* moe_layer(int block) const;
  // Forward flops per token (matmuls + attention), for tokens/s -> GFLOP/s reporting.
  double forward_flops_per_token(int T) const;

 private:
  struct Block;
  void build_params();

  ModelConfig model_;
  MoeConfig moe_;
  ParamArena params_;
  std::vector<std::unique_ptr<Block>> blocks_;
  size_t wte_ = 0, wpe_ = 0, lnf_w_ = 0, lnf_b_ = 0, head_ = 0;

  // activations of the last forward
  int B_ = 0, T_ = 0;
  std::vector<int> inputs_, targets_;
  std::vector<float> x_final_, lnf_, lnf_mean_, lnf_rstd_, logits_, probs_, losses_;
  std::vector<float> dresid_, dscratch_, dscratch2_, dlogits_;
};

}  // namespace moebench
