// The host MoeRows (moe/moe_rows.h): router, dispatch layout, gathers and the gate-weighted
// combine on the CPU. Determinism: every OpenMP loop is schedule(static) and partitioned by
// destination row (combine and scatter-add by token, gathers by slot), sums run in a fixed
// order, so results are bit-identical run to run.
#include <algorithm>
#include <cstring>

#include "moebench/moe/dispatch_layout.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/moe_rows.h"

namespace moebench {
namespace {

class HostMoeRows final : public MoeRows {
 public:
  // Router, then the dispatch layout (moe/dispatch_layout.h: kept assignments grouped by expert,
  // in (token, k) order within an expert) and the gathered slot rows xg_.
  void route(const float* x, const float* router_w, const MoeLayerShape& s, const int* forced_experts,
             const GatePolicy& policy) override {
    s_ = s;
    const int N = s.N, C = s.C, E = s.E, K = s.K;
    RouterOptions opt;
    opt.top_k = K;
    opt.capacity_factor = s.capacity_factor;
    opt.gate_normalize = s.gate_normalize;
    router_forward(routing_, x, router_w, N, C, E, opt, forced_experts, policy);
    offsets_.resize(E + 1);
    slot_of_.resize((size_t)N * K);
    token_of_.resize((size_t)N * K);  // S <= N*K; sized before the layout is known
    dispatch_layout(offsets_.data(), slot_of_.data(), token_of_.data(), routing_.expert.data(), routing_.kept.data(),
                    N, K, E);
    const int S = offsets_[E];
    token_of_.resize(S);
    xg_.resize((size_t)S * C);
#pragma omp parallel for schedule(static)
    for (int slot = 0; slot < S; ++slot)
      std::memcpy(xg_.data() + (long)slot * C, x + (long)token_of_[slot] * C, sizeof(float) * C);
    y_.resize((size_t)S * C);
  }
  const std::vector<int>& offsets() const override { return offsets_; }
  float aux() const override { return routing_.aux; }
  void globalize_aux(Communicator& group) override { moebench::globalize_aux(routing_, group); }
  const Routing& host_routing() const override { return routing_; }
  const std::vector<int>& host_slot_of() const override { return slot_of_; }
  float* xg() override { return xg_.data(); }
  float* y() override { return y_.data(); }
  float* dy() override { return dy_.data(); }
  float* dxg() override { return dxg_.data(); }

  void experts_forward(const std::vector<ExpertParams>& experts, int F) override {
    bank_.forward(y_.data(), xg_.data(), offsets_, experts, s_.C, F);
  }

  // Weighted combine, partitioned by destination token; k in order.
  void combine(float* out) override {
    const int N = s_.N, C = s_.C, K = s_.K;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
      float* o = out + (long)n * C;
      std::fill(o, o + C, 0.0f);
      for (int k = 0; k < K; ++k) {
        const int slot = slot_of_[n * K + k];
        if (slot < 0) continue;
        const float g = routing_.gate[n * K + k];
        const float* y = y_.data() + (long)slot * C;
        for (int c = 0; c < C; ++c) o[c] += g * y[c];
      }
    }
  }

  // dgate[n,k] = dout[n] . y[slot]; dy[slot] = gate[n,k] * dout[n]. Partitioned by token (each
  // slot belongs to exactly one (n,k)).
  void prepare_backward() override {
    const size_t SC = (size_t)offsets_[s_.E] * s_.C;
    dgate_.resize((size_t)s_.N * s_.K);
    dy_.resize(SC);
    dxg_.resize(SC);
  }
  void combine_backward(const float* dout) override {
    const int N = s_.N, C = s_.C, K = s_.K;
    prepare_backward();
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
        const float g = routing_.gate[i];
        float dot = 0.0f;
        for (int c = 0; c < C; ++c) {
          dot += d[c] * y[c];
          dy[c] = g * d[c];
        }
        dgate_[i] = dot;
      }
    }
  }

  void experts_backward(const std::vector<ExpertParams>& dexperts, const std::vector<ExpertParams>& experts) override {
    bank_.backward(dxg_.data(), dy_.data(), dexperts, experts);
  }

  // Scatter-add of dxg into dx (partitioned by destination token; k in order), then the router:
  // gates (through the optional normalisation) + aux -> dlogits -> dx, dWr.
  void scatter_router_backward(float* dx, float* drouter_w, float aux_weight, const float* x,
                               const float* router_w) override {
    const int N = s_.N, C = s_.C, E = s_.E, K = s_.K;
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
    dlogits_.resize((size_t)N * E);
    router_backward(dx, drouter_w, dlogits_.data(), dgate_.data(), aux_weight, routing_, x, router_w, C);
  }

  float* scratch(long n) override {
    scratch_.resize((size_t)n);
    return scratch_.data();
  }
  RowOps& row_ops() override { return host_row_ops(); }

 private:
  MoeLayerShape s_{};
  Routing routing_;
  ExpertBank bank_;
  std::vector<int> offsets_;    // [E+1]
  std::vector<int> slot_of_;    // [N*K]
  std::vector<int> token_of_;   // [S] token of each slot
  std::vector<float> xg_, y_;   // [S,C] gathered inputs, expert outputs (unweighted)
  std::vector<float> dgate_;    // [N,K]
  std::vector<float> dlogits_;  // [N,E]
  std::vector<float> dy_, dxg_;  // [S,C]
  std::vector<float> scratch_;
};

}  // namespace

std::unique_ptr<MoeRows> make_host_moe_rows() { return std::make_unique<HostMoeRows>(); }

}  // namespace moebench
