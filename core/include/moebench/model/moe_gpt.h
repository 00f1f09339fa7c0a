#pragma once
// MoeGpt: a GPT-style decoder whose FFN is an MoE block in the blocks listed by
// [moe] moe_layers. Token + position embedding, pre-LayerNorm blocks with causal multi-head
// attention, GeLU FFN or MoE block, final LayerNorm, tied or untied LM head, cross-entropy.
// Loss = mean cross-entropy + aux_loss_weight * sum over MoE blocks of the GShard aux loss.
// One instance is one rank's part of the model: its expert shard (ExpertShard), its tensor-
// parallel slices (TpShard), its pipeline stage's blocks (PipeStage) and its columns of a
// partitioned embedding (EmbedShard), run one micro-batch at
// a time (forward_micro / backward_micro, or add_forward / add_backward in the step's graph:
// train/step_builder.h schedules them). A micro-batch's
// pass is a chain of tasks (model/stage_graph.h) whose actions are the layer functions; the
// calling thread adds them to the step's graph, submits them to the executor and waits (at each
// MoE block's routing point and at the pass's end).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/dist/communicator.h"
#include "moebench/model/cpu_backend.h"
#include "moebench/model/param_arena.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/parallel_context.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/runtime/task_graph.h"
#include "moebench/tensor/device_array.h"

namespace moebench {

class Executor;
struct StageShape;
enum class StageOp : uint8_t;

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
// vocab: the token embedding and the LM head split by vocabulary rows too
// (parallel.vocab_parallel; model/vocab_parallel.h), rank r holding [r V / size, (r+1) V / size).
struct TpShard {
  int rank = 0, size = 1;
  bool vocab = false;
};

// Pipeline parallelism: this rank runs blocks [first_block, end_block) (end_block -1: all),
// stage `stage` of `stages`. The first stage embeds the tokens; the last applies ln_f, the
// head and the loss. With a tied head the last stage keeps its own copy of embed.wte (same
// name, same init); the trainer sums the two copies' gradients (Megatron's embedding group).
// `in_flight` activation sets are kept, one per micro-batch in flight (model/pipeline_schedule.h).
struct PipeStage {
  int stage = 0, stages = 1;
  int first_block = 0, end_block = -1;
  int in_flight = 1;  // activation sets (micro-batches in flight)
  bool first() const { return stage == 0; }
  bool last() const { return stage == stages - 1; }
};

// Embedding partition in data parallelism (MoESys §IV-C, model.embedding_partition;
// model/embedding_partition.h): this rank holds columns [rank C / size, (rank + 1) C / size) of
// embed.wte, size = the data-parallel group. Needs tp = 1, one pipeline stage and an untied head.
struct EmbedShard {
  int rank = 0, size = 1;
};

// One micro-batch as a stage sees it.
struct MicroBatch {
  const int* inputs = nullptr;   // [B,T] token ids (embedded on the first stage)
  const int* targets = nullptr;  // [B,T] (the loss, on the last stage)
  int B = 0, T = 0;
  long step = 0;         // keys the synthetic routing
  long first_token = 0;  // global index of the micro-batch's first token (synthetic routing)
  int chunk = -1;        // the micro-batch's index in the step (the tasks' chunk; -1: a step of one)
};

// A contiguous range of the parameter/gradient arena, in floats.
struct ArenaRange {
  size_t offset = 0, count = 0;
};

// A MoE block's experts held by this rank: one contiguous range of the arena.
struct BlockExperts {
  int block = 0;  // global block index (the block's tasks' layer)
  ArenaRange range;
};

// Where the MoE blocks read their expert weights during forward when they are not all held in
// place (inference offloading: storage/ring_memory.h). acquire(block) returns the block's experts
// laid out as the arena's (waiting until they are there); release(block) says its forward no
// longer reads them. Blocks are acquired in forward order, each released before the next is
// acquired. Backward always reads the arena.
class ExpertSource {
 public:
  virtual ~ExpertSource() = default;
  virtual const std::vector<ExpertParams>& acquire(int block) = 0;
  virtual void release(int block) = 0;
};

class MoeGpt {
 public:
  // Throws std::invalid_argument when tp.size does not divide the heads, E the EP ranks, or
  // the stage's block range is empty, or embed.size the hidden size (or embed.size > 1 with
  // tp, pipeline stages or a tied head).
  // backend: where the parameters, gradients and activations live and what runs the layer
  // functions (tensor/backend.h); it must outlive the model. On a backend with device memory
  // (cuda) every pointer the model takes or returns (x_in, dout, stage_output, input_grad,
  // logits) is device memory. There distribute() takes data and expert parallelism only (it
  // throws std::invalid_argument on tensor or pipeline parallelism and the embedding partition),
  // and the MoE blocks (learned routing) run on the backend's MoeRows (moe/moe_rows.h).
  MoeGpt(const ModelConfig& model, const MoeConfig& moe, ExpertShard shard = {}, TpShard tp = {},
         PipeStage pipe = {}, EmbedShard embed = {}, Backend& backend = cpu_backend());
  ~MoeGpt();
  MoeGpt(const MoeGpt&) = delete;
  MoeGpt& operator=(const MoeGpt&) = delete;

