#include "moebench/model/moe_gpt.h"
#include "moe_gpt_parts.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>

#include "moebench/dist/communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/model/dense_costs.h"
#include "moebench/moe/block_graph.h"
#include "moebench/model/stage_graph.h"
#include "moebench/runtime/thread_executor.h"
#include "moebench/tensor/rng.h"

namespace moebench {
namespace {

// An array that grows with the micro-batch's tokens (activations, gradient scratch): its
// out-of-memory error says what to change.
DeviceArray<float> batch_array(Backend& be, const std::string& what) {
  return DeviceArray<float>(be, what,
                            "lower train.batch_size or model.seq_len, or raise parallel.microbatches (the activations "
                            "grow with the micro-batch's tokens)");
}

}  // namespace

MoeGpt::MoeGpt(const ModelConfig& model, const MoeConfig& moe, ExpertShard shard, TpShard tp, PipeStage pipe,
               EmbedShard embed, Backend& backend)
    : be_(backend), model_(model), moe_(moe), shard_(shard), tp_(tp), pipe_(pipe), embed_(embed),
      rowmax_(batch_array(backend, "the vocabulary-parallel row maxima")),
      ce_stats_(batch_array(backend, "the vocabulary-parallel sums")),
      embed_send_(batch_array(backend, "the embedding partition's slices")),
      embed_recv_(batch_array(backend, "the embedding partition's slices")), logits_(batch_array(backend, "the logits")),
      dresid_(batch_array(backend, "the residual gradient")), dscratch_(batch_array(backend, "gradient scratch")),
      dscratch2_(batch_array(backend, "gradient scratch")), dlogits_(batch_array(backend, "the logits' gradient")),
      dpreatt_(batch_array(backend, "the attention scores' gradient")),
      datt_(batch_array(backend, "the attention weights' gradient")) {
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
  for (int s = 0; s < pipe_.in_flight; ++s) head_acts_.emplace_back(be_);
  build_params();
}

MoeGpt::Acts::Acts(Backend& be, int block) {
  const std::string p = "blocks." + std::to_string(block) + " activations (";
  for (auto [array, name] : {std::pair{&x, "x"}, {&ln1, "ln1"}, {&ln1_mean, "ln1 mean"}, {&ln1_rstd, "ln1 rstd"},
                             {&qkv, "qkv"}, {&preatt, "attention scores"}, {&att, "attention weights"},
                             {&atty, "attention output"}, {&res1, "residual"}, {&ln2, "ln2"}, {&ln2_mean, "ln2 mean"},
                             {&ln2_rstd, "ln2 rstd"}, {&fch, "ffn hidden"}, {&fch_gelu, "ffn gelu"},
                             {&ffn_out, "ffn output"}})
    *array = batch_array(be, p + name + ")");
}

MoeGpt::HeadActs::HeadActs(Backend& be)
    : inputs(be, "the token ids"), targets(be, "the targets"), batch(be), all_inputs(be, "every rank's token ids"),
      x_out(batch_array(be, "the stage output")), lnf(batch_array(be, "ln_f activations")),
      lnf_mean(batch_array(be, "ln_f mean")), lnf_rstd(batch_array(be, "ln_f rstd")),
      probs(batch_array(be, "the probabilities")), losses(batch_array(be, "the per-token losses")),
      din(batch_array(be, "the stage input gradient")) {}

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
    for (int s = 0; s < pipe_.in_flight; ++s) b->acts.emplace_back(be_, l);
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
      for (Acts& a : b->acts) a.moe = std::make_unique<MoeLayer>(be_.make_moe_rows());
    }
    blocks_.push_back(std::move(b));
  }
  if (pipe_.last()) {
    lnf_w_ = params_.add("ln_f.weight", {C}, false);
    lnf_b_ = params_.add("ln_f.bias", {C}, false);
    head_ = model_.tied_head ? wte_ : params_.add("lm_head.weight", {Vt, C}, true, vocab);
  }
  params_.finalize(be_);
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
  std::vector<float> staging(be_.device_memory() ? params_.size() : 0);  // device memory: written on the host first
  float* base = be_.device_memory() ? staging.data() : params_.data();
  for (size_t i = 0; i < views.size(); ++i) {
    const ParamView& v = views[i];
    float* p = base + v.offset;
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
  if (!staging.empty()) be_.to_device(params_.data(), staging.data(), staging.size() * sizeof(float));
}

