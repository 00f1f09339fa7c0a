#include "moebench/model/moe_gpt.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>

#include "moebench/dist/communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/model/attention.h"
#include "moebench/model/crossentropy.h"
#include "moebench/model/dense_costs.h"
#include "moebench/model/embedding_partition.h"
#include "moebench/model/encoder.h"
#include "moebench/tensor/gelu.h"
#include "moebench/model/layernorm.h"
#include "moebench/model/residual.h"
#include "moebench/model/vocab_parallel.h"
#include "moebench/moe/block_graph.h"
#include "moebench/runtime/executor.h"
#include "moebench/tensor/matmul.h"
#include "moebench/tensor/rng.h"

namespace moebench {

// One micro-batch's activations of a block ([N,C] unless noted; tensor-parallel shares where
// the matmuls are split), and its MoE layer (each slot routes its own micro-batch).
struct MoeGpt::Acts {
  std::vector<float> x, ln1, ln1_mean, ln1_rstd, qkv /*[N,3C/t]*/, preatt, att /*[B,NH/t,T,T]*/, atty,
      res1, ln2, ln2_mean, ln2_rstd, fch, fch_gelu /*[N,F/t]*/, ffn_out;
  std::unique_ptr<MoeLayer> moe;
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

// A micro-batch's stage-level activations: its tokens, the stage output (the last block's
// residual sum) and, on the last stage, ln_f, the probabilities and the per-token losses.
struct MoeGpt::HeadActs {
  int B = 0, T = 0;
  std::vector<int> inputs, targets;
  std::vector<int> all_inputs;  // [P, N] every DP rank's token ids (partitioned embedding)
  std::vector<float> x_out, lnf, lnf_mean, lnf_rstd, probs, losses;
};

namespace {
void ensure(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}
float* ensure_data(std::vector<float>& v, size_t n) {
  ensure(v, n);
  return v.data();
}
void zero(std::vector<float>& v, size_t n) {
  ensure(v, n);
  std::fill(v.begin(), v.begin() + (long)n, 0.0f);
}
}  // namespace

MoeGpt::MoeGpt(const ModelConfig& model, const MoeConfig& moe, ExpertShard shard, TpShard tp, PipeStage pipe,
               EmbedShard embed)
    : model_(model), moe_(moe), shard_(shard), tp_(tp), pipe_(pipe), embed_(embed) {
  if (model_.hidden % model_.heads != 0)
    throw std::invalid_argument("model.heads must divide model.hidden");
  if (shard_.size < 1 || shard_.rank < 0 || shard_.rank >= shard_.size)
    throw std::invalid_argument("bad expert shard");
  if (tp_.size < 1 || tp_.rank < 0 || tp_.rank >= tp_.size)
    throw std::invalid_argument("bad tensor-parallel shard");
  if (vocab_split() && model_.vocab_size % tp_.size != 0)
    throw std::invalid_argument("parallel.tp = " + std::to_string(tp_.size) + " does not divide model.vocab_size = " +
                                std::to_string(model_.vocab_size) + " (vocabulary-parallel embedding)");
  if (model_.heads % tp_.size != 0)
    throw std::invalid_argument("parallel.tp = " + std::to_string(tp_.size) + " does not divide model.heads = " +
                                std::to_string(model_.heads));
  if (embed_.size < 1 || embed_.rank < 0 || embed_.rank >= embed_.size)
    throw std::invalid_argument("bad embedding partition shard");
  if (embed_split() && model_.hidden % embed_.size != 0)
    throw std::invalid_argument("model.embedding_partition: model.hidden = " + std::to_string(model_.hidden) +
                                " does not divide over " + std::to_string(embed_.size) + " data-parallel ranks");
  if (embed_split() && (tp_.size > 1 || pipe_.stages > 1 || model_.tied_head))
    throw std::invalid_argument("model.embedding_partition needs parallel.tp = 1, parallel.pp = 1 and an untied head");
  if (pipe_.end_block < 0) pipe_.end_block = model_.layers;
  if (pipe_.stages < 1 || pipe_.stage < 0 || pipe_.stage >= pipe_.stages || pipe_.first_block < 0 ||
      pipe_.first_block >= pipe_.end_block || pipe_.end_block > model_.layers || pipe_.in_flight < 1)
    throw std::invalid_argument("bad pipeline stage: blocks [" + std::to_string(pipe_.first_block) + ", " +
                                std::to_string(pipe_.end_block) + ") of stage " + std::to_string(pipe_.stage) +
                                " of " + std::to_string(pipe_.stages));
  head_acts_.resize((size_t)pipe_.in_flight);
  build_params();
}

MoeGpt::~MoeGpt() = default;

void MoeGpt::build_params() {
  const int64_t C = model_.hidden, F = (int64_t)model_.ffn_mult * C, V = model_.vocab_size;
  const int64_t t = tp_.size, Ct = C / t, Ft = F / t, r = tp_.rank;
  const bool split = t > 1;
  auto rows = [&](int64_t n, int parts, bool vector) {  // column-parallel: this rank's rows
    return split ? row_slice(n, vector ? 1 : C, parts, r * n / t, n / t, vector) : TensorSlice{};
  };
  const int64_t Vt = vocab_rows();
  const TensorSlice vocab = vocab_split() ? row_slice(V, C, 1, vocab_first(), Vt, false) : TensorSlice{};
  const int64_t Cp = C / embed_.size;  // partitioned embedding: this rank's columns
  const TensorSlice columns = embed_split() ? column_slice(V, C, embed_.rank * Cp, Cp) : vocab;
  if (pipe_.first() || (pipe_.last() && model_.tied_head)) wte_ = params_.add("embed.wte", {Vt, Cp}, true, columns);
  if (pipe_.first()) wpe_ = params_.add("embed.wpe", {model_.seq_len, C}, true);
  for (int l = pipe_.first_block; l < pipe_.end_block; ++l) {
    auto b = std::make_unique<Block>();
    b->index = l;
    b->acts.resize((size_t)pipe_.in_flight);
    const std::string p = "blocks." + std::to_string(l) + ".";
    b->ln1_w = params_.add(p + "ln1.weight", {C}, false);
    b->ln1_b = params_.add(p + "ln1.bias", {C}, false);
    b->qkv_w = params_.add(p + "attn.qkv.weight", {3 * Ct, C}, true, rows(C, 3, false));
    b->qkv_b = params_.add(p + "attn.qkv.bias", {3 * Ct}, false, rows(C, 3, true));
    b->proj_w = params_.add(p + "attn.proj.weight", {C, Ct}, true, split ? column_slice(C, C, r * Ct, Ct) : TensorSlice{});
    b->proj_b = params_.add(p + "attn.proj.bias", {C}, false);
    b->ln2_w = params_.add(p + "ln2.weight", {C}, false);
    b->ln2_b = params_.add(p + "ln2.bias", {C}, false);
    for (size_t i = 0; i < moe_.moe_layers.size(); ++i)
      if (moe_.moe_layers[i] == l) b->experts = moe_.experts.at(i);
    if (b->experts == 0) {
      b->fc_w = params_.add(p + "ffn.fc.weight", {Ft, C}, true, rows(F, 1, false));
      b->fc_b = params_.add(p + "ffn.fc.bias", {Ft}, false, rows(F, 1, true));
      b->fcproj_w = params_.add(p + "ffn.proj.weight", {C, Ft}, true, split ? column_slice(C, F, r * Ft, Ft) : TensorSlice{});
      b->fcproj_b = params_.add(p + "ffn.proj.bias", {C}, false);
    } else {
      if (moe_.top_k > b->experts)
        throw std::invalid_argument("moe.top_k exceeds the experts of block " + std::to_string(l));
      if (b->experts % shard_.size != 0)
        throw std::invalid_argument("block " + std::to_string(l) + ": " + std::to_string(b->experts) +
                                    " experts do not divide over " + std::to_string(shard_.size) + " EP ranks");
      b->router_w = params_.add(p + "moe.router.w", {b->experts, C}, true);
      const int local = b->experts / shard_.size, first = shard_.rank * local;
      for (int e = first; e < first + local; ++e) {
        const std::string q = p + "moe.experts." + std::to_string(e) + ".";
        if (sliced_experts()) {  // w1 / b1 column-parallel, w2 row-parallel, b2 replicated
          b->expert_first.push_back(params_.add(q + "w1", {Ft, C}, true, rows(F, 1, false)));
          params_.add(q + "b1", {Ft}, false, rows(F, 1, true));
          params_.add(q + "w2", {C, Ft}, true, column_slice(C, F, r * Ft, Ft));
          tp_partial_b2_.push_back(params_.add(q + "b2", {C}, false));
        } else {
          b->expert_first.push_back(params_.add(q + "w1", {F, C}, true));
          params_.add(q + "b1", {F}, false);
          params_.add(q + "w2", {C, F}, true);
          params_.add(q + "b2", {C}, false);
        }
      }
      for (Acts& a : b->acts) a.moe = std::make_unique<MoeLayer>();
    }
    blocks_.push_back(std::move(b));
  }
  if (pipe_.last()) {
    lnf_w_ = params_.add("ln_f.weight", {C}, false);
    lnf_b_ = params_.add("ln_f.bias", {C}, false);
    head_ = model_.tied_head ? wte_ : params_.add("lm_head.weight", {Vt, C}, true, vocab);
  }
  params_.finalize();
  // With sliced experts only TP rank 0 adds (and differentiates) b2; the others' partial
  // outputs leave it out, and its gradient reaches them through the TP all-reduce.
  const bool b2_here = !sliced_experts() || tp_.rank == 0;
  for (auto& b : blocks_) {
    for (size_t first : b->expert_first) {
      b->expert_params.push_back({params_.param(first), params_.param(first + 1), params_.param(first + 2),
                                  b2_here ? params_.param(first + 3) : nullptr});
      b->expert_grads.push_back({params_.grad(first), params_.grad(first + 1), params_.grad(first + 2),
                                 b2_here ? params_.grad(first + 3) : nullptr});
    }
  }
}

void MoeGpt::init(uint64_t seed) {
  const float resid_scale = 1.0f / std::sqrt(2.0f * (float)model_.layers);
  const auto& views = params_.views();
  for (size_t i = 0; i < views.size(); ++i) {
    const ParamView& v = views[i];
    float* p = params_.param(i);
    if (v.shape.size() == 1) {  // LayerNorm weights (".weight") start at 1, biases at 0
      std::fill(p, p + v.numel, v.name.ends_with(".weight") ? 1.0f : 0.0f);
      continue;
    }
    const bool residual_out = v.name.ends_with("attn.proj.weight") ||
                              v.name.ends_with("ffn.proj.weight") || v.name.ends_with(".w2");
    const float std = model_.init_std * (residual_out ? resid_scale : 1.0f);
    uint64_t name_key = 1469598103934665603ull;  // FNV-1a of the name: same stream on any shard
    for (unsigned char ch : v.name) name_key = (name_key ^ ch) * 1099511628211ull;
    Rng rng = Rng::keyed({seed, 0x1417ull, name_key});
    if (v.slice.whole()) {
      for (size_t j = 0; j < v.numel; ++j) p[j] = rng.normal() * std;
      continue;
    }
    // A tensor-parallel slice: the whole tensor's stream, this rank's runs of it, so every
    // tp size starts from the weights of the single-rank model.
    size_t whole = 1;
    for (int64_t d : v.slice.full_shape) whole *= (size_t)d;
    std::vector<float> full(whole);
    for (float& x : full) x = rng.normal() * std;
    for (const auto& [offset, count] : v.slice.runs) p = std::copy_n(full.begin() + (long)offset, count, p);
  }
}

void MoeGpt::distribute(const ParallelContext& par) {
  executor_ = par.executor;
  tp_comm_ = par.tp;
  if (embed_split()) {
    if (!par.dp || par.dp->size() != embed_.size || par.dp->rank() != embed_.rank)
      throw std::invalid_argument("MoeGpt: the embedding partition over " + std::to_string(embed_.size) +
                                  " ranks needs a data-parallel group of that size");
    embed_comm_ = par.dp->dup();  // its own message space: the main thread's exchanges only
  }
  if (tp_.size > 1 && (!tp_comm_ || tp_comm_->size() != tp_.size))
    throw std::invalid_argument("MoeGpt: tensor parallelism over " + std::to_string(tp_.size) +
                                " ranks needs a tensor-parallel group of that size");
  if (sliced_experts() && (!par.tp_dup || par.tp_dup->size() != tp_.size || !par.experts_sliced))
    throw std::invalid_argument("MoeGpt: moe.expert_tp needs the tensor-parallel group's expert-slice communicator");
  if (tp_comm_ && par.topology) {
    std::set<int> nodes;
    for (int q = 0; q < tp_comm_->size(); ++q) nodes.insert(par.topology->node_of(tp_comm_->world_rank(q)));
    tp_role_ = nodes.size() > 1 ? StreamRole::comm_inter : StreamRole::comm_intra;
  }
  tp_partial_ = tp_partial_b2_;
  std::map<int, const MoeStrategy*> block_strategy;
  for (auto& bp : blocks_) {
    Block& b = *bp;
    if (b.experts == 0) continue;
    for (Acts& a : b.acts) {  // every slot's layer gets its own strategy instance
      MoeContext ctx = par.block_context(b.index);
      ctx.experts = b.experts;
      ctx.C = model_.hidden;
      ctx.F = model_.ffn_mult * model_.hidden / (sliced_experts() ? tp_.size : 1);
      ctx.first_local = shard_.rank * (b.experts / shard_.size);
      ctx.local = b.expert_params;
      ctx.local_grads = b.expert_grads;
      std::unique_ptr<MoeStrategy> strategy = par.strategy_for(b.index);
      const bool partial_router = strategy->partial_outputs() || (sliced_experts() && !strategy->sums_slices(ctx));
      if (partial_router && &a == &b.acts.front()) tp_partial_.push_back(b.router_w);
      a.moe->set_strategy(std::move(strategy), std::move(ctx));
      a.moe->set_stats_communicator(par.dp);
      block_strategy[b.index] = a.moe->strategy();
    }
  }
  check_comm_priority(block_strategy);
}

void MoeGpt::tp_allreduce(float* x, size_t n, int layer, ReduceOp op) {
  if (tp_.size == 1) return;
  if (!tp_comm_) throw std::logic_error("MoeGpt: tensor parallelism without distribute()");
  const uint64_t t = (uint64_t)tp_.size, bytes = 2 * (t - 1) * n * sizeof(float) / t;  // ring all-reduce
  auto reduce = [&] { tp_comm_->all_reduce(x, n, DType::f32, op); };
  if (executor_) executor_->run_inline("tp.allreduce", tp_role_, TaskCategory::comm, reduce, layer, 0.0, bytes);
  else reduce();
}

template <class Fn>
void MoeGpt::stage(const char* name, int layer, double flops, Fn&& fn) {
  if (executor_) executor_->run_inline(name, StreamRole::compute, TaskCategory::compute, fn, layer, flops);
  else fn();
}

void MoeGpt::set_routing(const RoutingSpec& spec, uint64_t seed) {
  routing_ = spec;
  routing_seed_ = seed;
}

std::vector<ArenaRange> MoeGpt::dense_ranges() const {
  std::vector<ArenaRange> out;
  const auto& v = params_.views();
  size_t start = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const bool expert = v[i].name.find(".moe.experts.") != std::string::npos;
    if (expert) {
      if (v[i].offset > start) out.push_back({start, v[i].offset - start});
      start = v[i].offset + v[i].numel;
    }
  }
  if (params_.size() > start) out.push_back({start, params_.size() - start});
  return out;
}

const std::vector<ExpertParams>& MoeGpt::expert_params(int block) const {
  const Block* b = local_block(block);
  if (!b || b->expert_params.empty())
    throw std::out_of_range("MoeGpt: block " + std::to_string(block) + " has no experts on this rank");
  return b->expert_params;
}

std::vector<BlockExperts> MoeGpt::expert_ranges() const {
  std::vector<BlockExperts> out;
  for (const auto& b : blocks_)
    if (!b->expert_first.empty()) {
      const ParamView& first = params_.views()[b->expert_first.front()];
      const ParamView& last = params_.views()[b->expert_first.back() + 3];
      out.push_back({b->index, {first.offset, last.offset + last.numel - first.offset}});
    }
  return out;
}

std::vector<ArenaRange> MoeGpt::tp_partial_ranges() const {
  std::vector<ArenaRange> out;
  for (size_t i : tp_partial_) out.push_back({params_.views()[i].offset, params_.views()[i].numel});
  return out;
}

MoeGpt::Block* MoeGpt::local_block(int block) const {
  if (block < pipe_.first_block || block >= pipe_.end_block) return nullptr;
  return blocks_[(size_t)(block - pipe_.first_block)].get();
}

const MoeLayer* MoeGpt::moe_layer(int block) const {
  const Block* b = local_block(block);
  return b ? b->acts[(size_t)last_slot_].moe.get() : nullptr;
}

std::vector<int> MoeGpt::expert_counts(int block) const {
  const Block* b = local_block(block);
  return b ? b->step_counts : std::vector<int>{};
}

std::vector<StrategyDecision> MoeGpt::strategy_decisions(int block) const {
  const MoeLayer* layer = moe_layer(block);
  return layer ? layer->decisions() : std::vector<StrategyDecision>{};
}

void MoeGpt::begin_step() {
  for (auto& b : blocks_) b->step_counts.assign((size_t)b->experts, 0);
}

bool MoeGpt::held_elsewhere(const std::string& name) const {
  if (params_.find(name)) return false;
  if (name.find(".moe.experts.") != std::string::npos) return true;
  if (name.starts_with("blocks.")) {
    const int block = std::atoi(name.c_str() + 7);
    return block >= 0 && block < model_.layers && !local_block(block);
  }
  if (name == "embed.wte" || name == "embed.wpe") return !pipe_.first();
  if (name == "ln_f.weight" || name == "ln_f.bias" || (name == "lm_head.weight" && !model_.tied_head))
    return !pipe_.last();
  return false;
}

ArenaRange MoeGpt::partitioned_embedding() const {
  if (!embed_split()) return {};
  return {params_.views()[wte_].offset, params_.views()[wte_].numel};
}

void MoeGpt::embed_comm_span(const char* name, uint64_t bytes, const std::function<void()>& fn) {
  if (!embed_comm_) throw std::logic_error("MoeGpt: embedding partition without distribute()");
  // The host role, as the step graph's tasks and Distributed's other blocking collectives.
  if (executor_) executor_->run_inline(name, StreamRole::host, TaskCategory::comm, fn, -1, 0.0, bytes);
  else fn();
}

void MoeGpt::embed_all_to_all(const char* name, size_t block) {
  const int P = embed_.size;
  const std::vector<size_t> counts((size_t)P, block);
  std::vector<size_t> displs((size_t)P);
  for (int q = 0; q < P; ++q) displs[(size_t)q] = (size_t)q * block;
  embed_comm_span(name, (uint64_t)(P - 1) * block * sizeof(float), [&] {
    embed_comm_->all_to_all_v(embed_send_.data(), counts.data(), displs.data(), ensure_data(embed_recv_, P * block),
                              counts.data(), displs.data(), DType::f32);
  });
}

// Forward of Fig. 9: ids all-gather (ring: (P-1) N ids to the next rank), lookup of this rank's
// columns for every rank's tokens, all-to-all of the [N, Cp] slices (N Cp floats to each other
// rank), assembly with the positions.
void MoeGpt::partitioned_embed_forward(HeadActs& h, float* x) {
  const int P = embed_.size, Cp = model_.hidden / P, T = h.T;
  const long N = (long)h.B * T;
  const size_t block = (size_t)N * Cp;
  h.all_inputs.resize((size_t)P * N);
  embed_comm_span("embed.ids", (uint64_t)(P - 1) * N * sizeof(int32_t), [&] {
    embed_comm_->all_gather(h.inputs.data(), h.all_inputs.data(), (size_t)N, DType::i32);
  });
  stage("embed.forward", -1, 0.0, [&] {
    embedding_partition_lookup(ensure_data(embed_send_, P * block), h.all_inputs.data(), params_.param(wte_), P * N, Cp);
  });
  embed_all_to_all("embed.a2a", block);
  stage("embed.positions", -1, 0.0, [&] {
    embedding_partition_assemble(x, embed_recv_.data(), params_.param(wpe_), N, T, P, Cp);
  });
}

// Backward of Fig. 9: dresid_ [N, C] cut by column owner, one all-to-all (N Cp floats to each
// other rank), then this rank's columns accumulate every rank's tokens' gradients (rank order,
// token order: the single-rank summation order when each rank holds consecutive batch rows).
void MoeGpt::partitioned_embed_backward(HeadActs& h) {
  const int P = embed_.size, C = model_.hidden, Cp = C / P, T = h.T;
  const long N = (long)h.B * T;
  const size_t block = (size_t)N * Cp;
  stage("embed.grad_slices", -1, 0.0, [&] {
    embedding_partition_split(ensure_data(embed_send_, P * block), dresid_.data(), N, P, Cp);
  });
  embed_all_to_all("embed.grad_a2a", block);
  stage("embed.backward", -1, 0.0, [&] {
    embedding_partition_backward(params_.grad(wte_), embed_recv_.data(), h.all_inputs.data(), P * N, Cp);
    position_embedding_backward(params_.grad(wpe_), dresid_.data(), N, T, C);
  });
}

ArenaRange MoeGpt::tied_embedding_copy() const {
  if (pipe_.first() || wte_ == kNone) return {};
  return {params_.views()[wte_].offset, params_.views()[wte_].numel};
}

LossParts MoeGpt::forward(const int* inputs, const int* targets, int B, int T, long step) {
  if (pipe_.stages != 1) throw std::logic_error("MoeGpt::forward runs the whole model: use forward_micro on a stage");
  return forward_micro(0, {inputs, targets, B, T, step, 0});
}

void MoeGpt::backward() { backward_micro(0, nullptr, 1.0f, true); }

const float* MoeGpt::stage_output(int slot) const { return head_acts_.at((size_t)slot).x_out.data(); }

LossParts MoeGpt::forward_micro(int slot, const MicroBatch& mb, const float* x_in) {
  const int B = mb.B, T = mb.T;
  if (slot < 0 || slot >= pipe_.in_flight) throw std::out_of_range("activation slot " + std::to_string(slot) + " out of range");
  if (T > model_.seq_len) throw std::invalid_argument("sequence longer than model.seq_len");
  if (!pipe_.first() && !x_in) throw std::invalid_argument("a pipeline stage after the first needs its input activation");
  const int C = model_.hidden, F = model_.ffn_mult * C, V = model_.vocab_size, NH = model_.heads;
  const int t = tp_.size, Ct = C / t, Ft = F / t, NHt = NH / t;  // this rank's share (tensor parallel)
  const bool split = t > 1, bias_here = tp_.rank == 0;  // row-parallel biases: added once
  const long N = (long)B * T;
  HeadActs& h = head_acts_[(size_t)slot];
  last_slot_ = slot;
  h.B = B;
  h.T = T;
  h.inputs.assign(mb.inputs, mb.inputs + N);
  if (pipe_.last()) h.targets.assign(mb.targets, mb.targets + N);
  for (long i = 0; i < N; ++i)
    if (mb.inputs[i] < 0 || mb.inputs[i] >= V || (pipe_.last() && (mb.targets[i] < 0 || mb.targets[i] >= V)))
      throw std::out_of_range("token id outside [0, vocab_size)");

  LossParts parts;
  for (auto& b : blocks_)  // before any gate: strategies may start pulling experts (prefetch)
    if (b->experts) b->acts[(size_t)slot].moe->begin_iteration();
  for (size_t i = 0; i < blocks_.size(); ++i) {
    Block& b = *blocks_[i];
    Acts& a = b.acts[(size_t)slot];
    const int l = b.index;
    ensure(a.x, N * C);
    if (dense_use_ && i == 0 && pipe_.first()) dense_use_(-1);
    if (i == 0 && pipe_.first() && embed_split()) partitioned_embed_forward(h, a.x.data());
    if (i == 0 && pipe_.first() && !vocab_split() && !embed_split()) stage("embed.forward", -1, 0.0, [&] {
        encoder_forward(a.x.data(), mb.inputs, params_.param(wte_), params_.param(wpe_), B, T, C);
      });
    if (i == 0 && pipe_.first() && vocab_split()) {  // this rank's vocabulary rows, summed over TP
      stage("embed.forward", -1, 0.0, [&] {
        vocab_slice_embed(a.x.data(), mb.inputs, params_.param(wte_), N, C, vocab_first(), vocab_rows());
      });
      tp_allreduce(a.x.data(), N * C, -1);
      stage("embed.positions", -1, 0.0, [&] {
        const float* wpe = params_.param(wpe_);
#pragma omp parallel for schedule(static)
        for (long n = 0; n < N; ++n)
          for (int c = 0; c < C; ++c) a.x[n * C + c] += wpe[(n % T) * C + c];
      });
    }
    if (dense_use_) dense_use_(l);  // after the embeddings: their compute overlaps block 0's gather
    auto residual_ln2 = [&] {  // res1 += x; ln2 = LayerNorm(res1)
      residual_forward(a.res1.data(), a.res1.data(), a.x.data(), N * C);
      ensure(a.ln2, N * C); ensure(a.ln2_mean, N); ensure(a.ln2_rstd, N);
      layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res1.data(),
                        params_.param(b.ln2_w), params_.param(b.ln2_b), (int)N, C);
    };
    stage("attn.forward", l, attn_forward_flops(N, C, T) / t, [&] {
      if (i > 0) {
        const Acts& prev = blocks_[i - 1]->acts[(size_t)slot];
        residual_forward(a.x.data(), prev.res1.data(), prev.ffn_out.data(), N * C);
      } else if (!pipe_.first()) {
        std::copy_n(x_in, N * C, a.x.data());
      }
      ensure(a.ln1, N * C); ensure(a.ln1_mean, N); ensure(a.ln1_rstd, N);
      layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), a.x.data(),
                        params_.param(b.ln1_w), params_.param(b.ln1_b), (int)N, C);
      ensure(a.qkv, N * 3 * Ct);
      matmul_forward(a.qkv.data(), a.ln1.data(), params_.param(b.qkv_w), params_.param(b.qkv_b), (int)N, C, 3 * Ct);
      ensure(a.preatt, (size_t)B * NHt * T * T); ensure(a.att, (size_t)B * NHt * T * T); ensure(a.atty, N * Ct);
      attention_forward(a.atty.data(), a.preatt.data(), a.att.data(), a.qkv.data(), B, T, Ct, NHt);
      ensure(a.res1, N * C);
      matmul_forward(a.res1.data(), a.atty.data(), params_.param(b.proj_w), bias_here ? params_.param(b.proj_b) : nullptr,
                     (int)N, Ct, C);
      if (!split) residual_ln2();
    });
    if (split) {
      tp_allreduce(a.res1.data(), N * C, l);
      stage("attn.residual", l, 0.0, residual_ln2);
    }
    ensure(a.ffn_out, N * C);
    if (b.experts == 0) {
      stage("ffn.forward", l, ffn_forward_flops(N, C, F) / t, [&] {
        ensure(a.fch, N * Ft); ensure(a.fch_gelu, N * Ft);
        matmul_forward(a.fch.data(), a.ln2.data(), params_.param(b.fc_w), params_.param(b.fc_b), (int)N, C, Ft);
        gelu_forward(a.fch_gelu.data(), a.fch.data(), N * Ft);
        matmul_forward(a.ffn_out.data(), a.fch_gelu.data(), params_.param(b.fcproj_w),
                       bias_here ? params_.param(b.fcproj_b) : nullptr, (int)N, Ft, C);
      });
      tp_allreduce(a.ffn_out.data(), N * C, l);
    } else {
      MoeLayerShape s{(int)N, C, F, b.experts, moe_.top_k, moe_.capacity_factor, moe_.gate_normalize};
      const int* forced = nullptr;
      if (routing_.kind != RoutingSpec::Kind::learned) {
        forced_.resize((size_t)N * moe_.top_k);
        synthetic_expert_choice(forced_.data(), routing_, (int)N, moe_.top_k, b.experts, routing_seed_, mb.step, l,
                                mb.first_token);
        forced = forced_.data();
      }
      const std::vector<ExpertParams>& experts = expert_source_ ? expert_source_->acquire(l) : b.expert_params;
      parts.aux += a.moe->forward(a.ffn_out.data(), a.ln2.data(), params_.param(b.router_w), experts, s, forced);
      if (expert_source_) expert_source_->release(l);
      const std::vector<int>& counts = a.moe->routing().counts;
      b.step_counts.resize((size_t)b.experts, 0);
      for (int e = 0; e < b.experts; ++e) b.step_counts[(size_t)e] += counts[(size_t)e];
    }
  }
  const Acts& last = blocks_.back()->acts[(size_t)slot];
  if (!pipe_.last()) {
    stage("stage.output", -1, 0.0, [&] {
      ensure(h.x_out, N * C);
      residual_forward(h.x_out.data(), last.res1.data(), last.ffn_out.data(), N * C);
    });
    parts.total = moe_.aux_loss_weight * parts.aux;
    return parts;
  }
  const int Vt = vocab_rows();
  if (dense_use_) dense_use_(model_.layers);
  stage("head.forward", -1, head_forward_flops(N, C, Vt), [&] {
    ensure(h.x_out, N * C);
    residual_forward(h.x_out.data(), last.res1.data(), last.ffn_out.data(), N * C);
    ensure(h.lnf, N * C); ensure(h.lnf_mean, N); ensure(h.lnf_rstd, N);
    layernorm_forward(h.lnf.data(), h.lnf_mean.data(), h.lnf_rstd.data(), h.x_out.data(),
                      params_.param(lnf_w_), params_.param(lnf_b_), (int)N, C);
    ensure(logits_, N * Vt); ensure(h.probs, N * Vt); ensure(h.losses, N);
    matmul_forward(logits_.data(), h.lnf.data(), params_.param(head_), nullptr, (int)N, C, Vt);
    if (!vocab_split()) crossentropy_softmax_forward(h.losses.data(), h.probs.data(), logits_.data(), mb.targets, (int)N, V);
    else vocab_ce_row_max(ensure_data(rowmax_, N), logits_.data(), (int)N, Vt);
  });
  if (vocab_split()) {  // softmax statistics over the vocabulary slices
    tp_allreduce(rowmax_.data(), N, -1, ReduceOp::max);
    stage("head.softmax", -1, 0.0, [&] {
      vocab_ce_exp(h.probs.data(), ensure_data(ce_stats_, 2 * N), logits_.data(), rowmax_.data(), mb.targets, (int)N,
                   Vt, vocab_first());
    });
    tp_allreduce(ce_stats_.data(), 2 * N, -1);
    stage("head.loss", -1, 0.0, [&] {
      vocab_ce_finish(h.losses.data(), h.probs.data(), ce_stats_.data(), rowmax_.data(), (int)N, Vt);
    });
  }
  double sum = 0.0;
  for (long i = 0; i < N; ++i) sum += h.losses[i];
  parts.ce = (float)(sum / (double)N);
  parts.total = parts.ce + moe_.aux_loss_weight * parts.aux;
  return parts;
}