  // GPT-2 style init from a seed: N(0, init_std) matrices, residual projections scaled by
  // 1/sqrt(2 * layers), zero biases, unit LayerNorm weights. Each tensor's stream is keyed by
  // its name, so every sharding of the experts gets the same weights.
  void init(uint64_t seed);

  // Runs the MoE blocks through their distributed strategies (moe/parallel_context.h), the
  // tensor-parallel all-reduces over par.tp (required when tp.size > 1) and the partitioned
  // embedding's exchanges over a duplicate of par.dp (required when embed.size > 1).
  // On a device backend: data parallelism only, every expert on each rank (std::invalid_argument
  // otherwise); the MoE blocks stay local and sum their aux statistics over a dup of par.dp.
  void distribute(const ParallelContext& par);
  // Synthetic expert choice ([moe] routing), keyed by MicroBatch::step and first_token so the
  // choices do not depend on the rank count.
  void set_routing(const RoutingSpec& spec, uint64_t seed);

  // One micro-batch through this stage's blocks, keeping its activations in set `slot`
  // (< PipeStage::in_flight) for backward_micro. x_in: the previous stage's output [B*T, C]
  // (stages after the first). Returns the micro-batch's cross-entropy (last stage; 0 elsewhere)
  // and the unweighted aux losses of this stage's MoE blocks.
  LossParts forward_micro(int slot, const MicroBatch& mb, const float* x_in = nullptr);
  // The stage's output activation [B*T, C] of the slot's last forward (stages before the last).
  const float* stage_output(int slot) const;
  // Gradients of loss_scale x (the slot's total loss), accumulated into params().grads().
  // dout: gradient of the stage output (stages before the last). The grad-ready hook fires
  // only when last_micro (the step's final accumulation).
  void backward_micro(int slot, const float* dout, float loss_scale, bool last_micro, int chunk = -1);
  // Gradient of the stage input [B*T, C] after backward_micro (stages after the first).
  const float* input_grad(int slot) const;

  // The passes as tasks of a step's graph g (train/step_builder.h): forward_micro / backward_micro
  // without waiting for the pass's end (only for each MoE block's counts). x_in and dout must
  // stay valid until the pass's tasks ran. Return the pass's last task.
  // Before a forward's first task (before any gate): each MoE block's iteration start (its
  // strategy's prefetch, MoeStrategy::build_iteration_start) after `after`.
  void add_iteration_start(TaskGraph& g, int slot, TaskId after);
  TaskId add_forward(TaskGraph& g, int slot, const MicroBatch& mb, const float* x_in, TaskId after);
  TaskId add_backward(TaskGraph& g, int slot, const float* dout, float loss_scale, bool last_micro, int chunk,
                      TaskId after);
  // Each forward pass's losses since begin_step() / reset_graph(), in the order the passes ran:
  // ce (last stage; 0 elsewhere) and the unweighted aux of this stage's MoE blocks. On a device
  // a pass's per-token losses are copied aside by its head task and summed here, at the first
  // call after it (one wait for the device, not one per pass while the passes are enqueued).
  const std::vector<LossParts>& pass_losses();

