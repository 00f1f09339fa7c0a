// Built only with the CUDA build (core/CMakeLists.txt: src/model/cuda/).
#include "cuda_moe_rows.h"
#include "bf16_operands.h"

#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/device_buffer.h"
#include "moebench/kernels/experts.h"
#include "moebench/kernels/mixed_precision.h"
#include "moebench/kernels/moe_block.h"
#include "moebench/kernels/moe_permute.h"
#include "moebench/kernels/residual.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/moe_rows.h"
#include "moebench/tensor/backend.h"

namespace moebench {
namespace {

// The routed rows and expert activations grow with the micro-batch's tokens: an out-of-memory
// error says so.
template <typename Fn>
void guarded(Fn&& fn) {
  try {
    fn();
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (what.find("out of memory") == std::string::npos) throw;
    throw std::runtime_error(what + " (an MoE block's routed rows and expert activations); lower "
                                    "train.batch_size or model.seq_len, or raise parallel.microbatches");
  }
}

// Experts' parameters in the arena's layout (w1, b1, w2, b2 of one expert after the other) as
// kernels/'s strided ExpertWeights.
cuda::ExpertWeights<float> arena_weights(const std::vector<ExpertParams>& experts, int C, int F) {
  if (experts.empty()) throw std::invalid_argument("MoE rows on the GPU: no experts");
  const long FC = (long)F * C, stride = 2 * FC + F + C;
  const ExpertParams& e0 = experts.front();
  for (size_t e = 0; e < experts.size(); ++e) {
    const ExpertParams& p = experts[e];
    if (p.w1 != e0.w1 + (long)e * stride || p.b1 != p.w1 + FC || p.w2 != p.b1 + F || p.b2 != p.w2 + FC)
      throw std::invalid_argument("MoE rows on the GPU: the experts are not in the parameter arena's layout");
  }
  return {e0.w1, e0.b1, e0.w2, e0.b2, stride};
}

// The arena's expert layout (arena_weights) over a bf16 copy of the experts' block.
cuda::ExpertWeights<cuda::bf16> bf16_weights(const cuda::bf16* base, int C, int F, long stride) {
  auto* p = const_cast<cuda::bf16*>(base);
  const long FC = (long)F * C;
  return {p, p + FC, p + FC + F, p + 2 * FC + F, stride};
}

template <typename T>
void grow(cuda::DeviceBuffer<T>& b, size_t n) {
  if (b.size() < (n ? n : 1)) b.resize(n ? n : 1);
}

// ExpertBank's contract on the GPU: grouped GEMMs, the activations kept for backward. Mixed
// precision (`copies`): the rows are cast to bf16 (kept for the weight gradients), the experts
// run in bf16 on the weights' bf16 copy, y and dx are cast back to fp32, and the weight
// gradients, computed into a zeroed bf16 block, are added into the fp32 ones.
class CudaExperts final : public ExpertCompute {
 public:
  CudaExperts(std::function<cudaStream_t()> stream, const WeightCopies* copies)
      : stream_(std::move(stream)), copies_(copies) {}
  void forward(float* y, const float* x, const std::vector<int>& offsets, const std::vector<ExpertParams>& experts,
               int C, int F) override {
    offsets_ = offsets;
    x_ = x;
    C_ = C, F_ = F;
    const int L = (int)offsets.size() - 1;
    const size_t S = (size_t)offsets.back(), SF = S * F;
    const cuda::ExpertWeights<float> w = arena_weights(experts, C, F);
    cudaStream_t st = stream_();
    guarded([&] {
      if (!copies_) {
        grow(h_, SF);
        grow(a_, SF);
        return cuda::experts_forward(y, h_.data(), a_.data(), x, offsets_.data(), w, L, C, F, st);
      }
      grow(x16_, S * C);
      grow(y16_, S * C);
      grow(h16_, SF);
      grow(a16_, SF);
      cuda::cast(x16_.data(), x, (long)(S * C), st);
      const Bf16Operand w16(w.w1, (size_t)L * w.stride, copies_, st);
      cuda::experts_forward(y16_.data(), h16_.data(), a16_.data(), x16_.data(), offsets_.data(),
                            bf16_weights(w16.get(), C, F, w.stride), L, C, F, st);
      cuda::cast(y, y16_.data(), (long)(S * C), st);
    });
  }
  void backward(float* dx, const float* dy, const std::vector<ExpertParams>& dexperts,
                const std::vector<ExpertParams>& experts) override {
    if (offsets_.empty()) throw std::logic_error("MoE experts on the GPU: backward without forward");
    const int L = (int)offsets_.size() - 1;
    const size_t S = (size_t)offsets_.back(), SF = S * F_;
    const cuda::ExpertWeights<float> w = arena_weights(experts, C_, F_), dw = arena_weights(dexperts, C_, F_);
    cudaStream_t st = stream_();
    guarded([&] {
      if (!copies_) {
        grow(da_, SF);
        grow(dh_, SF);
        return cuda::experts_backward(dx, dw, da_.data(), dh_.data(), dy, x_, h_.data(), a_.data(), offsets_.data(),
                                      w, L, C_, F_, st);
      }
      const size_t n = (size_t)L * w.stride;
      grow(dy16_, S * C_);
      grow(dx16_, S * C_);
      grow(da16_, SF);
      grow(dh16_, SF);
      grow(dw16_, n);
      cuda::cast(dy16_.data(), dy, (long)(S * C_), st);
      MOEBENCH_CUDA_CHECK(cudaMemsetAsync(dw16_.data(), 0, n * sizeof(cuda::bf16), st));
      const Bf16Operand w16(w.w1, n, copies_, st);
      cuda::experts_backward(dx16_.data(), bf16_weights(dw16_.data(), C_, F_, w.stride), da16_.data(), dh16_.data(),
                             dy16_.data(), x16_.data(), h16_.data(), a16_.data(), offsets_.data(),
                             bf16_weights(w16.get(), C_, F_, w.stride), L, C_, F_, st);
      cuda::cast(dx, dx16_.data(), (long)(S * C_), st);
      cuda::accumulate(dw.w1, dw16_.data(), (long)n, st);
    });
  }

