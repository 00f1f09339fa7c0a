#pragma once
// MoeLayer: one MoE block on CPU (fp32, single rank): router -> dispatch (gather the kept
// tokens grouped by expert) -> experts (FFN C -> F -> C with GeLU, one BLAS call per expert
// and matrix) -> gate-weighted combine; and its backward. It keeps the routing and the
// activations of the last forward for backward, and reuses its buffers across calls.
//
// Determinism: every OpenMP loop is schedule(static) and partitioned by destination row
// (combine and scatter-add by token, gathers by slot), sums run in a fixed order, and the
// elementwise passes work on whole rows, so results are bit-identical run to run and do not
// depend on the OpenMP thread count. (OpenBLAS's sgemm itself may round differently when its
// own thread count changes, so the whole layer is bitwise reproducible for a fixed count.)
#include <vector>

#include "moebench/moe/router.h"

namespace moebench {

// One expert's FFN parameters (or their gradients, same layout).
struct ExpertParams {
  float* w1;  // [F,C]
  float* b1;  // [F]
  float* w2;  // [C,F]
  float* b2;  // [C]
};

struct MoeLayerShape {
  int N;                  // tokens
  int C;                  // hidden size
  int F;                  // expert FFN width
  int E;                  // experts
  int K;                  // top-k
  float capacity_factor;  // 0 = dropless
  bool gate_normalize;    // renormalise the top-k gates to sum to 1
};

class MoeLayer {
 public:
  // out[N,C] (overwritten) = sum over kept (n,k) of gate[n,k] * expert_{e[n,k]}(x[n]);
  // expert(x) = W2 gelu(W1 x + b1) + b2. router_w is [E,C]. Returns the unweighted aux loss.
  // forced_experts: optional [N,K] override of the top-k choice (synthetic routing).
  float forward(float* out, const float* x, const float* router_w,
                const std::vector<ExpertParams>& experts, const MoeLayerShape& s,
                const int* forced_experts = nullptr);

  // Accumulates (+=) dx[N,C], drouter_w[E,C] and the expert gradients (dexperts: same layout
  // as experts) given dout[N,C]; aux_weight is the weight of this block's aux loss in the
  // total loss. x, router_w and experts must be those of the preceding forward.
  void backward(float* dx, float* drouter_w, const std::vector<ExpertParams>& dexperts,
                const float* dout, float aux_weight, const float* x, const float* router_w,
                const std::vector<ExpertParams>& experts);

  // Routing of the last forward.
  const Routing& routing() const { return routing_; }
  const MoeLayerShape& shape() const { return s_; }
  // Dispatch layout of the last forward: expert e owns slots [offsets[e], offsets[e+1]) of
  // the gathered buffers; slot_of[n*K+k] is the slot of an assignment (-1 when dropped).
  const std::vector<int>& expert_offsets() const { return offsets_; }
  const std::vector<int>& slot_of() const { return slot_of_; }

 private:
  MoeLayerShape s_{};
  bool have_forward_ = false;
  Routing routing_;
  std::vector<int> offsets_;   // [E+1]
  std::vector<int> slot_of_;   // [N*K]
  std::vector<int> token_of_;  // [S] token of each slot
  std::vector<int> nk_of_;     // [S] n*K+k of each slot
  std::vector<int> cursor_;    // [E] dispatch scratch
  // forward activations (S = kept assignments)
  std::vector<float> xg_;  // [S,C] gathered inputs
  std::vector<float> h_;   // [S,F] pre-GeLU
  std::vector<float> a_;   // [S,F] post-GeLU
  std::vector<float> y_;   // [S,C] expert outputs (unweighted)
  // backward scratch
  std::vector<float> dgate_;    // [N,K]
  std::vector<float> dlogits_;  // [N,E]
  std::vector<float> dy_;       // [S,C]
  std::vector<float> da_;       // [S,F]
  std::vector<float> dh_;       // [S,F]
  std::vector<float> dxg_;      // [S,C]
};

}  // namespace moebench