  // The whole model (one stage) on one batch: forward_micro / backward_micro of slot 0.
  // inputs/targets: [B,T] token ids, T <= seq_len.
  LossParts forward(const int* inputs, const int* targets, int B, int T, long step = 0);
  void backward();
  // The logits [B*T, vocab] of the last forward (the last stage's; with the vocabulary split
  // over TP, this rank's rows only). Inference reads the last position's row.
  const float* logits() const { return logits_.data(); }
  // Called while the backward of the last micro-batch is added with each range of dense
  // (non-expert) gradients, in the graph, after the task that completes it (no later part of
  // the backward adds to it): final norm + head, each block, embeddings. The hook adds the
  // range's reduction there; layer: the block whose dense part it is (-1 embeddings and head).
  using GradReadyHook = std::function<void(TaskGraph& g, ArenaRange range, int layer, TaskId after)>;
  void set_grad_ready_hook(GradReadyHook hook) { grad_ready_ = std::move(hook); }
  // Called on the calling thread, before forward adds the tasks that read a part's dense
  // weights: part -1 the embeddings, b the dense part of block b, model.layers ln_f and the head
  // (the parts whose gradients the grad-ready hook reports). storage.dense = "zero3" all-gathers
  // them there (storage/dense_shards.h).
  // The hook returns the task the part's compute waits for (after `after`).
  using DenseUseHook = std::function<TaskId(TaskGraph& g, int part, TaskId after)>;
  void set_dense_use_hook(DenseUseHook hook) { dense_use_ = std::move(hook); }
  // storage.zero3_experts: a MoE block's part (its gradient range and its gathers) runs on over
  // its experts, which follow its router in the arena; their gradients are then reduced with it.
  void set_experts_in_block_parts(bool on) { experts_in_parts_ = on; }
  std::vector<ArenaRange> dense_ranges() const;   // every non-expert parameter
  std::vector<BlockExperts> expert_ranges() const;  // this rank's experts, per MoE block (ascending)
  // This rank's experts of a MoE block as pointers into the arena (std::out_of_range for a
  // block without experts here).
  const std::vector<ExpertParams>& expert_params(int block) const;
  // Forward reads the experts from `source` instead of the arena (nullptr: the arena again).
  // CPU backend only (std::invalid_argument on a device backend).
  void set_expert_source(ExpertSource* source);
  // Gradients that are partial sums over the TP group after backward (the routers of blocks
  // whose strategy combines each rank's own experts, ppmoe, or expert slices, moe.expert_tp,
  // and those slices' b2), to be all-reduced once per step.
  std::vector<ArenaRange> tp_partial_ranges() const;
  const ExpertShard& shard() const { return shard_; }
  const TpShard& tp() const { return tp_; }
  const PipeStage& pipe() const { return pipe_; }
  // Whether `name` is a tensor of the whole model that another rank holds: another EP rank's
  // expert, another stage's block, embeddings or head (checkpoints name every tensor).
  bool held_elsewhere(const std::string& name) const;
  // The arena range of the last stage's copy of the tied embed.wte (count 0 elsewhere).
  ArenaRange tied_embedding_copy() const;
  // The arena range of this rank's columns of the partitioned embed.wte (count 0 without
  // embedding partition): its gradient is complete after backward (no DP all-reduce) and only
  // needs the DP scale.
  ArenaRange partitioned_embedding() const;
  const EmbedShard& embed_shard() const { return embed_; }

  Backend& backend() const { return be_; }
  ParamArena& params() { return params_; }
  const ParamArena& params() const { return params_; }
  const ModelConfig& model_config() const { return model_; }
  const MoeConfig& moe_config() const { return moe_; }
  // The MoE layer of a block (nullptr for a dense block or one on another stage): the slot of
  // the last forward (its routing and strategy).
  const MoeLayer* moe_layer(int block) const;
  // Kept assignments per expert of a block summed over the micro-batches since begin_step()
  // (empty for a dense block or one on another stage).
  std::vector<int> expert_counts(int block) const;
  // The strategy's choices for block's last forward (MoeLayer::decisions); none for a block of
  // another pipeline stage.
  std::vector<StrategyDecision> strategy_decisions(int block) const;
  // A new step: the counts start again and so does the step's graph (its earlier tasks waited for).
  void begin_step();
  // The executor the passes' tasks run on (the rank's, or the model's own when not distributed).
  Executor& executor();
  // Runs the passes' tasks on `ex` from now on (one rank on a device: its StreamExecutor,
  // train/device.h); distribute() sets the rank's. `ex` must outlive the model's use of it.
  void use_executor(Executor& ex);
  // A new graph for the passes that follow (its earlier tasks waited for): evaluation.
  void reset_graph();

