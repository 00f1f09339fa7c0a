#pragma once
// MoeGpt: a GPT-style decoder whose FFN is an MoE block in the blocks listed by
// [moe] moe_layers. Token + position embedding, pre-LayerNorm blocks with causal multi-head
// attention, GeLU FFN or MoE block, final LayerNorm, tied or untied LM head, cross-entropy.
// Loss = mean cross-entropy + aux_loss_weight * sum over MoE blocks of the GShard aux loss.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/model/param_arena.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/parallel_context.h"
#include "moebench/moe/synthetic_routing.h"

namespace moebench {

struct LossParts {
  float ce = 0.0f;    // mean cross-entropy over the batch tokens
  float aux = 0.0f;   // sum of the MoE blocks' (unweighted) aux losses
  float total = 0.0f; // ce + aux_loss_weight * aux: what backward() differentiates
};

// Expert parallelism: this rank owns experts [rank * E / size, (rank + 1) * E / size) of
// every MoE block; only those are in its arena, under their global names.
struct ExpertShard {
  int rank = 0, size = 1;
};

// Tensor parallelism (Megatron, Pipeline MoE Fig. 1): this rank holds heads
// [rank * H / size, (rank + 1) * H / size) of every attention (column-parallel QKV, row-parallel
// output projection) and the same share of every dense FFN's columns (fc column-parallel, proj
// row-parallel). LayerNorms, embeddings, routers and the row-parallel biases are replicated
// (the biases are added by TP rank 0 before the all-reduce). Forward all-reduces the partial
// outputs of the two row-parallel matmuls (g = reduce_from), backward the partial input
// gradients of the two column-parallel ones (f = copy_to); the MoE blocks get the replicated
// LayerNorm output. Checkpoints hold whole tensors (ParamView::slice says where a slice sits).
struct TpShard {
  int rank = 0, size = 1;
};

// A contiguous range of the parameter/gradient arena, in floats.
struct ArenaRange {
  size_t offset = 0, count = 0;
};

class MoeGpt {
 public:
  // Throws std::invalid_argument when tp.size does not divide the heads, or E the EP ranks.
  MoeGpt(const ModelConfig& model, const MoeConfig& moe, ExpertShard shard = {}, TpShard tp = {});
  ~MoeGpt();
  MoeGpt(const MoeGpt&) = delete;
  MoeGpt& operator=(const MoeGpt&) = delete;

  // GPT-2 style init from a seed: N(0, init_std) matrices, residual projections scaled by
  // 1/sqrt(2 * layers), zero biases, unit LayerNorm weights. Each tensor's stream is keyed by
  // its name, so every sharding of the experts gets the same weights.
  void init(uint64_t seed);

  // Runs the MoE blocks through their distributed strategies (moe/parallel_context.h) and the
  // tensor-parallel all-reduces over par.tp (required when tp.size > 1).
  void distribute(const ParallelContext& par);
  // Synthetic expert choice ([moe] routing); first_token = global index of this rank's first
  // token in a batch (rank-count independent choices).
  void set_routing(const RoutingSpec& spec, uint64_t seed, long first_token);

  // inputs/targets: [B,T] token ids, T <= seq_len. Keeps the activations for backward().
  // step keys the synthetic routing.
  LossParts forward(const int* inputs, const int* targets, int B, int T, long step = 0);
  // Gradients of the last forward's total loss, accumulated into params().grads().
  void backward();
  // Called during backward() with each range of dense (non-expert) gradients as soon as no
  // later part of the backward adds to it: final norm + head, each block, embeddings.
  void set_grad_ready_hook(std::function<void(ArenaRange)> hook) { grad_ready_ = std::move(hook); }
  std::vector<ArenaRange> dense_ranges() const;   // every non-expert parameter
  std::vector<ArenaRange> expert_ranges() const;  // this rank's experts
  // Gradients that are partial sums over the TP group after backward (the routers of blocks
  // whose strategy combines each rank's own experts: ppmoe), to be all-reduced once per step.
  std::vector<ArenaRange> tp_partial_ranges() const;
  const ExpertShard& shard() const { return shard_; }
  const TpShard& tp() const { return tp_; }

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
  // Runs a dense stage, recorded as a compute span with its flops when distributed (the
  // names and costs of train/step_graph.h's tasks). It runs on the main thread, which then
  // is the rank's only computing thread: an MoE block's graph is waited for before the next
  // stage starts, so BLAS/OpenMP never run on two threads of a rank at once. Handing each
  // stage to the compute worker instead cost 16 % of the quickstart's time on the 2-core
  // machine (13.1-13.5 s vs 11.4-11.9 s, 4 ranks: a thread hand-off per stage on
  // oversubscribed cores), over the runtime's 5 % budget; the graph and the spans are the same.
  template <class Fn>
  void stage(const char* name, int layer, double flops, Fn&& fn);
  // Sums x[n] over the TP group (nothing at tp = 1), a comm span "tp.allreduce".
  void tp_allreduce(float* x, size_t n, int layer);

  ModelConfig model_;
  MoeConfig moe_;
  ExpertShard shard_;
  TpShard tp_;
  Communicator* tp_comm_ = nullptr;
  StreamRole tp_role_ = StreamRole::comm_intra;
  ParamArena params_;
  Executor* executor_ = nullptr;  // records the dense stages' spans (distributed runs)
  std::function<void(ArenaRange)> grad_ready_;
  RoutingSpec routing_;
  uint64_t routing_seed_ = 0;
  long first_token_ = 0;
  std::vector<int> forced_;
  std::vector<std::unique_ptr<Block>> blocks_;
  size_t wte_ = 0, wpe_ = 0, lnf_w_ = 0, lnf_b_ = 0, head_ = 0;
  std::vector<size_t> tp_partial_;  // parameter indices (tp_partial_ranges)

  // activations of the last forward
  int B_ = 0, T_ = 0;
  std::vector<int> inputs_, targets_;
  std::vector<float> x_final_, lnf_, lnf_mean_, lnf_rstd_, logits_, probs_, losses_;
  std::vector<float> dresid_, dscratch_, dscratch2_, dlogits_;
};

}  // namespace moebench
