#pragma once
// RowOps: what a distributed strategy does with routed rows, in the memory of the block's
// backend (the block's MoeRows, moe/moe_rows.h, hands them out; MoeContext::row_ops): arrays,
// copies, the permutation between source-major and expert-major order, and the experts. The
// host's (host_row_ops below: memcpy, OpenMP, ExpertBank) serves the CPU; a GPU's
// (model/cuda_backend.h) enqueues the same work on the running task's stream. Communicators
// move the rows in between (device pointers on a GPU: NCCL).
#include <memory>
#include <utility>
#include <vector>

#include "moebench/moe/expert_bank.h"

namespace moebench {

// The experts applied to rows grouped by expert, keeping the forward's activations for its
// backward: ExpertBank's contract (moe/expert_bank.h) on any backend.
class ExpertCompute {
 public:
  virtual ~ExpertCompute() = default;
  // y[S,C] = expert rows of x[S,C] (offsets on the host, [L+1]); x stays valid until backward.
  virtual void forward(float* y, const float* x, const std::vector<int>& offsets,
                       const std::vector<ExpertParams>& experts, int C, int F) = 0;
  // dx[S,C] (overwritten) and the expert gradients (+=) from dy[S,C].
  virtual void backward(float* dx, const float* dy, const std::vector<ExpertParams>& dexperts,
                        const std::vector<ExpertParams>& experts) = 0;
};

class RowOps {
 public:
  virtual ~RowOps() = default;
  virtual float* allocate(long n) = 0;  // n floats (n >= 0; contents undefined)
  virtual void release(float* p) noexcept = 0;
  virtual void copy(float* dst, const float* src, long n) = 0;
  // x[0..n) = 0; dst[0..n) += src[0..n).
  virtual void zero(float* x, long n) = 0;
  virtual void add(float* dst, const float* src, long n) = 0;
  // Rows of C floats: to_experts: dst[i] = src[index[i]]; else dst[index[i]] = src[i]; index
  // (on the host) is a permutation of [0, index.size()).
  virtual void permute(float* dst, const float* src, const std::vector<long>& index, int C, bool to_experts) = 0;
  virtual std::unique_ptr<ExpertCompute> make_experts() = 0;
};

// The host's RowOps (one for the process; stateless).
RowOps& host_row_ops();

// Rows of C floats in ranges (first row, rows) of src, packed one after another into dst
// (gather), or the packed rows of src back to their ranges of dst (scatter): copies in ops' memory.
void gather_row_ranges(RowOps& ops, float* dst, const float* src, const std::vector<std::pair<long, long>>& ranges,
                       int C);
void scatter_row_ranges(RowOps& ops, float* dst, const float* src, const std::vector<std::pair<long, long>>& ranges,
                        int C);

// An array of floats in a RowOps' memory, grown on demand (contents not kept). Move-only.
class RowArray {
 public:
  RowArray() = default;
  ~RowArray() { clear(); }
  RowArray(RowArray&& o) noexcept
      : ops_(std::exchange(o.ops_, nullptr)), p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  RowArray& operator=(RowArray&& o) noexcept {
    if (this != &o) {
      clear();
      ops_ = std::exchange(o.ops_, nullptr);
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  RowArray(const RowArray&) = delete;
  RowArray& operator=(const RowArray&) = delete;
  // At least n floats of ops' memory (reallocated when larger, or from other ops).
  float* resize(RowOps& ops, long n) {
    if (ops_ != &ops || n > n_) {
      clear();
      p_ = ops.allocate(n);
      ops_ = &ops;
      n_ = n;
    }
    return p_;
  }
  float* data() const { return p_; }

 private:
  void clear() noexcept {
    if (ops_ && p_) ops_->release(p_);
    p_ = nullptr;
    n_ = 0;
  }
  RowOps* ops_ = nullptr;
  float* p_ = nullptr;
  long n_ = 0;
};

}  // namespace moebench
