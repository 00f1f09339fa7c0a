#include "moebench/moe/moe_layer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "moebench/model/gelu.h"
#include "moebench/tensor/matmul.h"

namespace moebench {

namespace {

// For every expert e: dbias_e[OC] += sum over its slot rows of d[S,OC] (rows
// [offsets[e], offsets[e+1])). One parallel loop over (expert, column block) pairs; each column
// is summed row by row in order, as matmul_backward does, so the result does not depend on
// the thread count.
void experts_bias_backward(const std::vector<ExpertParams>& dexperts, float* ExpertParams::*bias,
                           const float* d, const std::vector<int>& offsets, int OC) {
  constexpr int kBlock = 64;
  const int blocks = (OC + kBlock - 1) / kBlock;
  const int E = (int)dexperts.size();
#pragma omp parallel for schedule(static)
  for (int item = 0; item < E * blocks; ++item) {
    const int e = item / blocks, b = item % blocks;
    const int j0 = b * kBlock, j1 = std::min(OC, j0 + kBlock);
    float* db = dexperts[e].*bias;
    for (int m = offsets[e]; m < offsets[e + 1]; ++m) {
      const float* row = d + (long)m * OC;
      for (int j = j0; j < j1; ++j) db[j] += row[j];
    }
  }
}

void check_shape(const MoeLayerShape& s, size_t experts) {
  if (s.N < 0 || s.C <= 0 || s.F <= 0 || s.E <= 0)
    throw std::invalid_argument("MoeLayer: bad shape (N >= 0, C, F, E > 0 required)");
  if (s.K < 1 || s.K > s.E)
    throw std::invalid_argument("MoeLayer: top_k = " + std::to_string(s.K) +
                                " must be in [1, experts = " + std::to_string(s.E) + "]");
  if (experts != (size_t)s.E)
    throw std::invalid_argument("MoeLayer: " + std::to_string(experts) +
                                " expert parameter sets for " + std::to_string(s.E) + " experts");
}

}  // namespace

float MoeLayer::forward(float* out, const float* x, const float* router_w,
                        const std::vector<ExpertParams>& experts, const MoeLayerShape& s,
                        const int* forced_experts) {
  have_forward_ = false;  // until this forward completes
  check_shape(s, experts.size());
  s_ = s;
  const int N = s.N, C = s.C, F = s.F, E = s.E, K = s.K;
  RouterOptions opt;
  opt.top_k = K;
  opt.capacity_factor = s.capacity_factor;
  opt.gate_normalize = s.gate_normalize;
  router_forward(routing_, x, router_w, N, C, E, opt, forced_experts);
  const Routing& r = routing_;

  // Dispatch order: kept assignments grouped by expert, in token order within an expert.
  offsets_.assign(E + 1, 0);
  for (int e = 0; e < E; ++e) offsets_[e + 1] = offsets_[e] + r.counts[e];
  const int S = offsets_[E];
  slot_of_.resize((size_t)N * K);
  token_of_.resize(S);
  nk_of_.resize(S);
  {
    std::vector<int>& cursor = cursor_;  // next free slot per expert
    cursor.assign(offsets_.begin(), offsets_.end() - 1);
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) {
        const int i = n * K + k;
        if (!r.kept[i]) {
          slot_of_[i] = -1;
          continue;
        }
        const int slot = cursor[r.expert[i]]++;
        slot_of_[i] = slot;
        token_of_[slot] = n;
        nk_of_[slot] = i;
      }
  }

  // Gather.
  xg_.resize((size_t)S * C);
#pragma omp parallel for schedule(static)
  for (int slot = 0; slot < S; ++slot)
    std::memcpy(xg_.data() + (long)slot * C, x + (long)token_of_[slot] * C, sizeof(float) * C);

  // Experts: h = xg W1^T (one GEMM per expert), then h += b1 and a = gelu(h) row by row,
  // then y = a W2^T + b2 (one GEMM per expert).
  h_.resize((size_t)S * F);
  a_.resize((size_t)S * F);
  y_.resize((size_t)S * C);
  for (int e = 0; e < E; ++e) {
    const int off = offsets_[e], M = offsets_[e + 1] - off;
    matmul_forward(h_.data() + (long)off * F, xg_.data() + (long)off * C, experts[e].w1, nullptr,
                   M, C, F);
  }
#pragma omp parallel for schedule(static)
  for (int slot = 0; slot < S; ++slot) {
    float* h = h_.data() + (long)slot * F;
    const float* b1 = experts[r.expert[nk_of_[slot]]].b1;
    for (int j = 0; j < F; ++j) h[j] += b1[j];
    gelu_forward(a_.data() + (long)slot * F, h, F);
  }
  for (int e = 0; e < E; ++e) {
    const int off = offsets_[e], M = offsets_[e + 1] - off;
    matmul_forward(y_.data() + (long)off * C, a_.data() + (long)off * F, experts[e].w2,
                   experts[e].b2, M, F, C);
  }

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
  check_shape(s_, experts.size());
  if (dexperts.size() != experts.size())
    throw std::invalid_argument("MoeLayer::backward: dexperts and experts differ in size");
  const int N = s_.N, C = s_.C, F = s_.F, E = s_.E, K = s_.K;
  const int S = offsets_[E];
  const Routing& r = routing_;

  // dgate[n,k] = dout[n] . y[slot]; dy[slot] = gate[n,k] * dout[n]; the rows of da and dxg
  // that matmul_backward accumulates into are zeroed here too. Partitioned by token (each
  // slot belongs to exactly one (n,k)).
  dgate_.resize((size_t)N * K);
  dy_.resize((size_t)S * C);
  da_.resize((size_t)S * F);
  dh_.resize((size_t)S * F);
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
      std::fill_n(da_.data() + (long)slot * F, F, 0.0f);
      std::fill_n(dxg_.data() + (long)slot * C, C, 0.0f);
    }
  }

  // W2: da = dy W2, dW2 += dy^T a (one call per expert), db2 += sum dy.
  for (int e = 0; e < E; ++e) {
    const int off = offsets_[e], M = offsets_[e + 1] - off;
    matmul_backward(da_.data() + (long)off * F, dexperts[e].w2, nullptr, dy_.data() + (long)off * C,
                    a_.data() + (long)off * F, experts[e].w2, M, F, C);
  }
  experts_bias_backward(dexperts, &ExpertParams::b2, dy_.data(), offsets_, C);

  // GeLU, row by row.
#pragma omp parallel for schedule(static)
  for (int slot = 0; slot < S; ++slot) {
    float* dh = dh_.data() + (long)slot * F;
    std::fill_n(dh, F, 0.0f);
    gelu_backward(dh, h_.data() + (long)slot * F, da_.data() + (long)slot * F, F);
  }

  // W1: dxg = dh W1, dW1 += dh^T xg (one call per expert), db1 += sum dh.
  for (int e = 0; e < E; ++e) {
    const int off = offsets_[e], M = offsets_[e + 1] - off;
    matmul_backward(dxg_.data() + (long)off * C, dexperts[e].w1, nullptr,
                    dh_.data() + (long)off * F, xg_.data() + (long)off * C, experts[e].w1, M, C, F);
  }
  experts_bias_backward(dexperts, &ExpertParams::b1, dh_.data(), offsets_, F);

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

}  // namespace moebench