 private:
  std::function<cudaStream_t()> stream_;
  const WeightCopies* copies_;
  std::vector<int> offsets_;
  const float* x_ = nullptr;
  int C_ = 0, F_ = 0;
  cuda::DeviceBuffer<float> h_, a_, da_, dh_;                               // fp32
  cuda::DeviceBuffer<cuda::bf16> x16_, y16_, h16_, a16_, dy16_, dx16_, da16_, dh16_, dw16_;  // mixed precision
};

// A strategy's row work on the GPU; the permutation's index goes up per call into a
// stream-ordered allocation. Arrays come from the backend and are kept for reuse when released
// (cudaFree would synchronise the whole device at every pass, stalling the streams the host
// enqueues ahead on). One instance serves one block and activation slot, whose passes the step
// graph orders like the slot's activations, so a released array's last kernels precede its next
// user's. Actions of several comm roles may allocate at once (hier_a2a's staging): a mutex.
class CudaRowOps final : public RowOps {
 public:
  CudaRowOps(Backend& be, std::function<cudaStream_t()> stream, const WeightCopies* copies)
      : be_(be), stream_(std::move(stream)), copies_(copies) {}
  ~CudaRowOps() override {
    for (const auto& [n, p] : free_) be_.release(p);
  }
  float* allocate(long n) override {
    n = n > 0 ? n : 1;
    std::lock_guard lock(mu_);
    auto it = free_.lower_bound(n);
    if (it != free_.end() && it->first <= 2 * n) {  // reuse one not much larger
      float* p = it->second;
      free_.erase(it);
      return p;
    }
    float* p = static_cast<float*>(be_.allocate(sizeof(float) * (size_t)n, "an MoE block's exchanged rows"));
    size_[p] = n;
    return p;
  }
  void release(float* p) noexcept override {
    std::lock_guard lock(mu_);
    const auto it = size_.find(p);
    if (it == size_.end()) return;
    if (free_.size() >= kKept) {  // a bounded pool: the largest kept goes back
      const auto largest = std::prev(free_.end());
      size_.erase(largest->second);
      be_.release(largest->second);
      free_.erase(largest);
    }
    free_.emplace(it->second, p);
  }
  void copy(float* dst, const float* src, long n) override {
    if (n > 0)
      MOEBENCH_CUDA_CHECK(
          cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)n, cudaMemcpyDeviceToDevice, stream_()));
  }
  void zero(float* x, long n) override {
    if (n > 0) MOEBENCH_CUDA_CHECK(cudaMemsetAsync(x, 0, sizeof(float) * (size_t)n, stream_()));
  }
  void add(float* dst, const float* src, long n) override {
    if (n > 0) cuda::residual_forward(dst, dst, src, n, stream_());
  }
  void permute(float* dst, const float* src, const std::vector<long>& index, int C, bool to_experts) override {
    const int R = (int)index.size();
    if (R == 0) return;
    std::vector<int> gather((size_t)R);  // dst[i] = src[gather[i]]
    for (int i = 0; i < R; ++i) {
      if (to_experts) gather[(size_t)i] = (int)index[(size_t)i];
      else gather[(size_t)index[(size_t)i]] = i;
    }
    cudaStream_t s = stream_();
    int* d = nullptr;
    MOEBENCH_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&d), sizeof(int) * (size_t)R, s));
    MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(d, gather.data(), sizeof(int) * (size_t)R, cudaMemcpyHostToDevice, s));
    cuda::moe_permute_forward(dst, src, d, R, C, s);
    MOEBENCH_CUDA_CHECK(cudaFreeAsync(d, s));
  }
  std::unique_ptr<ExpertCompute> make_experts() override { return std::make_unique<CudaExperts>(stream_, copies_); }

 private:
  static constexpr size_t kKept = 64;
  Backend& be_;
  std::function<cudaStream_t()> stream_;
  const WeightCopies* copies_;
  std::mutex mu_;
  std::multimap<long, float*> free_;          // released arrays by size (floats)
  std::unordered_map<float*, long> size_;     // every array this made and still holds
};

