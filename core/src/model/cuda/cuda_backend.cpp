// Built only with the CUDA build (core/CMakeLists.txt: src/model/cuda/).
#include "moebench/model/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
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
#include "moebench/kernels/encoder.h"
#include "moebench/kernels/gelu.h"
#include "moebench/kernels/layernorm.h"
#include "moebench/kernels/matmul.h"
#include "moebench/kernels/moe_block.h"
#include "moebench/kernels/residual.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/moe_rows.h"
#include "moebench/runtime/cuda_device_queue.h"

namespace moebench {
namespace {

std::string gib(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f GiB", (double)bytes / (double)(1ull << 30));
  return s;
}

// MoeRows on the GPU: kernels/'s MoeBlock phases on the running task's stream, the experts in
// the arena's per-expert layout (ExpertWeights::stride).
class CudaMoeRows final : public MoeRows {
 public:
  explicit CudaMoeRows(std::function<cudaStream_t()> stream) : stream_(std::move(stream)) {}
  void route(const float* x, const float* router_w, const MoeLayerShape& s, const int* forced_experts,
             const GatePolicy& policy) override {
    if (policy)
      throw std::invalid_argument("a gate policy (fastermoe's topology-aware gate) is not built on the GPU yet");
    s_ = s;
    cudaStream_t st = stream_();
    const int* forced = nullptr;
    if (forced_experts) {
      if (forced_.size() < (size_t)s.N * s.K) forced_.resize((size_t)s.N * s.K);
      MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(forced_.data(), forced_experts, sizeof(int) * s.N * s.K,
                                          cudaMemcpyHostToDevice, st));
      forced = forced_.data();
    }
    guarded([&] {
      aux_ = block_.route(x, router_w, s.N, s.C, s.E, s.K, expert_capacity(s.capacity_factor, s.N, s.K, s.E),
                          s.gate_normalize, forced, st);
    });
  }
  const std::vector<int>& offsets() const override { return block_.expert_offsets(); }
  float aux() const override { return aux_; }
  // The global batch's f, P (uploaded over the block's own: the backward's aux gradient reads
  // them) and aux, from this rank's selections and mean probabilities.
  void globalize_aux(Communicator& group) override {
    const cuda::DeviceRouting& r = block_.routing();
    const int N = s_.N, E = s_.E;
    cudaStream_t st = stream_();
    std::vector<int> selected((size_t)E);
    std::vector<float> mean((size_t)E);
    MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(selected.data(), r.selected, sizeof(int) * E, cudaMemcpyDeviceToHost, st));
    MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(mean.data(), r.P, sizeof(float) * E, cudaMemcpyDeviceToHost, st));
    MOEBENCH_CUDA_CHECK(cudaStreamSynchronize(st));
    std::vector<double> sel(selected.begin(), selected.end()), sums((size_t)E);
    for (int e = 0; e < E; ++e) sums[(size_t)e] = (double)mean[(size_t)e] * N;
    global_ = global_aux_stats(sel, N, sums, s_.K, group);
    MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(r.f, global_.f.data(), sizeof(float) * E, cudaMemcpyHostToDevice, st));
    MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(r.P, global_.P.data(), sizeof(float) * E, cudaMemcpyHostToDevice, st));
    aux_ = global_.aux;
  }
  const Routing& host_routing() const override {
    throw std::logic_error("an MoE block's routing is in GPU memory (the host holds only its layout)");
  }
  const std::vector<int>& host_slot_of() const override {
    throw std::logic_error("an MoE block's dispatch slots are in GPU memory (the host holds only its layout)");
  }
  float* xg() override { return block_.xg(); }
  float* y() override { return block_.y(); }
  float* dy() override { return block_.dy(); }
  float* dxg() override { return block_.dxg(); }

  void experts_forward(const std::vector<ExpertParams>& experts, int F) override {
    guarded([&] { block_.experts_forward(weights(experts, F), F, stream_()); });
  }
  void combine(float* out) override { block_.combine(out, stream_()); }
  void prepare_backward() override { guarded([&] { block_.prepare_backward(); }); }
  void combine_backward(const float* dout) override { guarded([&] { block_.combine_backward(dout, stream_()); }); }
  void experts_backward(const std::vector<ExpertParams>& dexperts, const std::vector<ExpertParams>& experts) override {
    guarded([&] { block_.experts_backward(weights(dexperts, F_), weights(experts, F_), stream_()); });
  }
  void scatter_router_backward(float* dx, float* drouter_w, float aux_weight, const float* x,
                               const float* router_w) override {
    guarded([&] { block_.scatter_router_backward(dx, drouter_w, aux_weight, x, router_w, stream_()); });
  }
  void zero(float* x, long n) override {
    MOEBENCH_CUDA_CHECK(cudaMemsetAsync(x, 0, sizeof(float) * (size_t)n, stream_()));
  }
  void add(float* dst, const float* src, long n) override {
    cuda::residual_forward(dst, dst, src, n, stream_());
  }
  float* scratch(long n) override {
    guarded([&] {
      if ((long)scratch_.size() < n) scratch_.resize((size_t)n);
    });
    return scratch_.data();
  }

 private:
  // The block's buffers (routed rows, expert activations) grow with the micro-batch's tokens:
  // an out-of-memory error says so.
  template <typename Fn>
  static void guarded(Fn&& fn) {
    try {
      fn();
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      if (what.find("out of memory") == std::string::npos) throw;
      throw std::runtime_error(what + " (an MoE block's routed rows and expert activations); lower "
                                      "train.batch_size or model.seq_len, or raise parallel.microbatches");
    }
  }
  // The experts' parameters in the arena's layout: w1, b1, w2, b2 of one expert after the other.
  cuda::ExpertWeights<float> weights(const std::vector<ExpertParams>& experts, int F) {
    if (experts.empty()) throw std::invalid_argument("CudaMoeRows: no experts");
    F_ = F;
    const long FC = (long)F * s_.C, stride = 2 * FC + F + s_.C;
    const ExpertParams& e0 = experts.front();
    for (size_t e = 0; e < experts.size(); ++e) {
      const ExpertParams& p = experts[e];
      if (p.w1 != e0.w1 + (long)e * stride || p.b1 != p.w1 + FC || p.w2 != p.b1 + F || p.b2 != p.w2 + FC)
        throw std::invalid_argument("CudaMoeRows: the experts are not in the parameter arena's layout");
    }
    return {e0.w1, e0.b1, e0.w2, e0.b2, stride};
  }
  std::function<cudaStream_t()> stream_;
  cuda::MoeBlock<float> block_;
  MoeLayerShape s_{};
  int F_ = 0;
  float aux_ = 0.0f;
  AuxStats global_;  // host source of the last upload (pageable: kept until the next forward)
  cuda::DeviceBuffer<int> forced_;
  cuda::DeviceBuffer<float> scratch_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(CudaDeviceQueue& queue) : q_(queue) {
    bind();
    own_ = q_.create_stream(false);
  }
  ~CudaBackend() override { release(norm_scratch_); }
  std::string name() const override { return "cuda:" + std::to_string(q_.device()); }
  bool device_memory() const override { return true; }

  void* allocate(size_t bytes, const char* what) override {
    bind();
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
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
    return std::make_unique<CudaMoeRows>([this] { return stream(); });
  }

  void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) override {
    cuda::encoder_forward(out, inp, wte, wpe, B, T, C, stream());
  }
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) override {
    cuda::encoder_backward(dwte, dwpe, dout, inp, B, T, C, stream());
  }
  void position_embedding_forward(float*, const float*, long, int, int) override {
    missing("position_embedding_forward");
  }
  void position_embedding_backward(float*, const float*, long, int, int) override {
    missing("position_embedding_backward");
  }
  void embedding_partition_lookup(float*, const int*, const float*, long, int) override {
    missing("embedding_partition_lookup");
  }
  void embedding_partition_assemble(float*, const float*, const float*, long, int, int, int) override {
    missing("embedding_partition_assemble");
  }
  void embedding_partition_split(float*, const float*, long, int, int) override { missing("embedding_partition_split"); }
  void embedding_partition_backward(float*, const float*, const int*, long, int) override {
    missing("embedding_partition_backward");
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                         const float* bias, int N, int C) override {
    cuda::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, stream());
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int N, int C) override {
    cuda::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, stream());
  }
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                      int OC) override {
    cuda::matmul_forward(out, inp, weight, bias, N, C, OC, stream());
  }
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int N, int C, int OC) override {
    cuda::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC, stream());
  }
  void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C,
                         int NH) override {
    cuda::attention_forward(out, preatt, att, qkv, B, T, C, NH, stream());
  }
  void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                          const float* att, int B, int T, int C, int NH) override {
    cuda::attention_backward(dqkv, dpreatt, datt, dout, qkv, att, B, T, C, NH, stream());
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
  void vocab_slice_embed(float*, const int*, const float*, long, int, int, int) override {
    missing("vocab_slice_embed");
  }
  void vocab_slice_embed_backward(float*, const float*, const int*, long, int, int, int) override {
    missing("vocab_slice_embed_backward");
  }
  void vocab_ce_row_max(float*, const float*, int, int) override { missing("vocab_ce_row_max"); }
  void vocab_ce_exp(float*, float*, const float*, const float*, const int*, int, int, int) override {
    missing("vocab_ce_exp");
  }
  void vocab_ce_finish(float*, float*, const float*, const float*, int, int) override { missing("vocab_ce_finish"); }
  void vocab_ce_backward(float*, const float*, const int*, float, int, int, int) override {
    missing("vocab_ce_backward");
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
  [[noreturn]] void missing(const char* fn) const {
    throw std::runtime_error(std::string(fn) + " has no CUDA kernel yet: it runs on the cpu backend only (" + name() +
                             ")");
  }

  CudaDeviceQueue& q_;
  DeviceQueue::Stream own_ = -1;
  char* norm_scratch_ = nullptr;  // sums_of_squares' device scratch (grown on use)
  size_t norm_scratch_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(CudaDeviceQueue& queue) { return std::make_unique<CudaBackend>(queue); }

}  // namespace moebench
