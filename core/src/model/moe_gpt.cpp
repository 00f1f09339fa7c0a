#include "moebench/model/moe_gpt.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "moebench/model/attention.h"
#include "moebench/model/crossentropy.h"
#include "moebench/model/dense_costs.h"
#include "moebench/model/encoder.h"
#include "moebench/tensor/gelu.h"
#include "moebench/model/layernorm.h"
#include "moebench/model/residual.h"
#include "moebench/runtime/executor.h"
#include "moebench/tensor/matmul.h"
#include "moebench/tensor/rng.h"

namespace moebench {

struct MoeGpt::Block {
  int experts = 0;  // 0: dense FFN block
  // parameter indices into the arena
  size_t ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b;
  size_t fc_w = 0, fc_b = 0, fcproj_w = 0, fcproj_b = 0;  // dense FFN
  size_t router_w = 0;                                     // MoE
  std::vector<size_t> expert_first;                        // per expert: index of w1 (b1, w2, b2 follow)
  std::vector<ExpertParams> expert_params, expert_grads;
  std::unique_ptr<MoeLayer> moe;
  // activations ([N,C] unless noted)
  std::vector<float> x, ln1, ln1_mean, ln1_rstd, qkv /*[N,3C]*/, preatt, att /*[B,NH,T,T]*/, atty,
      res1, ln2, ln2_mean, ln2_rstd, fch, fch_gelu /*[N,F]*/, ffn_out;
};

namespace {
void ensure(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}
void zero(std::vector<float>& v, size_t n) {
  ensure(v, n);
  std::fill(v.begin(), v.begin() + (long)n, 0.0f);
}
}  // namespace

MoeGpt::MoeGpt(const ModelConfig& model, const MoeConfig& moe, ExpertShard shard)
    : model_(model), moe_(moe), shard_(shard) {
  if (model_.hidden % model_.heads != 0)
    throw std::invalid_argument("model.heads must divide model.hidden");
  if (shard_.size < 1 || shard_.rank < 0 || shard_.rank >= shard_.size)
    throw std::invalid_argument("bad expert shard");
  build_params();
}

MoeGpt::~MoeGpt() = default;

void MoeGpt::build_params() {
  const int64_t C = model_.hidden, F = (int64_t)model_.ffn_mult * C, V = model_.vocab_size;
  wte_ = params_.add("embed.wte", {V, C}, true);
  wpe_ = params_.add("embed.wpe", {model_.seq_len, C}, true);
  for (int l = 0; l < model_.layers; ++l) {
    auto b = std::make_unique<Block>();
    const std::string p = "blocks." + std::to_string(l) + ".";
    b->ln1_w = params_.add(p + "ln1.weight", {C}, false);
    b->ln1_b = params_.add(p + "ln1.bias", {C}, false);
    b->qkv_w = params_.add(p + "attn.qkv.weight", {3 * C, C}, true);
    b->qkv_b = params_.add(p + "attn.qkv.bias", {3 * C}, false);
    b->proj_w = params_.add(p + "attn.proj.weight", {C, C}, true);
    b->proj_b = params_.add(p + "attn.proj.bias", {C}, false);
    b->ln2_w = params_.add(p + "ln2.weight", {C}, false);
    b->ln2_b = params_.add(p + "ln2.bias", {C}, false);
    for (size_t i = 0; i < moe_.moe_layers.size(); ++i)
      if (moe_.moe_layers[i] == l) b->experts = moe_.experts.at(i);
    if (b->experts == 0) {
      b->fc_w = params_.add(p + "ffn.fc.weight", {F, C}, true);
      b->fc_b = params_.add(p + "ffn.fc.bias", {F}, false);
      b->fcproj_w = params_.add(p + "ffn.proj.weight", {C, F}, true);
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
        b->expert_first.push_back(params_.add(q + "w1", {F, C}, true));
        params_.add(q + "b1", {F}, false);
        params_.add(q + "w2", {C, F}, true);
        params_.add(q + "b2", {C}, false);
      }
      b->moe = std::make_unique<MoeLayer>();
    }
    blocks_.push_back(std::move(b));
  }
  lnf_w_ = params_.add("ln_f.weight", {C}, false);
  lnf_b_ = params_.add("ln_f.bias", {C}, false);
  head_ = model_.tied_head ? wte_ : params_.add("lm_head.weight", {V, C}, true);
  params_.finalize();
  for (auto& b : blocks_) {
    for (size_t first : b->expert_first) {
      b->expert_params.push_back({params_.param(first), params_.param(first + 1),
                                  params_.param(first + 2), params_.param(first + 3)});
      b->expert_grads.push_back({params_.grad(first), params_.grad(first + 1),
                                 params_.grad(first + 2), params_.grad(first + 3)});
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
    for (size_t j = 0; j < v.numel; ++j) p[j] = rng.normal() * std;
  }
}

void MoeGpt::distribute(const ParallelContext& par) {
  executor_ = par.executor;
  for (size_t l = 0; l < blocks_.size(); ++l) {
    Block& b = *blocks_[l];
    if (b.experts == 0) continue;
    MoeContext ctx = par.block_context((int)l);
    ctx.experts = b.experts;
    ctx.C = model_.hidden;
    ctx.F = model_.ffn_mult * model_.hidden;
    ctx.first_local = shard_.rank * (b.experts / shard_.size);
    ctx.local = b.expert_params;
    ctx.local_grads = b.expert_grads;
    b.moe->set_strategy(par.strategy_for((int)l), std::move(ctx));
    b.moe->set_stats_communicator(par.dp);
  }
}

template <class Fn>
void MoeGpt::stage(const char* name, int layer, double flops, Fn&& fn) {
  if (executor_) executor_->run_inline(name, StreamRole::compute, TaskCategory::compute, fn, layer, flops);
  else fn();
}

void MoeGpt::set_routing(const RoutingSpec& spec, uint64_t seed, long first_token) {
  routing_ = spec;
  routing_seed_ = seed;
  first_token_ = first_token;
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

std::vector<ArenaRange> MoeGpt::expert_ranges() const {
  std::vector<ArenaRange> out;
  for (const auto& b : blocks_)
    if (!b->expert_first.empty()) {
      const ParamView& first = params_.views()[b->expert_first.front()];
      const ParamView& last = params_.views()[b->expert_first.back() + 3];
      out.push_back({first.offset, last.offset + last.numel - first.offset});
    }
  return out;
}

const MoeLayer* MoeGpt::moe_layer(int block) const {
  return blocks_.at((size_t)block)->moe.get();
}

LossParts MoeGpt::forward(const int* inputs, const int* targets, int B, int T, long step) {
  if (T > model_.seq_len) throw std::invalid_argument("sequence longer than model.seq_len");
  const int C = model_.hidden, F = model_.ffn_mult * C, V = model_.vocab_size, NH = model_.heads;
  const long N = (long)B * T;
  B_ = B;
  T_ = T;
  inputs_.assign(inputs, inputs + N);
  targets_.assign(targets, targets + N);
  for (long i = 0; i < N; ++i)
    if (inputs[i] < 0 || inputs[i] >= V || targets[i] < 0 || targets[i] >= V)
      throw std::out_of_range("token id outside [0, vocab_size)");

  LossParts parts;
  for (auto& b : blocks_)  // before any gate: strategies may start pulling experts (prefetch)
    if (b->moe) b->moe->begin_iteration();
  for (size_t l = 0; l < blocks_.size(); ++l) {
    Block& b = *blocks_[l];
    ensure(b.x, N * C);
    if (l == 0) stage("embed.forward", -1, 0.0, [&] {
        encoder_forward(b.x.data(), inputs, params_.param(wte_), params_.param(wpe_), B, T, C);
      });
    stage("attn.forward", (int)l, attn_forward_flops(N, C, T), [&] {
      if (l > 0) residual_forward(b.x.data(), blocks_[l - 1]->res1.data(), blocks_[l - 1]->ffn_out.data(), N * C);
      ensure(b.ln1, N * C); ensure(b.ln1_mean, N); ensure(b.ln1_rstd, N);
      layernorm_forward(b.ln1.data(), b.ln1_mean.data(), b.ln1_rstd.data(), b.x.data(),
                        params_.param(b.ln1_w), params_.param(b.ln1_b), (int)N, C);
      ensure(b.qkv, N * 3 * C);
      matmul_forward(b.qkv.data(), b.ln1.data(), params_.param(b.qkv_w), params_.param(b.qkv_b), (int)N, C, 3 * C);
      ensure(b.preatt, (size_t)B * NH * T * T); ensure(b.att, (size_t)B * NH * T * T); ensure(b.atty, N * C);
      attention_forward(b.atty.data(), b.preatt.data(), b.att.data(), b.qkv.data(), B, T, C, NH);
      ensure(b.res1, N * C);
      matmul_forward(b.res1.data(), b.atty.data(), params_.param(b.proj_w), params_.param(b.proj_b), (int)N, C, C);
      residual_forward(b.res1.data(), b.res1.data(), b.x.data(), N * C);
      ensure(b.ln2, N * C); ensure(b.ln2_mean, N); ensure(b.ln2_rstd, N);
      layernorm_forward(b.ln2.data(), b.ln2_mean.data(), b.ln2_rstd.data(), b.res1.data(),
                        params_.param(b.ln2_w), params_.param(b.ln2_b), (int)N, C);
    });
    ensure(b.ffn_out, N * C);
    if (b.experts == 0) {
      stage("ffn.forward", (int)l, ffn_forward_flops(N, C, F), [&] {
        ensure(b.fch, N * F); ensure(b.fch_gelu, N * F);
        matmul_forward(b.fch.data(), b.ln2.data(), params_.param(b.fc_w), params_.param(b.fc_b), (int)N, C, F);
        gelu_forward(b.fch_gelu.data(), b.fch.data(), N * F);
        matmul_forward(b.ffn_out.data(), b.fch_gelu.data(), params_.param(b.fcproj_w),
                       params_.param(b.fcproj_b), (int)N, F, C);
      });
    } else {
      MoeLayerShape s{(int)N, C, F, b.experts, moe_.top_k, moe_.capacity_factor, moe_.gate_normalize};
      const int* forced = nullptr;
      if (routing_.kind != RoutingSpec::Kind::learned) {
        forced_.resize((size_t)N * moe_.top_k);
        synthetic_expert_choice(forced_.data(), routing_, (int)N, moe_.top_k, b.experts, routing_seed_, step,
                                (int)l, first_token_);
        forced = forced_.data();
      }
      parts.aux += b.moe->forward(b.ffn_out.data(), b.ln2.data(), params_.param(b.router_w), b.expert_params,
                                  s, forced);
    }
  }
  stage("head.forward", -1, head_forward_flops(N, C, V), [&] {
    ensure(x_final_, N * C);
    const Block& last = *blocks_.back();
    residual_forward(x_final_.data(), last.res1.data(), last.ffn_out.data(), N * C);
    ensure(lnf_, N * C); ensure(lnf_mean_, N); ensure(lnf_rstd_, N);
    layernorm_forward(lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), x_final_.data(),
                      params_.param(lnf_w_), params_.param(lnf_b_), (int)N, C);
    ensure(logits_, N * V); ensure(probs_, N * V); ensure(losses_, N);
    matmul_forward(logits_.data(), lnf_.data(), params_.param(head_), nullptr, (int)N, C, V);
    crossentropy_softmax_forward(losses_.data(), probs_.data(), logits_.data(), targets, (int)N, V);
  });
  double sum = 0.0;
  for (long i = 0; i < N; ++i) sum += losses_[i];
  parts.ce = (float)(sum / (double)N);
  parts.total = parts.ce + moe_.aux_loss_weight * parts.aux;
  return parts;
}

void MoeGpt::backward() {
  const int B = B_, T = T_, C = model_.hidden, F = model_.ffn_mult * C, V = model_.vocab_size,
            NH = model_.heads;
  const long N = (long)B * T;
  if (N == 0) throw std::logic_error("MoeGpt::backward without forward");
  stage("head.backward", -1, 2 * head_forward_flops(N, C, V), [&] {
    zero(dlogits_, N * V);
    crossentropy_softmax_backward(dlogits_.data(), probs_.data(), targets_.data(), 1.0f / (float)N, (int)N, V);
    zero(dscratch_, N * C);  // d lnf
    matmul_backward(dscratch_.data(), params_.grad(head_), nullptr, dlogits_.data(), lnf_.data(),
                    params_.param(head_), (int)N, C, V);
    zero(dresid_, N * C);  // d x_final = d (res1 + ffn_out) of the last block
    layernorm_backward(dresid_.data(), params_.grad(lnf_w_), params_.grad(lnf_b_), dscratch_.data(),
                       x_final_.data(), params_.param(lnf_w_), lnf_mean_.data(), lnf_rstd_.data(), (int)N, C);
  });
  const ParamView& lnf = params_.views()[lnf_w_];
  if (grad_ready_) grad_ready_({lnf.offset, params_.size() - lnf.offset});  // ln_f (+ untied head)

  std::vector<float> dpreatt, datt;
  for (size_t li = blocks_.size(); li-- > 0;) {
    Block& b = *blocks_[li];
    // dresid_ holds d x_{l+1} = d res1 (residual) = d ffn_out
    zero(dscratch_, N * C);  // d ln2
    if (b.experts == 0) {
      stage("ffn.backward", (int)li, 2 * ffn_forward_flops(N, C, F), [&] {
        zero(dscratch2_, N * F);  // d fch_gelu
        matmul_backward(dscratch2_.data(), params_.grad(b.fcproj_w), params_.grad(b.fcproj_b), dresid_.data(),
                        b.fch_gelu.data(), params_.param(b.fcproj_w), (int)N, F, C);
        std::vector<float>& dfch = b.fch_gelu;  // reuse: fch_gelu no longer needed this step
        std::fill(dfch.begin(), dfch.begin() + N * F, 0.0f);
        gelu_backward(dfch.data(), b.fch.data(), dscratch2_.data(), N * F);
        matmul_backward(dscratch_.data(), params_.grad(b.fc_w), params_.grad(b.fc_b), dfch.data(),
                        b.ln2.data(), params_.param(b.fc_w), (int)N, C, F);
      });
    } else {
      b.moe->backward(dscratch_.data(), params_.grad(b.router_w), b.expert_grads, dresid_.data(),
                      moe_.aux_loss_weight, b.ln2.data(), params_.param(b.router_w), b.expert_params);
    }
    stage("attn.backward", (int)li, 2 * attn_forward_flops(N, C, T), [&] {
      layernorm_backward(dresid_.data(), params_.grad(b.ln2_w), params_.grad(b.ln2_b), dscratch_.data(),
                         b.res1.data(), params_.param(b.ln2_w), b.ln2_mean.data(), b.ln2_rstd.data(), (int)N, C);
      // dresid_ now holds d res1 = d x_l (residual) = d attn proj output
      zero(dscratch_, N * C);  // d atty
      matmul_backward(dscratch_.data(), params_.grad(b.proj_w), params_.grad(b.proj_b), dresid_.data(),
                      b.atty.data(), params_.param(b.proj_w), (int)N, C, C);
      zero(dscratch2_, N * 3 * C);  // d qkv
      ensure(dpreatt, (size_t)B * NH * T * T); ensure(datt, (size_t)B * NH * T * T);
      attention_backward(dscratch2_.data(), dpreatt.data(), datt.data(), dscratch_.data(), b.qkv.data(),
                         b.att.data(), B, T, C, NH);
      zero(dscratch_, N * C);  // d ln1
      matmul_backward(dscratch_.data(), params_.grad(b.qkv_w), params_.grad(b.qkv_b), dscratch2_.data(),
                      b.ln1.data(), params_.param(b.qkv_w), (int)N, C, 3 * C);
      layernorm_backward(dresid_.data(), params_.grad(b.ln1_w), params_.grad(b.ln1_b), dscratch_.data(),
                         b.x.data(), params_.param(b.ln1_w), b.ln1_mean.data(), b.ln1_rstd.data(), (int)N, C);
    });
    if (grad_ready_) {  // the block's dense part: ln1 .. ln2 (+ FFN or router); experts follow it
      const ParamView& first = params_.views()[b.ln1_w];
      const ParamView& last = params_.views()[b.experts ? b.router_w : b.fcproj_b];
      grad_ready_({first.offset, last.offset + last.numel - first.offset});
    }
  }
  stage("embed.backward", -1, 0.0, [&] {
    encoder_backward(params_.grad(wte_), params_.grad(wpe_), dresid_.data(), inputs_.data(), B, T, C);
  });
  if (grad_ready_) {
    const ParamView& wpe = params_.views()[wpe_];
    grad_ready_({0, wpe.offset + wpe.numel});  // embeddings (tied head included)
  }
}

double MoeGpt::forward_flops_per_token(int T) const {
  const double C = model_.hidden, F = (double)model_.ffn_mult * C, V = model_.vocab_size;
  double flops = 2.0 * C * V;  // LM head
  for (const auto& b : blocks_) {
    flops += 2.0 * C * 3 * C + 2.0 * C * C;  // qkv + projection
    flops += 2.0 * 2.0 * C * (T + 1) / 2.0;  // causal QK^T and AV, average context (T+1)/2
    if (b->experts == 0) flops += 2.0 * 2.0 * C * F;
    else flops += 2.0 * C * b->experts + moe_.top_k * 2.0 * 2.0 * C * F;
  }
  return flops;
}

}  // namespace moebench