// MoeRows on the GPU: kernels/'s MoeBlock phases on the running task's stream, the experts in
// the arena's per-expert layout (ExpertWeights::stride).
class CudaMoeRows final : public MoeRows {
 public:
  CudaMoeRows(Backend& be, std::function<cudaStream_t()> stream, const WeightCopies* copies)
      : stream_(stream), ops_(be, std::move(stream), copies) {
    if (copies) mixed_experts_ = ops_.make_experts();
  }
  // A gate policy (fastermoe's topology-aware gate) runs on the host: the block routes once,
  // the policy rewrites the choice from the downloaded probabilities, and the block routes again
  // with that choice forced (the router's GEMM twice; the gates, capacity and aux then follow
  // the final choice as on the CPU, moe/router.h).
  void route(const float* x, const float* router_w, const MoeLayerShape& s, const int* forced_experts,
             const GatePolicy& policy) override {
    s_ = s;
    cudaStream_t st = stream_();
    const int capacity = expert_capacity(s.capacity_factor, s.N, s.K, s.E);
    const int* forced = forced_experts ? upload_choice(forced_experts) : nullptr;
    guarded([&] { aux_ = block_.route(x, router_w, s.N, s.C, s.E, s.K, capacity, s.gate_normalize, forced, st); });
    if (!policy) return;
    Routing r;
    r.N = s.N, r.E = s.E, r.K = s.K;
    r.gate_normalize = s.gate_normalize;
    r.probs.resize((size_t)s.N * s.E);
    r.expert.resize((size_t)s.N * s.K);
    const cuda::DeviceRouting& d = block_.routing();
    MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(r.probs.data(), d.probs, sizeof(float) * r.probs.size(), cudaMemcpyDeviceToHost, st));
    MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(r.expert.data(), d.expert, sizeof(int) * r.expert.size(), cudaMemcpyDeviceToHost, st));
    MOEBENCH_CUDA_CHECK(cudaStreamSynchronize(st));
    policy(r);
    for (const int e : r.expert)
      if (e < 0 || e >= s.E)
        throw std::logic_error("the gate policy chose expert " + std::to_string(e) + " out of range [0, " +
                               std::to_string(s.E) + ")");
    forced = upload_choice(r.expert.data());
    guarded([&] { aux_ = block_.route(x, router_w, s.N, s.C, s.E, s.K, capacity, s.gate_normalize, forced, st); });
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
    F_ = F;
    if (mixed_experts_) return mixed_experts_->forward(block_.y(), block_.xg(), offsets(), experts, s_.C, F);
    guarded([&] { block_.experts_forward(arena_weights(experts, s_.C, F), F, stream_()); });
  }
  void combine(float* out) override { block_.combine(out, stream_()); }
  void prepare_backward() override { guarded([&] { block_.prepare_backward(); }); }
  void combine_backward(const float* dout) override { guarded([&] { block_.combine_backward(dout, stream_()); }); }
  void experts_backward(const std::vector<ExpertParams>& dexperts, const std::vector<ExpertParams>& experts) override {
    if (mixed_experts_) return mixed_experts_->backward(block_.dxg(), block_.dy(), dexperts, experts);
    guarded([&] {
      block_.experts_backward(arena_weights(dexperts, s_.C, F_), arena_weights(experts, s_.C, F_), stream_());
    });
  }
  void scatter_router_backward(float* dx, float* drouter_w, float aux_weight, const float* x,
                               const float* router_w) override {
    guarded([&] { block_.scatter_router_backward(dx, drouter_w, aux_weight, x, router_w, stream_()); });
  }
  float* scratch(long n) override {
    guarded([&] {
      if ((long)scratch_.size() < n) scratch_.resize((size_t)n);
    });
    return scratch_.data();
  }
  RowOps& row_ops() override { return ops_; }

 private:
  // The [N,K] host choice in forced_ (on the stream: a pageable copy, the source free on return).
  const int* upload_choice(const int* host) {
    const size_t n = (size_t)s_.N * s_.K;
    guarded([&] {
      if (forced_.size() < n) forced_.resize(n);
    });
    MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(forced_.data(), host, sizeof(int) * n, cudaMemcpyHostToDevice, stream_()));
    return forced_.data();
  }
  std::function<cudaStream_t()> stream_;
  cuda::MoeBlock<float> block_;
  MoeLayerShape s_{};
  int F_ = 0;
  float aux_ = 0.0f;
  AuxStats global_;  // host source of the last upload (pageable: kept until the next forward)
  cuda::DeviceBuffer<int> forced_;
  cuda::DeviceBuffer<float> scratch_;
  CudaRowOps ops_;
  std::unique_ptr<ExpertCompute> mixed_experts_;  // mixed precision: the experts' bf16 GEMMs
};

}  // namespace

std::unique_ptr<MoeRows> make_cuda_moe_rows(Backend& be, std::function<cudaStream_t()> stream,
                                            const WeightCopies* copies) {
  return std::make_unique<CudaMoeRows>(be, std::move(stream), copies);
}

}  // namespace moebench
