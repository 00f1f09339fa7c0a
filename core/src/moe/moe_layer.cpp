#include "moebench/moe/moe_layer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "moebench/dist/communicator.h"

namespace moebench {
namespace {

void check_shape(const MoeLayerShape& s, size_t experts, bool distributed) {
  if (s.N < 0 || s.C <= 0 || s.F <= 0 || s.E <= 0)
    throw std::invalid_argument("MoeLayer: bad shape (N >= 0, C, F, E > 0 required)");
  if (s.K < 1 || s.K > s.E)
    throw std::invalid_argument("MoeLayer: top_k = " + std::to_string(s.K) +
                                " must be in [1, experts = " + std::to_string(s.E) + "]");
  if (!distributed && experts != (size_t)s.E)
    throw std::invalid_argument("MoeLayer: " + std::to_string(experts) +
                                " expert parameter sets for " + std::to_string(s.E) + " experts");
}

}  // namespace

MoeLayer::MoeLayer() = default;
MoeLayer::~MoeLayer() = default;

void MoeLayer::set_strategy(std::unique_ptr<MoeStrategy> strategy, MoeContext ctx) {
  strategy_ = std::move(strategy);
  ctx_ = std::move(ctx);
}

float MoeLayer::forward(float* out, const float* x, const float* router_w,
                        const std::vector<ExpertParams>& experts, const MoeLayerShape& s,
                        const int* forced_experts) {
  have_forward_ = false;  // until this forward completes
  check_shape(s, experts.size(), strategy_ != nullptr);
  s_ = s;
  const int N = s.N, C = s.C, E = s.E, K = s.K;
  RouterOptions opt;
  opt.top_k = K;
  opt.capacity_factor = s.capacity_factor;
  opt.gate_normalize = s.gate_normalize;
  router_forward(routing_, x, router_w, N, C, E, opt, forced_experts);
  if (stats_) globalize_aux(routing_, *stats_);
  const Routing& r = routing_;

  // Dispatch order: kept assignments grouped by expert, in token order within an expert.
  offsets_.assign(E + 1, 0);
  for (int e = 0; e < E; ++e) offsets_[e + 1] = offsets_[e] + r.counts[e];
  const int S = offsets_[E];
  slot_of_.resize((size_t)N * K);
  token_of_.resize(S);
  cursor_.assign(offsets_.begin(), offsets_.end() - 1);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) {
      const int i = n * K + k;
      if (!r.kept[i]) {
        slot_of_[i] = -1;
        continue;
      }
      const int slot = cursor_[r.expert[i]]++;
      slot_of_[i] = slot;
      token_of_[slot] = n;
    }

  xg_.resize((size_t)S * C);
#pragma omp parallel for schedule(static)
  for (int slot = 0; slot < S; ++slot)
    std::memcpy(xg_.data() + (long)slot * C, x + (long)token_of_[slot] * C, sizeof(float) * C);

  y_.resize((size_t)S * C);
  if (strategy_) strategy_->forward(y_.data(), xg_.data(), offsets_, ctx_);
  else bank_.forward(y_.data(), xg_.data(), offsets_, experts, C, s.F);

  // Weighted combine, partitioned by destination token; k in order.
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    float* o = out + (long)n * C;
    std::fill(o, o + C, 0.0f);
    for (int k = 0; k < K; ++k) {
      const int slot = slot_of_[n * K + k];
      if (slot < 0) continue;
      const float g = r.gate[n * K + k];
      const float* y = y_.data() + (long)slot * C;
      for (int c = 0; c < C; ++c) o[c] += g * y[c];
    }
  }
  have_forward_ = true;
  return r.aux;
}

void MoeLayer::backward(float* dx, float* drouter_w, const std::vector<ExpertParams>& dexperts,
                        const float* dout, float aux_weight, const float* x,
                        const float* router_w, const std::vector<ExpertParams>& experts) {
  if (!have_forward_) throw std::logic_error("MoeLayer::backward without forward");
  check_shape(s_, experts.size(), strategy_ != nullptr);
  if (!strategy_ && dexperts.size() != experts.size())
    throw std::invalid_argument("MoeLayer::backward: dexperts and experts differ in size");
  const int N = s_.N, C = s_.C, E = s_.E, K = s_.K;
  const int S = offsets_[E];
  const Routing& r = routing_;

  // dgate[n,k] = dout[n] . y[slot]; dy[slot] = gate[n,k] * dout[n]. Partitioned by token
  // (each slot belongs to exactly one (n,k)).
  dgate_.resize((size_t)N * K);
  dy_.resize((size_t)S * C);
  dxg_.resize((size_t)S * C);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* d = dout + (long)n * C;
    for (int k = 0; k < K; ++k) {
      const int i = n * K + k, slot = slot_of_[i];
      if (slot < 0) {
        dgate_[i] = 0.0f;
        continue;
      }
      const float* y = y_.data() + (long)slot * C;
      float* dy = dy_.data() + (long)slot * C;
      const float g = r.gate[i];
      float dot = 0.0f;
      for (int c = 0; c < C; ++c) {
        dot += d[c] * y[c];
        dy[c] = g * d[c];
      }
      dgate_[i] = dot;
    }
  }

  if (strategy_) strategy_->backward(dxg_.data(), dy_.data(), ctx_);
  else bank_.backward(dxg_.data(), dy_.data(), dexperts, experts);

  // Scatter-add into dx, partitioned by destination token; k in order.
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    float* o = dx + (long)n * C;
    for (int k = 0; k < K; ++k) {
      const int slot = slot_of_[n * K + k];
      if (slot < 0) continue;
      const float* g = dxg_.data() + (long)slot * C;
      for (int c = 0; c < C; ++c) o[c] += g[c];
    }
  }

  // Router: gates (through the optional normalisation) + aux -> dlogits -> dx, dWr.
  dlogits_.resize((size_t)N * E);
  router_backward(dx, drouter_w, dlogits_.data(), dgate_.data(), aux_weight, r, x, router_w, C);
}

void globalize_aux(Routing& r, Communicator& group) {
  const int E = r.E, K = r.K;
  std::vector<double> stats(E + 1 + E, 0.0);  // selections, tokens, probability sums
  for (int e = 0; e < E; ++e) stats[e] = r.selected[e];
  stats[E] = r.N;
  for (int e = 0; e < E; ++e) {
    double psum = 0.0;
    for (int n = 0; n < r.N; ++n) psum += r.probs[(long)n * E + e];
    stats[E + 1 + e] = psum;
  }
  group.all_reduce(stats.data(), stats.size(), DType::f64);
  const double n_total = stats[E];
  double aux = 0.0;
  for (int e = 0; e < E; ++e) {
    r.f[e] = n_total > 0 ? (float)(stats[e] / (n_total * K)) : 0.0f;
    r.P[e] = n_total > 0 ? (float)(stats[E + 1 + e] / n_total) : 0.0f;
    aux += n_total > 0 ? (double)r.f[e] * (stats[E + 1 + e] / n_total) : 0.0;
  }
  r.aux = (float)(E * aux);
}

}  // namespace moebench
