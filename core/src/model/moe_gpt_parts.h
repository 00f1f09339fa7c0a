#pragma once
// MoeGpt's private state, shared by its files: moe_gpt.cpp (parameters, distribution, the
// stage's tasks) and moe_gpt_layers.cpp (the layer functions the tasks run).
#include <memory>
#include <vector>

#include "moebench/model/moe_gpt.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/tensor/device_array.h"

namespace moebench {

// One micro-batch's activations of a block ([N,C] unless noted; tensor-parallel shares where
// the matmuls are split) in the model's backend memory, and its MoE layer (each slot routes its
// own micro-batch).
struct MoeGpt::Acts {
  Acts(Backend& be, int block);
  DeviceArray<float> x, ln1, ln1_mean, ln1_rstd, qkv /*[N,3C/t]*/, preatt, att /*[B,NH/t,T,T]*/, atty, res1, ln2,
      ln2_mean, ln2_rstd, fch, fch_gelu /*[N,F/t]*/, ffn_out;
  std::vector<int> forced;  // [N,K] synthetic expert choices (routing other than learned), host
  std::unique_ptr<MoeLayer> moe;  // on the backend's rows
};

struct MoeGpt::Block {
  int index = 0;    // global block index
  int experts = 0;  // 0: dense FFN block
  // parameter indices into the arena
  size_t ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b;
  size_t fc_w = 0, fc_b = 0, fcproj_w = 0, fcproj_b = 0;  // dense FFN
  size_t router_w = 0;                                     // MoE
  std::vector<size_t> expert_first;                        // per expert: index of w1 (b1, w2, b2 follow)
  std::vector<ExpertParams> expert_params, expert_grads;
  std::vector<Acts> acts;       // per slot
  std::vector<int> step_counts; // [E] kept assignments since begin_step()
};

// A micro-batch's stage-level state: its tokens and what the tasks read besides the
// activations (the input from the previous stage, the output gradient, the loss scale), the
// stage output (the last block's residual sum) and, on the last stage, ln_f, the probabilities
// and the per-token losses; the blocks' aux the tasks summed (ce: MoeGpt::pass_losses).
// Arrays in the model's backend memory.
struct MoeGpt::HeadActs {
  explicit HeadActs(Backend& be);
  int B = 0, T = 0;
  long step = 0, first_token = 0;
  DeviceArray<int> inputs, targets;  // the first stage's token ids, the last stage's targets
  PinnedArray<int> batch;            // [inputs | targets] as the loader gave them, until batch.copy_in ran
  DeviceArray<int> all_inputs;  // [P, N] every DP rank's token ids (partitioned embedding)
  const float* x_in = nullptr;  // stages after the first: the received activation
  const float* dout = nullptr;  // stages before the last: the received output gradient
  float loss_scale = 1.0f;
  float aux = 0.0f;
  DeviceArray<float> x_out, lnf, lnf_mean, lnf_rstd, probs, losses;
  DeviceArray<float> din;  // stages after the first: the input gradient, kept for its send
  long N() const { return (long)B * T; }
};

}  // namespace moebench
