#pragma once
// MoNTA's memory model (monta.txt "MoE Memory consumption": eq. 1-2, Tables 2-4) for the devices
// of one config, and beside it what moebench's own fp32 CPU trainer holds for that config. Pure:
// a config in, bytes out; every number is PREDICTED.
//
// Symbols (Table 2): b micro-batch size (sequences of one micro-batch on one data-parallel rank),
// s sequence length, h hidden size, a heads, l layers, k experts per token, d / p / t / e the
// data-, pipeline-, tensor- and expert-parallel degrees, P1 the non-MoE and P2 the MoE parameters.
//
// eq. 1: Mem_total = psi_1 + psi_2 + Mem_act, per device.
//
// Weights (Table 3): Adam in mixed precision, 16 bytes per parameter (fp16 weight 2, fp16
// gradient 2, fp32 master weight 4, fp32 momentum 4 and variance 4):
//   baseline 16 P / (p t)    ZeRO-1 (4 + 12/p) P    ZeRO-2 (2 + 14/p) P    ZeRO-3 16/p P
// Our reading of what divides what: in the baseline row P / (p t) is the share of P that one
// device holds under pipeline (p) and tensor (t) parallelism. The ZeRO rows shard the model
// states over the data-parallel group (ZeRO, Rajbhandari et al. 2020: P_os (4 + 12/N_d),
// P_os+g (2 + 14/N_d), P_os+g+p 16/N_d), so their "p" is the data-parallel degree and their P
// the same per-device share: read with the pipeline degree, a run without pipeline stages would
// gain nothing from ZeRO, and ZeRO-1 would hold more than the baseline once p t > 1. Hence, per
// device, psi = factor(stage, group) x (the parameters the device holds), with
//   psi_1: P1 share = the non-MoE parameters the device holds (routers included: every device
//          holds its blocks' gates whole), group = d;
//   psi_2: P2 share = the experts the device holds (E/e of each MoE block on its stage, sliced
//          over t only with moe.expert_tp), group = their replicas d / e (DeepSpeed-MoE's
//          expert-data-parallel group; d for ppmoe, whose experts divide over the TP group).
// The shares are counted tensor by tensor (model/param_count.h) rather than as P / (p t): the
// first stage holds the embeddings, the last the head, and experts divide over e, not t.
//
// Activations (Table 4), bytes per layer and micro-batch (fp16 activations, 1-byte dropout
// masks). The table's text is partly garbled; its rows are rebuilt here from the analysis it
// cites (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models", §4): a dense layer keeps s b h (34 + 5 a s / h): attention 11 s b h + 5 a s^2 b (QKV
// input 2, Q and K 4, V 2, projection input 2, dropout mask 1; scores: softmax output 2, its
// dropout mask 1, dropout output 2), MLP 19 s b h (input 2, GeLU input 8, GeLU output 8, dropout
// mask 1), the two LayerNorm inputs 2 + 2. eq. 2 splits 34 = 13 + 21 k: 13 for the attention side
// (11 and its LayerNorm's 2), 21 for the MLP side (19 and its LayerNorm's 2), which an MoE layer
// keeps once per expert a token goes to. With c = k copies in an MoE layer and c = 1 in a dense one:
//   without parallelism (eq. 2)    b s h (13 + 21 c + 5 a s / h)
//   PP+TP+EP                       b s h (5 + 5 c + (8 + 16 c) / t + 5 a s / (h t))
//   PP+TP+EP+SP                    b s h ((13 + 21 c) / t + 5 a s / (h t))
//   +SP+selective recompute        b s h (13 + 21 c) / t
//   +SP+full recompute             2 b s h / t
// PP+TP+EP is Megatron's TP row, s b h (10 + 24/t + 5 a s / (h t)), split the same way:
// tensor parallelism divides Q, K, V and the projection input (8) and the GeLU input and output
// (16 per copy) and the scores over t, and keeps whole the LayerNorm input, the first linear's
// input and the dropout mask of each side (5 + 5 per copy). The garbled row prints
// "5 + 5k/e + (s + 14k/t)/t + 5kz/h": we take 5 c, not 5 k / e, because with balanced routing
// every device of an EP group computes b s k token copies whatever e is (e devices send b s k
// each, spread over e devices), and Megatron's (8 + 16 c)/t and 5 a s / (h t) for the rest, which
// makes the row equal eq. 2 at t = 1 as it must. The SP row is Megatron's TP+SP row
// s b h (34/t + 5 a s / (h t)) with 34 split the same way (the printed "(13 + 21k)/(3 + 21k/t)"
// does not parse); the two recompute rows are as printed (Megatron: 34/t with selective
// recompute, 2 s b h / t with full recompute, which keeps only each layer's input).
// Pipeline parallelism (Megatron §4.2.3): under 1F1B the first stage keeps p micro-batches of
// l/p layers, l layers' worth, which is the table's l. Here each stage counts its own layers x the
// micro-batches it keeps in flight (model/pipeline_schedule.h: 1F1B min(p - stage, m), GPipe m),
// which for stage 0 of 1F1B with m >= p and an even split is exactly the table's l. Like
// Table 4, the embedding's and the output layer's activations are left out; copies are k
// whatever moe.capacity_factor is (the paper's dropless setting).
//
// fp32, as moebench's CPU trainer runs it: StageMemory::fp32 (perf/trainer_memory.h).
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/perf/trainer_memory.h"

