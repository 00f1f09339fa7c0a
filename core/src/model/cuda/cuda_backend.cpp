// Built only with the CUDA build (core/CMakeLists.txt: src/model/cuda/).
#include "moebench/model/cuda_backend.h"
#include "bf16_operands.h"
#include "cuda_moe_rows.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "moebench/kernels/adamw.h"
#include "moebench/kernels/attention.h"
#include "moebench/kernels/blas_handle.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/crossentropy.h"
#include "moebench/kernels/embedding_partition.h"
#include "moebench/kernels/encoder.h"
#include "moebench/kernels/gelu.h"
#include "moebench/kernels/layernorm.h"
#include "moebench/kernels/matmul.h"
#include "moebench/kernels/mixed_precision.h"
#include "moebench/kernels/residual.h"
#include "moebench/kernels/vocab_parallel.h"
#include "moebench/moe/moe_rows.h"
#include "moebench/runtime/cuda_device_queue.h"

namespace moebench {
namespace {

std::string gib(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f GiB", (double)bytes / (double)(1ull << 30));
  return s;
}

// The handle's math mode for the GEMMs of one scope (restored at its end): TF32 tensor cores for
// the fp32 GEMMs that mixed precision leaves in fp32 (the attention's scores and outputs).
class MathModeScope {
 public:
  explicit MathModeScope(bool tf32) : h_(tf32 ? cuda::cublas_handle() : nullptr) {
    if (!h_) return;
    MOEBENCH_CUBLAS_CHECK(cublasGetMathMode(h_, &old_));
    MOEBENCH_CUBLAS_CHECK(cublasSetMathMode(h_, CUBLAS_TF32_TENSOR_OP_MATH));
  }
  ~MathModeScope() {
    if (h_) cublasSetMathMode(h_, old_);
  }
  MathModeScope(const MathModeScope&) = delete;
  MathModeScope& operator=(const MathModeScope&) = delete;

 private:
  cublasHandle_t h_;
  cublasMath_t old_ = CUBLAS_DEFAULT_MATH;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(CudaDeviceQueue& queue, bool mixed) : q_(queue) {
    bind();
    own_ = q_.create_stream(false);
    // Stream-ordered allocations (the permutations' indices, mixed precision's operand copies)
    // come back to the device's pool and stay there for the next step instead of going back to
    // the driver at each synchronisation (allocate() trims the pool when cudaMalloc runs out).
    cudaMemPool_t pool = nullptr;
    check(cudaDeviceGetDefaultMemPool(&pool, q_.device()), "cudaDeviceGetDefaultMemPool");
    uint64_t keep = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
    if (mixed) copies_ = std::make_unique<WeightCopies>(*this);
  }
  ~CudaBackend() override {
    copies_.reset();
    release(norm_scratch_);
  }
  std::string name() const override { return "cuda:" + std::to_string(q_.device()); }
  bool device_memory() const override { return true; }
  bool mixed_precision() const override { return copies_ != nullptr; }
  void keep_weight_copies(const float* p, size_t n) override {
    if (copies_) copies_->keep(p, n);
  }
  void weights_changed(const float* p, size_t n) override {
    if (copies_) copies_->refresh(p, n, stream());
  }