void MoeGpt::backward_micro(int slot, const float* dout, float loss_scale, bool last_micro) {
  if (slot < 0 || slot >= pipe_.in_flight) throw std::out_of_range("activation slot " + std::to_string(slot) + " out of range");
  HeadActs& h = head_acts_[(size_t)slot];
  const int B = h.B, T = h.T, C = model_.hidden, F = model_.ffn_mult * C, V = model_.vocab_size,
            NH = model_.heads;
  const int t = tp_.size, Ct = C / t, Ft = F / t, NHt = NH / t;
  const long N = (long)B * T;
  if (N == 0) throw std::logic_error("MoeGpt::backward without forward");
  if (!pipe_.last() && !dout) throw std::invalid_argument("a pipeline stage before the last needs its output gradient");
  auto ready = [&](ArenaRange r) {
    if (grad_ready_ && last_micro) grad_ready_(r);
  };
  if (pipe_.last()) {
    const int Vt = vocab_rows();
    auto lnf_backward = [&] {
      zero(dresid_, N * C);  // d x_out = d (res1 + ffn_out) of the last block
      layernorm_backward(dresid_.data(), params_.grad(lnf_w_), params_.grad(lnf_b_), dscratch_.data(),
                         h.x_out.data(), params_.param(lnf_w_), h.lnf_mean.data(), h.lnf_rstd.data(), (int)N, C);
    };
    stage("head.backward", -1, 2 * head_forward_flops(N, C, Vt), [&] {
      zero(dlogits_, N * Vt);
      if (vocab_split())
        vocab_ce_backward(dlogits_.data(), h.probs.data(), h.targets.data(), loss_scale / (float)N, (int)N, Vt,
                          vocab_first());
      else
        crossentropy_softmax_backward(dlogits_.data(), h.probs.data(), h.targets.data(), loss_scale / (float)N, (int)N, V);
      zero(dscratch_, N * C);  // d lnf (partial over the vocabulary slices when split)
      matmul_backward(dscratch_.data(), params_.grad(head_), nullptr, dlogits_.data(), h.lnf.data(),
                      params_.param(head_), (int)N, C, Vt);
      if (!vocab_split()) lnf_backward();
    });
    if (vocab_split()) {
      tp_allreduce(dscratch_.data(), N * C, -1);
      stage("head.ln_f_backward", -1, 0.0, lnf_backward);
    }
    const ParamView& lnf = params_.views()[lnf_w_];
    ready({lnf.offset, params_.size() - lnf.offset});  // ln_f (+ untied head)
    if (const ArenaRange copy = tied_embedding_copy(); copy.count > 0) ready(copy);  // the head's wte
  } else {
    dresid_.assign(dout, dout + N * C);
  }

  for (size_t i = blocks_.size(); i-- > 0;) {
    Block& b = *blocks_[i];
    Acts& a = b.acts[(size_t)slot];
    const int l = b.index;
    // dresid_ holds d x_{l+1} = d res1 (residual) = d ffn_out
    zero(dscratch_, N * C);  // d ln2
    if (b.experts == 0) {
      stage("ffn.backward", l, 2 * ffn_forward_flops(N, C, F) / t, [&] {
        zero(dscratch2_, N * Ft);  // d fch_gelu
        matmul_backward(dscratch2_.data(), params_.grad(b.fcproj_w), params_.grad(b.fcproj_b), dresid_.data(),
                        a.fch_gelu.data(), params_.param(b.fcproj_w), (int)N, Ft, C);
        std::vector<float>& dfch = a.fch_gelu;  // reuse: fch_gelu no longer needed this micro-batch
        std::fill(dfch.begin(), dfch.begin() + N * Ft, 0.0f);
        gelu_backward(dfch.data(), a.fch.data(), dscratch2_.data(), N * Ft);
        matmul_backward(dscratch_.data(), params_.grad(b.fc_w), params_.grad(b.fc_b), dfch.data(),
                        a.ln2.data(), params_.param(b.fc_w), (int)N, C, Ft);
      });
      tp_allreduce(dscratch_.data(), N * C, l);  // d ln2: partial over the TP ranks' columns
    } else {
      a.moe->backward(dscratch_.data(), params_.grad(b.router_w), b.expert_grads, dresid_.data(),
                      moe_.aux_loss_weight * loss_scale, a.ln2.data(), params_.param(b.router_w), b.expert_params);
    }
    auto ln1_backward = [&] {
      layernorm_backward(dresid_.data(), params_.grad(b.ln1_w), params_.grad(b.ln1_b), dscratch_.data(),
                         a.x.data(), params_.param(b.ln1_w), a.ln1_mean.data(), a.ln1_rstd.data(), (int)N, C);
    };
    stage("attn.backward", l, 2 * attn_forward_flops(N, C, T) / t, [&] {
      layernorm_backward(dresid_.data(), params_.grad(b.ln2_w), params_.grad(b.ln2_b), dscratch_.data(),
                         a.res1.data(), params_.param(b.ln2_w), a.ln2_mean.data(), a.ln2_rstd.data(), (int)N, C);
      // dresid_ now holds d res1 = d x_l (residual) = d attn proj output
      zero(dscratch_, N * Ct);  // d atty
      matmul_backward(dscratch_.data(), params_.grad(b.proj_w), params_.grad(b.proj_b), dresid_.data(),
                      a.atty.data(), params_.param(b.proj_w), (int)N, Ct, C);
      zero(dscratch2_, N * 3 * Ct);  // d qkv
      ensure(dpreatt_, (size_t)B * NHt * T * T); ensure(datt_, (size_t)B * NHt * T * T);
      attention_backward(dscratch2_.data(), dpreatt_.data(), datt_.data(), dscratch_.data(), a.qkv.data(),
                         a.att.data(), B, T, Ct, NHt);
      zero(dscratch_, N * C);  // d ln1
      matmul_backward(dscratch_.data(), params_.grad(b.qkv_w), params_.grad(b.qkv_b), dscratch2_.data(),
                      a.ln1.data(), params_.param(b.qkv_w), (int)N, C, 3 * Ct);
      if (t == 1) ln1_backward();
    });
    if (t > 1) {
      tp_allreduce(dscratch_.data(), N * C, l);  // d ln1: partial over the TP ranks' heads
      stage("attn.ln1_backward", l, 0.0, ln1_backward);
    }
    // the block's dense part: ln1 .. ln2 (+ FFN or router); experts follow it
    const ParamView& first = params_.views()[b.ln1_w];
    const ParamView& lastp = params_.views()[b.experts ? b.router_w : b.fcproj_b];
    ready({first.offset, lastp.offset + lastp.numel - first.offset});
  }
  if (!pipe_.first()) return;  // dresid_ = the gradient of the stage input (input_grad())
  const ParamView& wpe = params_.views()[wpe_];
  if (embed_split()) {
    partitioned_embed_backward(h);
    ready({wpe.offset, wpe.numel});  // the positions only: each rank owns its wte columns
    return;
  }
  stage("embed.backward", -1, 0.0, [&] {
    if (!vocab_split()) return encoder_backward(params_.grad(wte_), params_.grad(wpe_), dresid_.data(), h.inputs.data(), B, T, C);
    vocab_slice_embed_backward(params_.grad(wte_), dresid_.data(), h.inputs.data(), N, C, vocab_first(), vocab_rows());
    position_embedding_backward(params_.grad(wpe_), dresid_.data(), N, T, C);
  });
  ready({0, wpe.offset + wpe.numel});  // embeddings (tied head included)
}

}  // namespace moebench