 private:
  struct Block;
  struct Acts;
  struct HeadActs;
  class Binding;
  friend class Binding;
  void build_params();
  void distribute_replicated(const ParallelContext& par);  // distribute() on a device backend holding every expert
  Block* local_block(int block) const;  // nullptr when not on this stage
  // The stage's shape for a micro-batch of B x T tokens (model/stage_graph.h).
  StageShape stage_shape(int B, int T) const;
  // Submits the graph's new tasks and waits for `end`.
  void run_until(TaskId end);
  // The action of a stage task for block `layer` of activation set `slot` (moe_gpt_layers.cpp).
  void run_op(StageOp op, int layer, int slot);
  // A MoE block's pass of a slot (strategy: its tasks; without: one local task).
  TaskId moe_pass(TaskGraph& g, int block, int slot, MoePass pass, TaskId after);
  // The arena range of a dense part (model/stage_graph.h's parts).
  ArenaRange part_range(int part) const;
  void collect_moe(size_t i, int slot);
  void finish_loss(HeadActs& h);
  // Sums x[n] over the TP group (nothing at tp = 1).
  void tp_allreduce(float* x, size_t n, ReduceOp op = ReduceOp::sum);
  // embed_send_ [P, block] -> embed_recv_ [P, block] over the DP group (partitioned embedding).
  void embed_all_to_all(size_t block);
  bool vocab_split() const { return tp_.vocab && tp_.size > 1; }
  bool embed_split() const { return embed_.size > 1; }
  int vocab_rows() const { return model_.vocab_size / (vocab_split() ? tp_.size : 1); }  // Vt
  int vocab_first() const { return vocab_split() ? tp_.rank * vocab_rows() : 0; }

  Backend& be_;
  ModelConfig model_;
  MoeConfig moe_;
  ExpertShard shard_;
  TpShard tp_;
  PipeStage pipe_;
  EmbedShard embed_;
  Communicator* tp_comm_ = nullptr;
  std::unique_ptr<Communicator> embed_comm_;  // dup of the DP group (partitioned embedding)
  std::unique_ptr<Communicator> stats_comm_;  // dup of the DP group (a device's MoE blocks' statistics)
  ParamArena params_;
  Executor* executor_ = nullptr;  // the rank's (distributed runs); else own_executor_
  std::unique_ptr<Executor> own_executor_;
  TaskGraph graph_;               // forward_micro / backward_micro's tasks so far
  std::vector<LossParts> pass_losses_;
  // A device's passes: each one's per-token losses (pass_rows_[i], n tokens) until summed.
  struct PendingLoss {
    size_t pass;
    long n;
  };
  std::vector<PendingLoss> pending_losses_;
  std::vector<DeviceArray<float>> pass_rows_;  // kept between graphs (allocated once per pass index)
  GradReadyHook grad_ready_;
  DenseUseHook dense_use_;
  bool experts_in_parts_ = false;
  ExpertSource* expert_source_ = nullptr;
  RoutingSpec routing_;
  uint64_t routing_seed_ = 0;
  std::vector<std::unique_ptr<Block>> blocks_;  // this stage's blocks, from pipe_.first_block
  static constexpr size_t kNone = (size_t)-1;
  size_t wte_ = kNone, wpe_ = kNone, lnf_w_ = kNone, lnf_b_ = kNone, head_ = kNone;
  std::vector<size_t> tp_partial_;     // parameter indices (tp_partial_ranges)
  std::vector<size_t> tp_partial_b2_;  // sliced experts' b2 (only TP rank 0's is non-zero)
  bool sliced_experts() const { return moe_.expert_tp && tp_.size > 1; }

  std::vector<HeadActs> head_acts_;  // per slot: the micro-batch, stage output, ln_f, head
  int last_slot_ = 0;
  DeviceArray<float> rowmax_, ce_stats_;  // vocabulary-parallel softmax statistics
  DeviceArray<float> embed_send_, embed_recv_;  // [P, N, C/P] slices (partitioned embedding)
  DeviceArray<float> logits_, dresid_, dscratch_, dscratch2_, dlogits_, dpreatt_, datt_;
};

}  // namespace moebench