  void* allocate(size_t bytes, const char* what) override {
    bind();
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e == cudaErrorMemoryAllocation) {  // the stream-ordered pool keeps what it freed: give it back, once
      cudaGetLastError();
      cudaMemPool_t pool = nullptr;
      if (cudaDeviceGetDefaultMemPool(&pool, q_.device()) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess &&
          cudaMemPoolTrimTo(pool, 0) == cudaSuccess)
        e = cudaMalloc(&p, bytes ? bytes : 1);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();  // an allocation error is not sticky: clear it so no later check reports it
      throw std::runtime_error("cudaMalloc of " + gib(bytes) + " for " + what + " on GPU " +
                               std::to_string(q_.device()) + " failed: " + cudaGetErrorString(e));
    }
    return p;
  }
  void release(void* p) noexcept override {
    if (!p) return;
    cudaSetDevice(q_.device());
    cudaFree(p);
  }
  void zero(void* p, size_t bytes) override { check(cudaMemsetAsync(p, 0, bytes, stream()), "cudaMemsetAsync"); }
  void copy(void* dst, const void* src, size_t bytes) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()), "cudaMemcpyAsync (device to device)");
  }
  void to_device(void* dst, const void* host, size_t bytes) override {
    // Pageable host memory: the call returns once the bytes are staged, so `host` may change after.
    check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream()), "cudaMemcpyAsync (host to device)");
  }
  void* allocate_pinned(size_t bytes) override {
    bind();
    void* p = nullptr;
    check(cudaMallocHost(&p, bytes ? bytes : 1), "cudaMallocHost (page-locked host memory)");
    return p;
  }
  void release_pinned(void* p) noexcept override { cudaFreeHost(p); }
  void to_device_async(void* dst, const void* pinned, size_t bytes) override {
    check(cudaMemcpyAsync(dst, pinned, bytes, cudaMemcpyHostToDevice, stream()), "cudaMemcpyAsync (pinned host to device)");
  }
  void to_host_async(void* pinned, const void* src, size_t bytes) override {
    check(cudaMemcpyAsync(pinned, src, bytes, cudaMemcpyDeviceToHost, stream()), "cudaMemcpyAsync (device to pinned host)");
  }
  void synchronize() override { check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize"); }
  void to_host(void* host, const void* src, size_t bytes) override {
    cudaStream_t s = stream();
    check(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (device to host)");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  double sum(const float* x, long n) override {  // on the host, in the CPU's order
    std::vector<float> h((size_t)n);
    to_host(h.data(), x, (size_t)n * sizeof(float));
    double s = 0.0;
    for (float v : h) s += v;
    return s;
  }

  std::vector<double> sums_of_squares(const float* x, const Ranges& ranges) override {
    cudaStream_t s = stream();
    // The kernels' partial sums (4 KiB whatever the size; reused range after range, in stream
    // order) and one result per range.
    const size_t work = cuda::grad_norm_workspace_bytes(1), need = work + ranges.size() * sizeof(double);
    if (need > norm_scratch_bytes_) {
      release(norm_scratch_);
      norm_scratch_ = nullptr;
      norm_scratch_ = static_cast<char*>(allocate(need, "the gradient norm's scratch"));
      norm_scratch_bytes_ = need;
    }
    double* results = reinterpret_cast<double*>(norm_scratch_ + work);
    for (size_t i = 0; i < ranges.size(); ++i)
      cuda::grad_sumsq(results + i, x + ranges[i].first, (long)ranges[i].second, false, norm_scratch_, s);
    std::vector<double> host(ranges.size());
    if (!host.empty()) to_host(host.data(), results, host.size() * sizeof(double));
    return host;
  }
  void scale(float* x, long n, float s) override {
    cublasHandle_t h = cuda::cublas_handle();
    MOEBENCH_CUBLAS_CHECK(cublasSetStream(h, stream()));
    MOEBENCH_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    for (long done = 0; done < n;) {  // cublasSscal counts in int
      const int part = (int)std::min<long>(n - done, 1L << 30);
      MOEBENCH_CUBLAS_CHECK(cublasSscal(h, part, &s, x + done, 1));
      done += part;
    }
  }
  void adamw_update(float* p, const float* g, float* m, float* v, long n, const AdamWHyper& hp, float lr, long t,
                    float wd) override {
    cuda::adamw_update<float>(p, m, v, nullptr, g, n, lr, hp.beta1, hp.beta2, hp.eps, wd, t, stream());
  }
  std::unique_ptr<MoeRows> make_moe_rows() override {
    return make_cuda_moe_rows(*this, [this] { return stream(); }, copies_.get());
  }

  void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) override {
    cuda::encoder_forward(out, inp, wte, wpe, B, T, C, stream());
  }
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) override {
    cuda::encoder_backward(dwte, dwpe, dout, inp, B, T, C, stream());
  }
  void position_embedding_forward(float* x, const float* wpe, long N, int T, int C) override {
    cuda::position_embedding_forward(x, wpe, N, T, C, stream());
  }
  void position_embedding_backward(float* dwpe, const float* dx, long N, int T, int C) override {
    cuda::position_embedding_backward(dwpe, dx, N, T, C, stream());
  }
  void embedding_partition_lookup(float* out, const int* ids, const float* wte_part, long rows, int Cp) override {
    cuda::embedding_partition_lookup(out, ids, wte_part, rows, Cp, stream());
  }
  void embedding_partition_assemble(float* x, const float* slices, const float* wpe, long N, int T, int P,
                                    int Cp) override {
    cuda::embedding_partition_assemble(x, slices, wpe, N, T, P, Cp, stream());
  }
  void embedding_partition_split(float* slices, const float* dx, long N, int P, int Cp) override {
    cuda::embedding_partition_split(slices, dx, N, P, Cp, stream());
  }
  void embedding_partition_backward(float* dwte_part, const float* dslices, const int* ids, long rows,
                                    int Cp) override {
    cuda::embedding_partition_backward(dwte_part, dslices, ids, rows, Cp, stream());
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                         const float* bias, int N, int C) override {
    cuda::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, stream());
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int N, int C) override {
    cuda::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, stream());
  }
  // Mixed precision: bf16 copies of the operands (the weights' kept ones), fp32 results.
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                      int OC) override {
    cudaStream_t s = stream();
    if (!copies_) return cuda::matmul_forward(out, inp, weight, bias, N, C, OC, s);
    const Bf16Operand in(inp, (size_t)N * C, nullptr, s), w(weight, (size_t)OC * C, copies_.get(), s);
    cuda::matmul_forward_mixed(out, in.get(), w.get(), bias, N, C, OC, s);
  }
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int N, int C, int OC) override {
    cudaStream_t s = stream();
    if (!copies_) return cuda::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC, s);
    const Bf16Operand d(dout, (size_t)N * OC, nullptr, s);
    const Bf16Operand in(dweight ? inp : nullptr, dweight ? (size_t)N * C : 0, nullptr, s);
    const Bf16Operand w(dinp ? weight : nullptr, dinp ? (size_t)OC * C : 0, copies_.get(), s);
    cuda::matmul_backward_mixed(dinp, dweight, dbias, dout, d.get(), in.get(), w.get(), N, C, OC, s);
  }
  void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C,
                         int NH) override {
    cudaStream_t s = stream();  // binds the device: the handle is the device's
    const MathModeScope tf32(copies_ != nullptr);
    cuda::attention_forward(out, preatt, att, qkv, B, T, C, NH, s);
  }
  void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                          const float* att, int B, int T, int C, int NH) override {
    cudaStream_t s = stream();
    const MathModeScope tf32(copies_ != nullptr);
    cuda::attention_backward(dqkv, dpreatt, datt, dout, qkv, att, B, T, C, NH, s);
  }
  void gelu_forward(float* out, const float* inp, long N) override { cuda::gelu_forward(out, inp, N, stream()); }
  void gelu_backward(float* dinp, const float* inp, const float* dout, long N) override {
    cuda::gelu_backward(dinp, inp, dout, N, stream());
  }
  void residual_forward(float* out, const float* inp1, const float* inp2, long N) override {
    cuda::residual_forward(out, inp1, inp2, N, stream());
  }
  void crossentropy_softmax_forward(float* losses, float* probs, const float* logits, const int* targets, int N,
                                    int V) override {
    cuda::crossentropy_softmax_forward(losses, probs, logits, targets, N, V, stream());
  }
  void crossentropy_softmax_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N,
                                     int V) override {
    cuda::crossentropy_softmax_backward(dlogits, probs, targets, dloss, N, V, stream());
  }
  void vocab_slice_embed(float* out, const int* tok, const float* wte_slice, long N, int C, int lo, int Vt) override {
    cuda::vocab_slice_embed(out, tok, wte_slice, N, C, lo, Vt, stream());
  }
  void vocab_slice_embed_backward(float* dwte_slice, const float* dout, const int* tok, long N, int C, int lo,
                                  int Vt) override {
    cuda::vocab_slice_embed_backward(dwte_slice, dout, tok, N, C, lo, Vt, stream());
  }
  void vocab_ce_row_max(float* rowmax, const float* logits, int N, int Vt) override {
    cuda::vocab_ce_row_max(rowmax, logits, N, Vt, stream());
  }
  void vocab_ce_exp(float* probs, float* stats, const float* logits, const float* rowmax, const int* targets, int N,
                    int Vt, int lo) override {
    cuda::vocab_ce_exp(probs, stats, logits, rowmax, targets, N, Vt, lo, stream());
  }
  void vocab_ce_finish(float* losses, float* probs, const float* stats, const float* rowmax, int N, int Vt) override {
    cuda::vocab_ce_finish(losses, probs, stats, rowmax, N, Vt, stream());
  }
  void vocab_ce_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int Vt,
                         int lo) override {
    cuda::vocab_ce_backward(dlogits, probs, targets, dloss, N, Vt, lo, stream());
  }

 private:
  // The queue's device made current on this thread (cuBLAS handles are per thread and device).
  void bind() const {
    thread_local int current = -1;
    if (current == q_.device()) return;
    check(cudaSetDevice(q_.device()), "cudaSetDevice");
    current = q_.device();
  }
  cudaStream_t stream() const {
    bind();
    const DeviceQueue::Stream s = q_.current_stream();
    return static_cast<cudaStream_t>(q_.cuda_stream(s >= 0 ? s : own_));
  }
  void check(cudaError_t e, const char* call) const {
    if (e != cudaSuccess)
      throw std::runtime_error(std::string(call) + " failed on GPU " + std::to_string(q_.device()) + ": " +
                               cudaGetErrorString(e));
  }
  CudaDeviceQueue& q_;
  DeviceQueue::Stream own_ = -1;
  std::unique_ptr<WeightCopies> copies_;  // mixed precision only
  char* norm_scratch_ = nullptr;  // sums_of_squares' device scratch (grown on use)
  size_t norm_scratch_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(CudaDeviceQueue& queue, bool mixed_precision) {
  return std::make_unique<CudaBackend>(queue, mixed_precision);
}

}  // namespace moebench
