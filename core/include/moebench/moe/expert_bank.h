#pragma once
// ExpertBank: the expert FFNs applied to rows already grouped by expert — the compute phase
// every MoE strategy shares. Rows [offsets[e], offsets[e+1]) belong to expert e of `experts`;
// expert(x) = W2 gelu(W1 x + b1) + b2, one BLAS call per expert and matrix. Keeps the
// activations of the last forward for backward and reuses its buffers. Deterministic:
// OpenMP loops are schedule(static) and partitioned by row or (expert, column block).
#include <vector>

namespace moebench {

// One expert's FFN parameters (or their gradients, same layout).
struct ExpertParams {
  float* w1;  // [F,C]
  float* b1;  // [F]
  float* w2;  // [C,F]
  float* b2;  // [C]
};

class ExpertBank {
 public:
  // y[S,C] = expert rows of x[S,C]; x must stay valid until backward().
  void forward(float* y, const float* x, const std::vector<int>& offsets,
               const std::vector<ExpertParams>& experts, int C, int F);
  // dx[S,C] (overwritten) and the expert gradients (accumulated) from dy[S,C].
  void backward(float* dx, const float* dy, const std::vector<ExpertParams>& dexperts,
                const std::vector<ExpertParams>& experts);
  int rows() const { return offsets_.empty() ? 0 : offsets_.back(); }

 private:
  int C_ = 0, F_ = 0;
  const float* x_ = nullptr;  // may be null when no rows were routed here
  bool have_forward_ = false;
  std::vector<int> offsets_, expert_of_;  // [E+1], [S]
  std::vector<float> h_, a_;              // [S,F] pre- and post-GeLU
  std::vector<float> da_, dh_;            // backward scratch [S,F]
};

}  // namespace moebench
