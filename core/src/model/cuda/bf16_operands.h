#pragma once
// The bf16 operands of the GPU's mixed-precision GEMMs (run.precision = "bf16",
// kernels/mixed_precision.h). CUDA build only.
//   WeightCopies  the bf16 copies of the fp32 ranges the backend was asked to keep
//                 (Backend::keep_weight_copies: the parameter arena), rewritten by refresh() when
//                 the fp32 values changed, on the caller's stream.
//   Bf16Operand   a GEMM's operand as bf16: the kept copy when the fp32 array lies in a kept
//                 range, else a stream-ordered allocation (cudaMallocAsync) cast from it and freed
//                 after the work enqueued before the operand's end (cudaFreeAsync on the same
//                 stream): activations, gradients, fastermoe's shadow experts.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "moebench/kernels/precision.h"

namespace moebench {

class Backend;

class WeightCopies {
 public:
  explicit WeightCopies(Backend& be) : be_(be) {}
  ~WeightCopies();
  WeightCopies(const WeightCopies&) = delete;
  WeightCopies& operator=(const WeightCopies&) = delete;

  // Keeps a bf16 copy of [p, p + n) (not yet written: refresh writes it).
  void keep(const float* p, size_t n);
  // Rewrites the copies of the kept elements within [p, p + n) from their fp32 values.
  void refresh(const float* p, size_t n, cudaStream_t stream);
  // The copy of [p, p + n), or nullptr when that is not inside one kept range or the copy is not
  // 16-byte aligned.
  const cuda::bf16* find(const float* p, size_t n) const;

 private:
  struct Kept {
    const float* p;
    size_t n;
    cuda::bf16* copy;
  };
  Backend& be_;
  std::vector<Kept> kept_;
};

class Bf16Operand {
 public:
  // copies: nullptr casts always.
  Bf16Operand(const float* x, size_t n, const WeightCopies* copies, cudaStream_t stream);
  ~Bf16Operand();
  Bf16Operand(const Bf16Operand&) = delete;
  Bf16Operand& operator=(const Bf16Operand&) = delete;
  const cuda::bf16* get() const { return p_; }

 private:
  const cuda::bf16* p_ = nullptr;
  cuda::bf16* owned_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace moebench
