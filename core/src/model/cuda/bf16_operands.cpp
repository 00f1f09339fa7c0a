// Built only with the CUDA build (core/CMakeLists.txt: src/model/cuda/).
#include "bf16_operands.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "moebench/kernels/mixed_precision.h"
#include "moebench/tensor/backend.h"

namespace moebench {

WeightCopies::~WeightCopies() {
  for (const Kept& k : kept_) be_.release(k.copy);
}

void WeightCopies::keep(const float* p, size_t n) {
  if (n == 0) return;
  void* copy = be_.allocate(n * sizeof(cuda::bf16), "the weights' bf16 copies (run.precision = \"bf16\")");
  kept_.push_back({p, n, static_cast<cuda::bf16*>(copy)});
}

void WeightCopies::refresh(const float* p, size_t n, cudaStream_t stream) {
  for (const Kept& k : kept_) {
    const float* lo = std::max(p, k.p);
    const float* hi = std::min(p + n, k.p + k.n);
    if (lo < hi) cuda::cast(k.copy + (lo - k.p), lo, hi - lo, stream);
  }
}

const cuda::bf16* WeightCopies::find(const float* p, size_t n) const {
  for (const Kept& k : kept_)
    if (p >= k.p && p + n <= k.p + k.n) {
      const cuda::bf16* copy = k.copy + (p - k.p);
      // cuBLAS's bf16 kernels want 16-byte aligned matrices (kernels/experts.h): a copy at an odd
      // place in the arena is cast afresh into an aligned allocation instead
      return reinterpret_cast<uintptr_t>(copy) % 16 == 0 ? copy : nullptr;
    }
  return nullptr;
}

Bf16Operand::Bf16Operand(const float* x, size_t n, const WeightCopies* copies, cudaStream_t stream)
    : stream_(stream) {
  if (!x) return;  // an operand the call does not use
  if (copies && (p_ = copies->find(x, n))) return;
  const size_t bytes = std::max<size_t>(n, 1) * sizeof(cuda::bf16);
  const cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&owned_), bytes, stream);
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: no later check reports it again
    int device = -1;
    cudaGetDevice(&device);
    char size[32];
    std::snprintf(size, sizeof size, "%.2f GiB", (double)bytes / (double)(1ull << 30));
    throw std::runtime_error(std::string("cudaMallocAsync of ") + size + " for a GEMM operand's bf16 copy on GPU " +
                             std::to_string(device) + " failed: " + cudaGetErrorString(e) +
                             "; lower train.batch_size or model.seq_len");
  }
  p_ = owned_;
  try {
    cuda::cast(owned_, x, (long)n, stream);
  } catch (...) {  // no destructor runs for a constructor that throws
    cudaFreeAsync(owned_, stream);
    throw;
  }
}

Bf16Operand::~Bf16Operand() {
  if (owned_) cudaFreeAsync(owned_, stream_);  // after the work enqueued with it
}

}  // namespace moebench
