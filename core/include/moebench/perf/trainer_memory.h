#pragma once
// What moebench's fp32 CPU trainer holds on one rank for a config (PREDICTED): the second
// prediction of `moebench plan --memory` beside MoNTA's model (perf/memory_model.h), the bound
// local launches are checked against (cli/launch_limits.h), and what tst_memory_rss measures.
//
// Counted, bytes (N = b s tokens of one micro-batch on the rank, C hidden, F = ffn_mult C, t the
// TP degree, H heads, V vocabulary (V / t split), S the MoE slots of a block: N k dropless, else
// at most E x capacity):
//   - 16 per parameter the rank holds (model/param_count.h): fp32 weight and gradient
//     (model/param_arena.h) and AdamW's fp32 m and v (optim/adamw.h); with storage.dense =
//     "zero3" m and v only for the experts and the rank's shard of each dense part (rank 0's:
//     ceil(n / dp) of each, the largest), and while a checkpoint is written a whole m and v;
//   - activations, per micro-batch in flight (model/pipeline_schedule.h) and block: what
//     MoeGpt keeps for backward (model/moe_gpt.cpp, Acts: x, ln1, res1, ln2, the block output
//     5 N C; LayerNorm statistics 4 N; QKV and the attention output 4 N C / t; scores and
//     probabilities 2 b (H / t) s^2; a dense FFN's pre- and post-GeLU 2 N F / t), an MoE block's
//     MoeLayer (routing: logits and probabilities 2 N E, gates, choices, kept flags, slots and
//     tokens of the N k assignments; dispatch rows, expert outputs and their gradients 4 S C;
//     the gate and logit gradients N k + N E) and its experts' hidden layers (ExpertBank: pre-
//     and post-GeLU and their gradients 4 R F, R the rows this rank's experts compute); per
//     micro-batch (HeadActs): its tokens, the stage output N C and on the last stage ln_f N C,
//     the probabilities N V and the losses;
//   - workspace, once per rank: MoeGpt's backward scratch (the residual gradient and two
//     scratch rows, the scores' gradients 2 b (H / t) s^2, the logits and their gradient 2 N V
//     on the last stage), RankStep's receive buffers and kept input gradients (pp > 1), the token batches
//     of a step (2 x microbatches x N int32), the tied embedding's gradient from the other end
//     of the pipeline;
//   - the checkpoint writer (rank 0, transient, at the end of a run): one rank serialises the
//     optimizer file (8 bytes per parameter) while everything else is still held; a distributed
//     run's rank 0 also holds its own contribution (12 per parameter it holds), every rank's
//     contribution (12 per parameter of the whole model) and the gathered whole tensors (12 per
//     parameter) while it writes (train/distributed.cpp Distributed::save);
//   - the corpus every rank builds (data/corpus.h corpus_bytes): its token streams and, while a
//     synthetic corpus is generated, its languages' transition tables.
// Exact for one rank. For distributed runs it assumes balanced routing (a rank's experts compute
// the rows it sends: R = S, S / t under ppmoe) and counts the token exchange's receive-side copies
// (8 R C per MoE block and micro-batch) for every strategy but ppmoe and data_centric, and the
// partial input gradient (N C) of ppmoe and of sliced experts outside monta; data_centric's and
// janus' pulled experts, hier_a2a's and monta's staging buffers and chunked packing are not
// counted. Not counted anywhere: the process itself (binary, MPI, OpenBLAS buffers, thread
// stacks) and allocator slack.
#include "moebench/config/config.h"

namespace moebench {

struct TrainerMemory {
  double parameters = 0;   // held by the rank
  double weights = 0;      // fp32 parameters, 4 per parameter
  double gradients = 0;    // fp32, 4 per parameter
  double adam = 0;         // AdamW's m and v, 8 per parameter
  double activations = 0;  // kept from a micro-batch's forward to its backward, all in flight
  double workspace = 0;    // backward scratch, pipeline buffers, token batches
  double checkpoint = 0;   // the checkpoint writer's buffers (rank 0; transient, at the end)
  double data = 0;         // the corpus (data/corpus.h corpus_bytes)
  double steady() const { return weights + gradients + adam + activations + workspace + data; }
  double peak() const { return steady() + checkpoint; }
};

// One MoE layer's buffers for one micro-batch of N tokens of width C (moe/router.h,
// moe/moe_layer.cpp, moe/expert_bank.cpp): routing over E experts (top K), S kept slots
// (moe_slots), and the R rows its experts compute with hidden width F. Weights not included.
double moe_layer_bytes(double N, int K, int E, double S, double C, double R, double F);
// Kept MoE slots of N tokens: N K dropless (capacity_factor 0), else at most E x capacity.
double moe_slots(double N, int K, int E, float capacity_factor);

// A rank of pipeline stage `stage` of a validated config; `rank0`: world rank 0 (on stage 0),
// which writes the checkpoints. Throws std::invalid_argument when the layout does not hold.
TrainerMemory trainer_memory(const Config& cfg, int stage, bool rank0);

}  // namespace moebench
