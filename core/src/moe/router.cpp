#include "moebench/moe/router.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "moebench/tensor/matmul.h"

namespace moebench {

int Routing::dropped() const {
  int d = 0;
  for (uint8_t k : kept) d += k ? 0 : 1;
  return d;
}

int expert_capacity(float capacity_factor, int N, int K, int E) {
  if (!(capacity_factor > 0.0f) || E <= 0) return 0;
  double c = (double)capacity_factor * (double)N * (double)K / (double)E;
  c *= (1.0 - 1e-6);  // float slack: 1.1f * 20 is 22.0000005, meant as 22
  c = std::min(std::ceil(c), (double)N * K);  // more than N*K can never be used
  return std::max(1, (int)c);
}

namespace {

void check_options(int N, int E, const RouterOptions& opt) {
  if (N < 0) throw std::invalid_argument("router: negative token count");
  if (E <= 0) throw std::invalid_argument("router: need at least one expert");
  if (opt.top_k < 1 || opt.top_k > E)
    throw std::invalid_argument("router: top_k = " + std::to_string(opt.top_k) +
                                " must be in [1, experts = " + std::to_string(E) + "]");
  if (opt.capacity_factor < 0.0f || !std::isfinite(opt.capacity_factor))
    throw std::invalid_argument("router: capacity_factor must be >= 0");
}

void softmax_rows(float* probs, const float* logits, int N, int E) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* l = logits + (long)n * E;
    float* p = probs + (long)n * E;
    float mx = l[0];
    for (int e = 1; e < E; ++e) mx = std::max(mx, l[e]);
    float sum = 0.0f;
    for (int e = 0; e < E; ++e) {
      p[e] = std::exp(l[e] - mx);
      sum += p[e];
    }
    const float inv = 1.0f / sum;
    for (int e = 0; e < E; ++e) p[e] *= inv;
  }
}

// Top-k by descending probability, ties to the lower index (strict > while scanning up).
void top_k_rows(int* expert, const float* probs, int N, int E, int K) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* p = probs + (long)n * E;
    int* out = expert + (long)n * K;
    for (int k = 0; k < K; ++k) {
      int best = -1;
      for (int e = 0; e < E; ++e) {
        bool taken = false;
        for (int j = 0; j < k; ++j) taken |= (out[j] == e);
        if (taken) continue;
        if (best < 0 || p[e] > p[best]) best = e;
      }
      out[k] = best;
    }
  }
}

// Routes from r.logits (already holding [N,E]).
void route_logits_in_place(Routing& r, int N, int E, const RouterOptions& opt,
                           const int* forced_experts, const GatePolicy& policy) {
  const int K = opt.top_k;
  r.N = N;
  r.E = E;
  r.K = K;
  r.gate_normalize = opt.gate_normalize;
  r.capacity = expert_capacity(opt.capacity_factor, N, K, E);
  r.probs.resize((size_t)N * E);
  r.expert.resize((size_t)N * K);
  r.gate.resize((size_t)N * K);
  r.kept.assign((size_t)N * K, 0);
  r.selected.assign(E, 0);
  r.counts.assign(E, 0);
  r.f.assign(E, 0.0f);
  r.P.assign(E, 0.0f);
  r.aux = 0.0f;

  softmax_rows(r.probs.data(), r.logits.data(), N, E);

  if (forced_experts) {
    for (long i = 0; i < (long)N * K; ++i) {
      const int e = forced_experts[i];
      if (e < 0 || e >= E)
        throw std::invalid_argument("router: forced expert " + std::to_string(e) +
                                    " out of range [0, " + std::to_string(E) + ")");
      r.expert[i] = e;
    }
  } else {
    top_k_rows(r.expert.data(), r.probs.data(), N, E, K);
  }
  if (policy) {
    policy(r);
    if (r.expert.size() != (size_t)N * K) throw std::logic_error("router: the gate policy resized the choice");
    for (const int e : r.expert)
      if (e < 0 || e >= E)
        throw std::logic_error("router: the gate policy chose expert " + std::to_string(e) + " out of range [0, " +
                               std::to_string(E) + ")");
  }

  // Gate weights: the chosen probabilities, optionally renormalised over the k.
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* p = r.probs.data() + (long)n * E;
    const int* ex = r.expert.data() + (long)n * K;
    float* g = r.gate.data() + (long)n * K;
    float sum = 0.0f;
    for (int k = 0; k < K; ++k) {
      g[k] = p[ex[k]];
      sum += g[k];
    }
    if (opt.gate_normalize) {
      const float inv = 1.0f / sum;
      for (int k = 0; k < K; ++k) g[k] = g[k] * inv;
    }
  }

  // Selections (before dropping) and GShard-priority admission: choice rank k outer,
  // tokens inner.
  for (long i = 0; i < (long)N * K; ++i) r.selected[r.expert[i]] += 1;
  for (int k = 0; k < K; ++k) {
    for (int n = 0; n < N; ++n) {
      const long i = (long)n * K + k;
      const int e = r.expert[i];
      if (r.capacity == 0 || r.counts[e] < r.capacity) {
        r.kept[i] = 1;
        r.counts[e] += 1;
      }
    }
  }

  // Aux loss (sums in double, fixed order).
  if (N > 0) {
    double aux = 0.0;
    for (int e = 0; e < E; ++e) {
      double psum = 0.0;
      for (int n = 0; n < N; ++n) psum += r.probs[(long)n * E + e];
      r.f[e] = (float)((double)r.selected[e] / ((double)N * K));
      r.P[e] = (float)(psum / N);
      aux += (double)r.f[e] * (psum / N);
    }
    r.aux = (float)(E * aux);
  }
}

}  // namespace

