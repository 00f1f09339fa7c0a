#include "moebench/moe/expert_bank.h"

#include <algorithm>
#include <stdexcept>

#include "moebench/tensor/gelu.h"
#include "moebench/tensor/matmul.h"

namespace moebench {
namespace {

// For every expert e: dbias_e[OC] += sum over its rows of d[S,OC]. One parallel loop over
// (expert, column block) pairs; each column is summed row by row in order, so the result
// does not depend on the thread count.
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
    if (!db) continue;  // a bias another rank adds (expert slices: b2 on slice rank 0)
    for (int m = offsets[e]; m < offsets[e + 1]; ++m) {
      const float* row = d + (long)m * OC;
      for (int j = j0; j < j1; ++j) db[j] += row[j];
    }
  }
}

}  // namespace

void ExpertBank::forward(float* y, const float* x, const std::vector<int>& offsets,
                         const std::vector<ExpertParams>& experts, int C, int F) {
  if (offsets.size() != experts.size() + 1)
    throw std::invalid_argument("ExpertBank: offsets must have one entry per expert plus one");
  C_ = C;
  F_ = F;
  x_ = x;
  have_forward_ = true;
  offsets_ = offsets;
  const int E = (int)experts.size(), S = offsets_.back();
  expert_of_.resize(S);
  for (int e = 0; e < E; ++e) std::fill(expert_of_.begin() + offsets_[e], expert_of_.begin() + offsets_[e + 1], e);
  h_.resize((size_t)S * F);
  a_.resize((size_t)S * F);
  for (int e = 0; e < E; ++e) {
    const int off = offsets_[e], M = offsets_[e + 1] - off;
    matmul_forward(h_.data() + (long)off * F, x + (long)off * C, experts[e].w1, nullptr, M, C, F);
  }
#pragma omp parallel for schedule(static)
  for (int row = 0; row < S; ++row) {
    float* h = h_.data() + (long)row * F;
    const float* b1 = experts[expert_of_[row]].b1;
    for (int j = 0; j < F; ++j) h[j] += b1[j];
    gelu_forward(a_.data() + (long)row * F, h, F);
  }
  for (int e = 0; e < E; ++e) {
    const int off = offsets_[e], M = offsets_[e + 1] - off;
    matmul_forward(y + (long)off * C, a_.data() + (long)off * F, experts[e].w2, experts[e].b2, M, F, C);
  }
}

void ExpertBank::backward(float* dx, const float* dy, const std::vector<ExpertParams>& dexperts,
                          const std::vector<ExpertParams>& experts) {
  if (!have_forward_) throw std::logic_error("ExpertBank::backward without forward");
  if (dexperts.size() != experts.size() || experts.size() + 1 != offsets_.size())
    throw std::invalid_argument("ExpertBank::backward: expert count differs from the forward");
  const int E = (int)experts.size(), S = offsets_.back(), C = C_, F = F_;
  da_.assign((size_t)S * F, 0.0f);
  dh_.assign((size_t)S * F, 0.0f);
  std::fill_n(dx, (size_t)S * C, 0.0f);
  // W2: da = dy W2, dW2 += dy^T a; db2 += sum dy.
  for (int e = 0; e < E; ++e) {
    const int off = offsets_[e], M = offsets_[e + 1] - off;
    matmul_backward(da_.data() + (long)off * F, dexperts[e].w2, nullptr, dy + (long)off * C,
                    a_.data() + (long)off * F, experts[e].w2, M, F, C);
  }
  experts_bias_backward(dexperts, &ExpertParams::b2, dy, offsets_, C);
#pragma omp parallel for schedule(static)
  for (int row = 0; row < S; ++row)
    gelu_backward(dh_.data() + (long)row * F, h_.data() + (long)row * F, da_.data() + (long)row * F, F);
  // W1: dx = dh W1, dW1 += dh^T x; db1 += sum dh.
  for (int e = 0; e < E; ++e) {
    const int off = offsets_[e], M = offsets_[e + 1] - off;
    matmul_backward(dx + (long)off * C, dexperts[e].w1, nullptr, dh_.data() + (long)off * F,
                    x_ + (long)off * C, experts[e].w1, M, C, F);
  }
  experts_bias_backward(dexperts, &ExpertParams::b1, dh_.data(), offsets_, F);
}

}  // namespace moebench