void MoeGpt::distribute(const ParallelContext& par) {
  reset_graph();  // tasks of the undistributed model ran on its own executor
  executor_ = par.executor;
  tp_comm_ = par.tp;
  if (embed_split()) {
    if (!par.dp || par.dp->size() != embed_.size || par.dp->rank() != embed_.rank)
      throw std::invalid_argument("MoeGpt: the embedding partition over " + std::to_string(embed_.size) +
                                  " ranks needs a data-parallel group of that size");
    // its own message space (the main thread's exchanges only), in the arrays' memory
    embed_comm_ = par.rows_group ? par.rows_group(*par.dp) : par.dp->dup();
  }
  if (tp_.size > 1 && (!tp_comm_ || tp_comm_->size() != tp_.size))
    throw std::invalid_argument("MoeGpt: tensor parallelism over " + std::to_string(tp_.size) +
                                " ranks needs a tensor-parallel group of that size");
  if (sliced_experts() && (!par.tp_dup || par.tp_dup->size() != tp_.size || !par.experts_sliced))
    throw std::invalid_argument("MoeGpt: moe.expert_tp needs the tensor-parallel group's expert-slice communicator");
  // whole experts on every rank: nothing to exchange or sum (sliced ones sum their partial outputs)
  if (be_.device_memory() && shard_.size == 1 && !sliced_experts()) return distribute_replicated(par);
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

// A device backend's model over data-parallel ranks that each hold every expert: the MoE blocks
// stay local (no strategy) and sum their routing statistics over the DP group, so the aux loss
// is the global batch's (MoeLayer::set_stats_communicator).
void MoeGpt::distribute_replicated(const ParallelContext& par) {
  if (!par.dp) throw std::invalid_argument("MoeGpt: data parallelism needs its group");
  stats_comm_ = par.dp->dup();  // its own message space: the blocks' forward tasks only
  for (auto& b : blocks_)
    for (Acts& a : b->acts)
      if (a.moe) a.moe->set_stats_communicator(stats_comm_.get());
}

void MoeGpt::set_expert_source(ExpertSource* source) {
  if (source && be_.device_memory())
    throw std::invalid_argument("expert offloading (an expert source) on the " + be_.name() + " backend is not built yet");
  expert_source_ = source;
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
  reset_graph();
}

void MoeGpt::reset_graph() {
  if (graph_.submitted() > 0) executor().synchronize();
  graph_ = TaskGraph();
  pass_losses_.clear();
  pending_losses_.clear();
  if (be_.mixed_precision()) {
    // The weights may have changed since the last graph (the optimizer, a load, a broadcast):
    // their bf16 copies are rewritten, and complete before any task of the next graph runs on
    // any stream (ZeRO-3's gathers then rewrite the parts they fill).
    be_.weights_changed(params_.data(), params_.size());
    executor().synchronize();
  }
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

ArenaRange MoeGpt::tied_embedding_copy() const {
  if (pipe_.first() || wte_ == kNone) return {};
  return {params_.views()[wte_].offset, params_.views()[wte_].numel};
}

LossParts MoeGpt::forward(const int* inputs, const int* targets, int B, int T, long step) {
  if (pipe_.stages != 1) throw std::logic_error("MoeGpt::forward runs the whole model: use forward_micro on a stage");
  reset_graph();
  return forward_micro(0, {inputs, targets, B, T, step, 0});
}

void MoeGpt::backward() { backward_micro(0, nullptr, 1.0f, true); }

const float* MoeGpt::stage_output(int slot) const { return head_acts_.at((size_t)slot).x_out.data(); }

// The tasks of one slot's pass with this model's buffers.
class MoeGpt::Binding : public StageBinding {
 public:
  Binding(MoeGpt& m, int slot) : m_(m), slot_(slot) {}
  std::function<void()> action(StageOp op, int layer) override {
    return [&m = m_, op, layer, slot = slot_] { m.run_op(op, layer, slot); };
  }
  TaskId moe_pass(TaskGraph& g, int block, MoePass pass, TaskId after) override {
    return m_.moe_pass(g, block, slot_, pass, after);
  }
  TaskId use_part(TaskGraph& g, int part, TaskId after) override {
    return m_.dense_use_ ? m_.dense_use_(g, part, after) : after;
  }
  void grad_ready(TaskGraph& g, int part, TaskId after) override {
    const bool block = part >= 0 && part < m_.model_.layers;
    if (m_.grad_ready_) m_.grad_ready_(g, m_.part_range(part), block ? part : -1, after);
  }

 private:
  MoeGpt& m_;
  int slot_;
};

StageShape MoeGpt::stage_shape(int B, int T) const {
  StageShape s;
  s.model = model_;
  for (size_t i = 0; i < moe_.moe_layers.size(); ++i) s.experts[moe_.moe_layers[i]] = moe_.experts.at(i);
  s.tp = tp_;
  s.pipe = pipe_;
  s.embed = embed_;
  s.B = B;
  s.T = T;
  for (int q = 0; q < tp_.size; ++q) s.tp_world.push_back(tp_comm_ ? tp_comm_->world_rank(q) : q);
  for (int q = 0; q < embed_.size; ++q) s.dp_world.push_back(embed_comm_ ? embed_comm_->world_rank(q) : q);
  return s;
}

Executor& MoeGpt::executor() {
  if (executor_) return *executor_;
  if (!own_executor_) own_executor_ = std::make_unique<ThreadExecutor>(0);
  return *own_executor_;
}

void MoeGpt::use_executor(Executor& ex) {
  reset_graph();  // tasks already submitted ran on the previous executor
  executor_ = &ex;
}

void MoeGpt::run_until(TaskId end) {
  Executor& ex = executor();
  ex.submit(graph_);
  ex.wait(graph_, end);
  if (own_executor_) own_executor_->take_spans();  // nobody reads an undistributed model's spans
}

TaskId MoeGpt::moe_pass(TaskGraph& g, int block, int slot, MoePass pass, TaskId after) {
  Block& b = *local_block(block);
  Acts& a = b.acts[(size_t)slot];
  HeadActs& h = head_acts_[(size_t)slot];
  const long N = h.N();
  const int l = b.index;
  if (pass == MoePass::backward) {
    const float aux_weight = moe_.aux_loss_weight * h.loss_scale;
    if (a.moe->strategy())
      return a.moe->add_backward(g, after, dscratch_.data(), params_.grad(b.router_w), dresid_.data(), aux_weight,
                                 a.ln2.data(), params_.param(b.router_w));
    GraphTask t;  // the experts on this rank (no strategy): one task
    t.name = "moe.backward";
    t.layer = l;
    t.action = [this, &b, &a, N, aux_weight] {
      dscratch_.zero((size_t)N * model_.hidden);
      a.moe->backward(dscratch_.data(), params_.grad(b.router_w), b.expert_grads, dresid_.data(), aux_weight,
                      a.ln2.data(), params_.param(b.router_w), b.expert_params);
    };
    return g.add(std::move(t), {after});
  }
  const int C = model_.hidden;
  const MoeLayerShape s{(int)N, C, model_.ffn_mult * C, b.experts, moe_.top_k, moe_.capacity_factor, moe_.gate_normalize};
  const int* forced = nullptr;
  if (routing_.kind != RoutingSpec::Kind::learned) {
    a.forced.resize((size_t)N * moe_.top_k);
    synthetic_expert_choice(a.forced.data(), routing_, (int)N, moe_.top_k, b.experts, routing_seed_, h.step, l,
                            h.first_token);
    forced = a.forced.data();
  }
  if (a.moe->strategy())
    return a.moe->add_forward(g, executor(), after, a.ffn_out.data(), a.ln2.data(), params_.param(b.router_w), s, forced);
  GraphTask t;
  t.name = "moe.forward";
  t.layer = l;
  t.action = [this, &b, &a, s, forced, l] {
    const std::vector<ExpertParams>& experts = expert_source_ ? expert_source_->acquire(l) : b.expert_params;
    a.moe->forward(a.ffn_out.data(), a.ln2.data(), params_.param(b.router_w), experts, s, forced);
    if (expert_source_) expert_source_->release(l);
  };
  return g.add(std::move(t), {after});
}

ArenaRange MoeGpt::part_range(int part) const {
  const auto& v = params_.views();
  if (part == kEmbeddingsPart) {
    const ParamView& wpe = v[wpe_];
    if (embed_split()) return {wpe.offset, wpe.numel};  // the positions only: each rank owns its wte columns
    return {0, wpe.offset + wpe.numel};                  // embeddings (tied head included)
  }
  if (part == model_.layers) return {v[lnf_w_].offset, params_.size() - v[lnf_w_].offset};  // ln_f (+ untied head)
  if (part == model_.layers + 1) return tied_embedding_copy();
  const Block& b = *local_block(part);  // the block's dense part: ln1 .. ln2 (+ FFN or router)
  const ParamView& first = v[b.ln1_w];
  if (experts_in_parts_ && !b.expert_first.empty()) {  // .. and its experts (w1, b1, w2, b2 each)
    const ParamView& last = v[b.expert_first.back() + 3];
    return {first.offset, last.offset + last.numel - first.offset};
  }
  const ParamView& lastp = v[b.experts ? b.router_w : b.fcproj_b];
  return {first.offset, lastp.offset + lastp.numel - first.offset};
}

void MoeGpt::add_iteration_start(TaskGraph& g, int slot, TaskId after) {
  if (slot < 0 || slot >= pipe_.in_flight) throw std::out_of_range("activation slot " + std::to_string(slot) + " out of range");
  for (auto& b : blocks_)
    if (b->experts) b->acts[(size_t)slot].moe->add_iteration_start(g, after);
}

TaskId MoeGpt::add_forward(TaskGraph& g, int slot, const MicroBatch& mb, const float* x_in, TaskId after) {
  const int B = mb.B, T = mb.T;
  if (slot < 0 || slot >= pipe_.in_flight) throw std::out_of_range("activation slot " + std::to_string(slot) + " out of range");
  if (T > model_.seq_len) throw std::invalid_argument("sequence longer than model.seq_len");
  if (!pipe_.first() && !x_in) throw std::invalid_argument("a pipeline stage after the first needs its input activation");
  const int V = model_.vocab_size;
  const long N = (long)B * T;
  for (long i = 0; i < N; ++i)
    if (mb.inputs[i] < 0 || mb.inputs[i] >= V || (pipe_.last() && (mb.targets[i] < 0 || mb.targets[i] >= V)))
      throw std::out_of_range("token id outside [0, vocab_size)");
  HeadActs& h = head_acts_[(size_t)slot];
  last_slot_ = slot;
  h.B = B;
  h.T = T;
  h.step = mb.step;
  h.first_token = mb.first_token;
  h.x_in = x_in;
  h.aux = 0.0f;
  // The tokens go to the model's memory in the pass's batch.copy_in task (copy role), from
  // page-locked memory: the previous pass of this slot has ended, so its copy has run.
  int* batch = h.batch.ensure_data(2 * (size_t)N);
  if (pipe_.first()) {
    std::copy(mb.inputs, mb.inputs + N, batch);
    h.inputs.ensure((size_t)N);
  }
  if (pipe_.last()) {
    std::copy(mb.targets, mb.targets + N, batch + N);
    h.targets.ensure((size_t)N);
  }
  const size_t NC = (size_t)N * model_.hidden;
  for (auto& b : blocks_) {  // the buffers the tasks are bound to
    Acts& a = b->acts[(size_t)slot];
    a.x.ensure(NC);
    a.ln2.ensure(NC);
    a.ffn_out.ensure(NC);
  }
  Binding binding(*this, slot);
  return add_stage_forward(g, stage_shape(B, T), binding, after, mb.chunk);
}

TaskId MoeGpt::add_backward(TaskGraph& g, int slot, const float* dout, float loss_scale, bool last_micro, int chunk,
                            TaskId after) {
  if (slot < 0 || slot >= pipe_.in_flight) throw std::out_of_range("activation slot " + std::to_string(slot) + " out of range");
  HeadActs& h = head_acts_[(size_t)slot];
  const long N = h.N();
  if (N == 0) throw std::logic_error("MoeGpt::backward without forward");
  if (!pipe_.last() && !dout) throw std::invalid_argument("a pipeline stage before the last needs its output gradient");
  h.loss_scale = loss_scale;
  h.dout = dout;
  const size_t NC = (size_t)N * model_.hidden;
  dscratch_.ensure(NC);  // the MoE blocks' tasks are bound to these
  dresid_.ensure(NC);
  Binding binding(*this, slot);
  return add_stage_backward(g, stage_shape(h.B, h.T), binding, after, chunk, last_micro);
}

const float* MoeGpt::input_grad(int slot) const { return head_acts_.at((size_t)slot).din.data(); }

LossParts MoeGpt::forward_micro(int slot, const MicroBatch& mb, const float* x_in) {
  add_iteration_start(graph_, slot, {});
  run_until(add_forward(graph_, slot, mb, x_in, {}));
  const HeadActs& h = head_acts_[(size_t)slot];
  LossParts parts;
  parts.ce = pipe_.last() ? pass_losses().back().ce : 0.0f;
  parts.aux = h.aux;
  parts.total = parts.ce + moe_.aux_loss_weight * parts.aux;
  return parts;
}

void MoeGpt::backward_micro(int slot, const float* dout, float loss_scale, bool last_micro, int chunk) {
  run_until(add_backward(graph_, slot, dout, loss_scale, last_micro, chunk, {}));
}

}  // namespace moebench