void route_from_logits(Routing& r, const float* logits, int N, int E, const RouterOptions& opt,
                       const int* forced_experts, const GatePolicy& policy) {
  check_options(N, E, opt);
  r.logits.assign(logits, logits + (long)N * E);
  route_logits_in_place(r, N, E, opt, forced_experts, policy);
}

void router_forward(Routing& r, const float* x, const float* router_w, int N, int C, int E,
                    const RouterOptions& opt, const int* forced_experts, const GatePolicy& policy) {
  check_options(N, E, opt);
  r.logits.resize((size_t)N * E);
  matmul_forward(r.logits.data(), x, router_w, nullptr, N, C, E);
  route_logits_in_place(r, N, E, opt, forced_experts, policy);
}

void router_logits_backward(float* dlogits, const float* dgate, float aux_weight,
                            const Routing& r) {
  const int N = r.N, E = r.E, K = r.K;
  // dprobs is built in dlogits' row, then turned into dlogits in place.
  const float aux_scale = N > 0 ? aux_weight * (float)E / (float)N : 0.0f;

#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* p = r.probs.data() + (long)n * E;
    const int* ex = r.expert.data() + (long)n * K;
    const float* g = r.gate.data() + (long)n * K;
    const float* dg = dgate + (long)n * K;
    float* d = dlogits + (long)n * E;
    for (int e = 0; e < E; ++e) d[e] = aux_scale * r.f[e];
    if (r.gate_normalize) {
      // g_k = p_k / S: dp_j = dg_j / S - (sum_k dg_k g_k) / S.
      float S = 0.0f, dot = 0.0f;
      for (int k = 0; k < K; ++k) {
        S += p[ex[k]];
        dot += dg[k] * g[k];
      }
      const float inv = 1.0f / S;
      for (int k = 0; k < K; ++k) d[ex[k]] += (dg[k] - dot) * inv;
    } else {
      for (int k = 0; k < K; ++k) d[ex[k]] += dg[k];
    }
    // Softmax backward: dl_i = p_i (dp_i - sum_j p_j dp_j).
    float pd = 0.0f;
    for (int e = 0; e < E; ++e) pd += p[e] * d[e];
    for (int e = 0; e < E; ++e) d[e] = p[e] * (d[e] - pd);
  }
}

void router_backward(float* dx, float* drouter_w, float* dlogits_scratch, const float* dgate,
                     float aux_weight, const Routing& r, const float* x, const float* router_w,
                     int C) {
  router_logits_backward(dlogits_scratch, dgate, aux_weight, r);
  matmul_backward(dx, drouter_w, nullptr, dlogits_scratch, x, router_w, r.N, C, r.E);
}

}  // namespace moebench
