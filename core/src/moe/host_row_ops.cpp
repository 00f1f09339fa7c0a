// The host's RowOps (moe/row_ops.h).
#include <cstring>
#include <new>

#include "moebench/moe/row_ops.h"

namespace moebench {
namespace {

class HostExperts final : public ExpertCompute {
 public:
  void forward(float* y, const float* x, const std::vector<int>& offsets, const std::vector<ExpertParams>& experts,
               int C, int F) override {
    bank_.forward(y, x, offsets, experts, C, F);
  }
  void backward(float* dx, const float* dy, const std::vector<ExpertParams>& dexperts,
                const std::vector<ExpertParams>& experts) override {
    bank_.backward(dx, dy, dexperts, experts);
  }

 private:
  ExpertBank bank_;
};

class HostRowOps final : public RowOps {
 public:
  float* allocate(long n) override { return new float[(size_t)(n > 0 ? n : 1)]; }
  void release(float* p) noexcept override { delete[] p; }
  void copy(float* dst, const float* src, long n) override {
    if (n > 0) std::memcpy(dst, src, sizeof(float) * (size_t)n);
  }
  void zero(float* x, long n) override {
    if (n > 0) std::memset(x, 0, sizeof(float) * (size_t)n);
  }
  void add(float* dst, const float* src, long n) override {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) dst[i] += src[i];
  }
  void permute(float* dst, const float* src, const std::vector<long>& index, int C, bool to_experts) override {
    const long R = (long)index.size();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < R; ++i) {
      if (to_experts) std::memcpy(dst + i * C, src + index[i] * C, sizeof(float) * C);
      else std::memcpy(dst + index[i] * C, src + i * C, sizeof(float) * C);
    }
  }
  std::unique_ptr<ExpertCompute> make_experts() override { return std::make_unique<HostExperts>(); }
};

}  // namespace

RowOps& host_row_ops() {
  static HostRowOps ops;
  return ops;
}

}  // namespace moebench
