#pragma once
// The parameters one rank's MoeGpt(model, moe, shard, tp, pipe) registers (model/moe_gpt.h),
// counted without building it: what the step graph's optimizer and gradient buckets cost and
// what the memory model (perf/memory_model.h) stores per device. Counts are doubles, so an
// absurd config gives a huge count instead of a wrapped-around one.
#include "moebench/config/config.h"
#include "moebench/model/moe_gpt.h"

namespace moebench {

// One rank's share of each kind of tensor (tensor parallelism: Megatron's column- and
// row-parallel slices; the LayerNorms, the row-parallel biases and the routers replicated).
struct ParamPieces {
  double wte = 0;         // token embedding (vocabulary rows V/t with parallel.vocab_parallel,
                          // columns C/dp with model.embedding_partition)
  double head = 0;        // the LM head (untied) or the last stage's copy of a tied wte: V/t x C
  double wpe = 0;         // position embedding, T x C
  double attention = 0;   // one block's ln1, QKV, output projection and ln2
  double ffn = 0;         // one dense FFN: fc and proj with their biases
  double expert = 0;      // one expert: w1, b1, w2, b2 (w1, b1, w2 sliced with moe.expert_tp)
  double router_row = 0;  // one expert's row of a router (C)
  double final_norm = 0;  // ln_f
};
ParamPieces param_pieces(const ModelConfig& model, const TpShard& tp, bool sliced_experts, const EmbedShard& embed = {});

struct ParamCounts {
  double dense = 0;    // every tensor but the experts (MoNTA's P1 on this rank): routers included
  double experts = 0;  // this rank's experts (MoNTA's P2 on this rank)
  double total() const { return dense + experts; }
};
// What MoeGpt(model, moe, shard, tp, pipe, embed) holds (pipe.end_block -1: all blocks). Sliced
// experts: moe.expert_tp with tp.size > 1, as MoeGpt decides.
ParamCounts rank_param_counts(const ModelConfig& model, const MoeConfig& moe, const ExpertShard& shard,
                              const TpShard& tp, const PipeStage& pipe, const EmbedShard& embed = {});

}  // namespace moebench
