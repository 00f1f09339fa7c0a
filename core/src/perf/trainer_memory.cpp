// What the fp32 CPU trainer holds on one rank (trainer_memory.h), buffer by buffer as the model
// (model/moe_gpt.cpp), the MoE layer (moe/moe_layer.cpp, moe/router.cpp, moe/expert_bank.cpp),
// the token exchange (strategies/token_exchange.cpp), the pipeline (train/rank_step.cpp),
// the trainer and the checkpoint writers allocate them. Sizes in floats, int32 or bytes, as
// noted; all in double so that an absurd config gives a huge number, not a wrapped one.
#include "moebench/perf/trainer_memory.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "memory_layout.h"
#include "moebench/data/corpus.h"
#include "moebench/config/strategy_spec.h"
#include "moebench/model/param_count.h"
#include "moebench/moe/router.h"

namespace moebench {
namespace {

constexpr double kFloat = 4, kInt = 4;

}  // namespace

double moe_slots(double N, int K, int E, float capacity_factor) {
  const double assignments = N * K;
  if (!(capacity_factor > 0) || assignments > INT_MAX) return assignments;
  return std::min(assignments, (double)E * expert_capacity(capacity_factor, (int)N, K, E));
}

double moe_layer_bytes(double N, int K, int E, double S, double C, double R, double F) {
  // Routing (moe/router.h): logits and probabilities [N, E], gates [N, K], f and P [E]; the
  // choices [N, K], selections and counts [E]; the kept flags [N, K] (bytes).
  double bytes = kFloat * (2 * N * E + N * K + 2 * E) + kInt * (N * K + 2 * E) + N * K;
  // MoeLayer: offsets, slot of each assignment, token of each slot (sized N k before the
  // layout shrinks it); gathered rows xg and expert outputs y; backward: gate and logit
  // gradients, dy and dxg.
  bytes += kInt * (E + 1 + 2 * N * K) + kFloat * (4 * S * C + N * K + N * E);
  // The experts' rows (ExpertBank: expert of each row, offsets, pre- and post-GeLU and their
  // gradients).
  return bytes + kInt * (R + E + 1) + kFloat * 4 * R * F;
}

TrainerMemory trainer_memory(const Config& cfg, int stage, bool rank0) {
  const memory_detail::Layout L = memory_detail::layout_of(cfg);
  const PipeStage pipe = L.stage(stage);
  const ModelConfig& md = cfg.model;
  const double T = md.seq_len, B = L.b, N = B * T, C = md.hidden, F = (double)md.ffn_mult * md.hidden;
  const double t = L.par.tp(), Ct = C / t, Ft = F / t, Ht = (double)md.heads / t;
  const bool vocab_split = L.vocab_parallel && L.par.tp() > 1, sliced = cfg.moe.expert_tp && L.par.tp() > 1;
  const double Vt = (double)md.vocab_size / (vocab_split ? t : 1.0), Fe = sliced ? Ft : F;
  const int K = cfg.moe.top_k;
  const bool distributed = cfg.run.ranks > 1, first = pipe.first(), last = pipe.last();
  const StrategySpec& strategy = strategy_spec(cfg.strategy.name);
  const double scores = B * Ht * T * T;  // one attention's [b, H/t, s, s]

  TrainerMemory m;
  const ParamCounts held = rank_param_counts(md, cfg.moe, L.experts(), L.tp(), pipe, L.embed());
  m.parameters = held.total();
  m.weights = kFloat * m.parameters;
  m.gradients = kFloat * m.parameters;
  m.adam = 2 * kFloat * m.parameters;
  const bool zero3 = cfg.storage.dense == DenseStorage::zero3 && L.par.dp() > 1;
  if (zero3) {
    // storage.dense = "zero3" (storage/dense_shards.h; tp = pp = 1): AdamW m, v for the experts
    // and this rank's shard of each dense part; rank 0's shards are the largest, ceil(n / d).
    const ParamPieces pc = param_pieces(md, L.tp(), sliced);
    auto shard = [&](double n) { return std::ceil(n / L.par.dp()); };
    double owned = shard(pc.wte + pc.wpe) + shard(pc.final_norm + (md.tied_head ? 0.0 : pc.head));
    // storage.zero3_experts (parallel.ep = 1): each block's experts are in its part.
    const bool experts = cfg.storage.zero3_experts;
    for (int l = pipe.first_block; l < pipe.end_block; ++l) {
      const int E = cfg.experts_in_block(l);
      owned += shard(pc.attention + (E == 0 ? pc.ffn : E * pc.router_row + (experts ? E * pc.expert : 0.0)));
    }
    m.adam = 2 * kFloat * ((experts ? 0.0 : held.experts) + owned);
  }

  // One micro-batch's activations (one slot).
  double slot = 0;
  bool dense_block = false, moe_block = false;
  for (int l = pipe.first_block; l < pipe.end_block; ++l) {
    // Acts: x, ln1, res1, ln2, ffn_out; the LayerNorms' mean and rstd; qkv and atty; preatt and att.
    slot += kFloat * (5 * N * C + 4 * N + 4 * N * Ct + 2 * scores);
    const int E = cfg.experts_in_block(l);
    if (E == 0) {
      dense_block = true;
      slot += kFloat * 2 * N * Ft;  // fch, fch_gelu
      continue;
    }
    moe_block = true;
    const double S = moe_slots(N, K, E, cfg.moe.capacity_factor);
    const double R = distributed && L.par.experts_in_tp() ? S / t : S;  // the rows this rank's experts compute
    slot += moe_layer_bytes(N, K, E, S, C, R, Fe);
    if (distributed && !L.par.experts_in_tp() && strategy.exchanges_tokens)
      slot += kFloat * 8 * R * C;  // token exchange: x_recv, x_exp, y_exp, y_back and their gradients' four
    if (distributed && (L.par.experts_in_tp() || (sliced && !strategy.sums_slices)))
      slot += kFloat * N * C;  // dx_part: this rank's share of the input gradient, summed over the group
  }
  // HeadActs: tokens, the stage output; on the last stage targets, ln_f and its statistics,
  // probabilities and losses.
  slot += kInt * N + kFloat * N * C;
  const int parts = L.embed().size;
  if (first && parts > 1) slot += kInt * parts * N;  // every DP rank's ids (partitioned embedding)
  if (last) slot += kInt * N + kFloat * (N * C + 2 * N + N * Vt + N);
  m.activations = slot * pipe.in_flight;

  // Workspace: dresid, dscratch, dscratch2 (d fch_gelu [N, F/t] or d qkv [N, 3C/t]), dpreatt, datt.
  m.workspace = kFloat * (2 * N * C + std::max(dense_block ? N * Ft : 0.0, 3 * N * Ct) + 2 * scores);
  if (last) m.workspace += kFloat * (2 * N * Vt + (vocab_split ? 3 * N : 0.0));  // logits, dlogits; softmax statistics
  if (moe_block && cfg.moe.routing.kind != RoutingSpec::Kind::learned) m.workspace += kInt * N * K;   // synthetic expert choice
  if (L.par.pp() > 1) {
    // RankStep (train/rank_step.h): the received output gradient (stages before the last; their
    // activation is sent from the slot's stage output); the received activation and the input
    // gradient kept per slot for its send (stages after the first); the TP slice received.
    if (!last) m.workspace += kFloat * N * C;
    if (!first) m.workspace += kFloat * N * C * (pipe.in_flight + 1) + (L.par.tp() > 1 ? kFloat * N * Ct : 0.0);
    if (md.tied_head && (first || last))
      m.workspace += kFloat * param_pieces(md, L.tp(), sliced).wte;  // the other end's embedding gradient
  }
  if (first && parts > 1) m.workspace += 2 * kFloat * N * C;  // the partitioned embedding's sent and received slices
  m.workspace += 2 * kInt * L.microbatches * N;  // a step's inputs and targets
  m.data = corpus_bytes(cfg.data, md.vocab_size);

  if (rank0) {
    // The optimizer file (m and v) is the larger of the two a checkpoint writes.
    const double whole = rank_param_counts(md, cfg.moe, ExpertShard{}, TpShard{}, PipeStage{}).total();
    m.checkpoint = distributed ? 3 * kFloat * (m.parameters + 2 * whole) + 2 * kFloat * whole : 2 * kFloat * m.parameters;
    if (zero3) m.checkpoint += 2 * kFloat * m.parameters;  // DenseShards::whole_state: the whole m and v
  }
  return m;
}

}  // namespace moebench
