#pragma once
// The tasks of one micro-batch through one pipeline stage of MoeGpt, forward and backward: the
// one description of the model's layers. MoeGpt binds its layer functions (llm.c-style
// forward/backward pairs) to the tasks as actions and runs them on the executor; the step graph
// (train/step_graph.h) adds the same tasks without buffers for `simulate` and `plan --graph`.
//   forward   [first stage: embeddings (model.embedding_partition: embed.ids all-gather over
//             DP, embed.forward lookup, embed.a2a, embed.positions; vocabulary-parallel:
//             embed.forward of this rank's rows, tp.allreduce, embed.positions)]
//             -> per block: attn.forward (ln1, QKV, attention, projection; with the previous
//             block's residual), under TP tp.allreduce (Megatron's g) + attn.residual, then
//             ffn.forward + tp.allreduce or the MoE block's pass (moe/block_graph.h)
//             -> [last stage: head.forward (residual, ln_f, logits, cross-entropy;
//             vocabulary-parallel: tp.allreduce of the row maxima, head.softmax, tp.allreduce of
//             the exponential sums, head.loss) | stage.output (the residual sum sent on)]
//   backward  mirrored: [last stage: head.backward (vocabulary-parallel: tp.allreduce +
//             head.ln_f_backward) | stage.output_grad (the received output gradient taken in)],
//             per block ffn.backward + tp.allreduce (f) or the MoE pass, attn.backward (under TP:
//             tp.allreduce + attn.ln1_backward), then [first stage: the embeddings (partitioned:
//             embed.grad_slices, embed.grad_a2a, embed.backward) | stage.input_grad (the input
//             gradient kept for its send, per activation set)]. On the step's last
//             micro-batch each dense part's gradients are complete after its sub-layers:
//             StageBinding::grad_ready adds the part's bucket task there.
// The tasks form one chain. Blocking collectives in it (the TP all-reduces, the partitioned
// embedding's exchanges) have role host: the executor runs them in the chain, on the compute
// worker (runtime/executor.h).
// Costs: model/dense_costs.h's flops divided over TP; a TP all-reduce is a ring over the TP group
// (2 (t-1)/t of the bytes to the next rank in 2 (t-1) messages); embed.ids a ring all-gather of
// N int32 per DP rank; the all-to-alls N x C/P floats to every other DP rank.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "moebench/model/moe_gpt.h"
#include "moebench/moe/moe_strategy.h"
#include "moebench/runtime/task_graph.h"

namespace moebench {

enum class StageOp : uint8_t {
  batch_in, embed_ids, embed_forward, embed_a2a, embed_reduce, embed_positions,
  attn_forward, attn_reduce, attn_residual, ffn_forward, ffn_reduce,
  head_forward, head_max_reduce, head_softmax, head_sum_reduce, head_loss, stage_output,
  stage_output_grad, head_backward, head_grad_reduce, head_lnf_backward,
  ffn_backward, ffn_grad_reduce, attn_backward, attn_grad_reduce, attn_ln1_backward,
  embed_grad_slices, embed_grad_a2a, embed_backward, stage_input_grad,
};
const char* stage_op_name(StageOp op);  // the task's name: "attn.forward", "tp.allreduce", ...

// What the tasks of one rank's stage depend on: the model's sizes, this rank's shards and stage,
// the micro-batch and the world ranks of its TP and DP groups (the collectives' peers).
struct StageShape {
  ModelConfig model;
  std::map<int, int> experts;  // MoE block -> its experts (the blocks of [moe] moe_layers)
  TpShard tp;
  PipeStage pipe;
  EmbedShard embed;
  int B = 0, T = 0;
  std::vector<int> tp_world, dp_world;  // this rank's TP / DP group as world ranks (index = group rank)
  // Bytes per activation element in the transfers' costs (MoeContext::wire_element_bytes).
  int wire_element_bytes = 4;
  long N() const { return (long)B * T; }
  bool vocab_split() const { return tp.vocab && tp.size > 1; }
  bool embed_split() const { return embed.size > 1; }
  bool moe_block(int l) const { return experts.count(l) > 0; }
};

// The dense parts whose gradients become complete together (gradient buckets, ZeRO-3 parts):
// kEmbeddings (the token and position embeddings; only the positions with a partitioned table),
// a block's index (its dense part: ln1 .. ln2 + FFN or router), model.layers (ln_f + an untied
// head), model.layers + 1 (a later stage's copy of the tied embed.wte).
inline constexpr int kEmbeddingsPart = -1;

// How a stage's tasks are completed: actions and MoE passes with buffers (MoeGpt), or costs only
// (the step graph).
class StageBinding {
 public:
  virtual ~StageBinding() = default;
  // The action of task `op` of block `layer` (-1 outside blocks); empty: none.
  virtual std::function<void()> action(StageOp op, int layer) = 0;
  // The MoE block's pass after `after`; returns its last task.
  virtual TaskId moe_pass(TaskGraph& g, int block, MoePass pass, TaskId after) = 0;
  // Before forward first reads part `part`'s dense weights (storage.dense = "zero3" gathers
  // them): returns the task the part's compute waits for.
  virtual TaskId use_part(TaskGraph& g, int part, TaskId after) { (void)g, (void)part; return after; }
  // The step's last micro-batch: part's gradients are complete after `after`.
  virtual void grad_ready(TaskGraph& g, int part, TaskId after) { (void)g, (void)part, (void)after; }
};

// A ring all-reduce of `elements` of `element_bytes` each over `members` (world ranks, this rank
// at index `me`): 2 (P-1)/P of the bytes to the next member in 2 (P-1) messages. Matched across
// members by name, layer, chunk.
GraphTask ring_allreduce_task(const std::string& name, int layer, double elements, int element_bytes,
                              const std::vector<int>& members, int me, StreamRole role, int chunk = -1);

// Adds the micro-batch's forward / backward after `after` (chunk: the micro-batch in Span::chunk,
// -1 for a step of one). Returns the last task of the chain.
TaskId add_stage_forward(TaskGraph& g, const StageShape& s, StageBinding& b, TaskId after, int chunk);
TaskId add_stage_backward(TaskGraph& g, const StageShape& s, StageBinding& b, TaskId after, int chunk,
                          bool last_micro);

}  // namespace moebench