namespace moebench {

enum class ZeroStage { baseline, zero1, zero2, zero3 };
inline constexpr int kZeroStages = 4;
const char* zero_stage_name(ZeroStage z);  // "baseline", "ZeRO-1", "ZeRO-2", "ZeRO-3"
// Table 3: bytes per parameter a device holds, the model states sharded over `group` ranks
// (ZeRO's data-parallel group; the baseline ignores it).
double zero_bytes_per_param(ZeroStage z, int group);

enum class ActivationScheme { pp_tp_ep, pp_tp_ep_sp, selective_recompute, full_recompute };
inline constexpr int kActivationSchemes = 4;
const char* activation_scheme_name(ActivationScheme a);  // "PP+TP+EP", "PP+TP+EP+SP", ...

struct LayerShape {
  double b = 1, s = 1, h = 1, a = 1;  // micro-batch, sequence, hidden, heads
  double t = 1;                       // tensor-parallel degree
};
// Table 4: bytes one layer keeps for one micro-batch; copies = k for an MoE layer, 1 for a dense one.
double layer_activation_bytes(ActivationScheme scheme, const LayerShape& d, double copies);
// eq. 2 for one layer: b s h (13 + 21 copies + 5 a s / h) (no parallelism; d.t is ignored).
double eq2_layer_bytes(const LayerShape& d, double copies);

// A device of one pipeline stage (its TP, DP and EP ranks hold alike).
struct StageMemory {
  int stage = 0, first_block = 0, end_block = 0;  // blocks [first_block, end_block)
  int in_flight = 1;  // micro-batches whose activations it keeps at once
  double p1 = 0, p2 = 0;  // parameters it holds: non-MoE, MoE (experts)
  double psi1[kZeroStages] = {}, psi2[kZeroStages] = {};  // Table 3, bytes
  double activations[kActivationSchemes] = {};           // Table 4 x its layers x in_flight, bytes
  TrainerMemory fp32;  // rank 0's on stage 0 (it writes the checkpoint)
  double weights(ZeroStage z) const { return psi1[(int)z] + psi2[(int)z]; }
  double total(ZeroStage z, ActivationScheme a) const { return weights(z) + activations[(int)a]; }  // eq. 1
};

struct MemoryModel {
  // Table 2's symbols for this config: l all blocks, k the top-k of its MoE blocks.
  int b = 0, s = 0, h = 0, a = 0, l = 0, k = 0;
  int d = 1, p = 1, t = 1, e = 1;
  int expert_replicas = 1;  // ranks holding the same experts (the experts' ZeRO group)
  int microbatches = 1;
  PipeSchedule schedule = PipeSchedule::one_f_one_b;
  std::vector<int> moe_blocks;  // Table 4's k copies; the others are dense (1 copy)
  double eq2_bytes = 0;  // eq. 2: the whole model on one device, one micro-batch
  double device_memory = 0;  // bytes per device (cluster.device_memory_gib); 0 = not described
  std::vector<StageMemory> stages;
  // The stage with the largest eq. 1 total for a combination (the first of equals), and the
  // one with the largest fp32 peak.
  const StageMemory& worst(ZeroStage z, ActivationScheme a) const;
  const StageMemory& worst_fp32() const;
};

// For a validated config (its run.ranks = pp x dp x tp). Throws std::invalid_argument when the
// layout does not hold.
MemoryModel memory_model(const Config& cfg);

}  // namespace moebench
