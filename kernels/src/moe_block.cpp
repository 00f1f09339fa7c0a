// MoeBlock<T>: the single-GPU MoE block, host code calling the launchers of kernels/.
#include "moebench/kernels/moe_block.h"

#include <stdexcept>
#include <string>

#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/dispatch_layout.h"
#include "moebench/kernels/kernel_profile.h"
#include "moebench/kernels/matmul.h"
#include "moebench/kernels/moe_permute.h"

namespace moebench::cuda {
namespace {

// Grows b to at least n elements (at least 1, so no pointer is null); never shrinks, so a
// repeated or smaller shape reuses the allocation.
template <typename U>
void grow(DeviceBuffer<U>& b, size_t n) {
  if (n < 1) n = 1;
  if (b.size() < n) b.resize(n);
}

void grow(DeviceRoutingBuffers& rb, int N, int E, int K) {
  const size_t ne = (size_t)N * E, nk = (size_t)N * K;
  grow(rb.probs, ne);
  grow(rb.expert, nk);
  grow(rb.gate, nk);
  grow(rb.kept, nk);
  grow(rb.selected, E);
  grow(rb.counts, E);
  grow(rb.f, E);
  grow(rb.P, E);
  grow(rb.aux, 1);
}

void check_shape(int N, int C, int F, int E, int K, int capacity) {
  if (N < 0 || C < 1 || F < 1 || E < 1)
    throw std::invalid_argument("cuda::MoeBlock: bad shape (N >= 0 and C, F, E >= 1 required; got N = " +
                                std::to_string(N) + ", C = " + std::to_string(C) + ", F = " + std::to_string(F) +
                                ", E = " + std::to_string(E) + ")");
  if (K < 1 || K > E)
    throw std::invalid_argument("cuda::MoeBlock: top_k = " + std::to_string(K) + " must be in [1, experts = " +
                                std::to_string(E) + "]");
  if (capacity < 0)
    throw std::invalid_argument("cuda::MoeBlock: capacity = " + std::to_string(capacity) +
                                " must be >= 0 (0 = dropless)");
}

}  // namespace

template <typename T>
void MoeBlock<T>::PinnedFree::operator()(void* p) const noexcept {
  if (p) (void)cudaFreeHost(p);  // no throw from a deleter
}

template <typename T>
MoeBlock<T>::MoeBlock() = default;
template <typename T>
MoeBlock<T>::~MoeBlock() = default;
template <typename T>
MoeBlock<T>::MoeBlock(MoeBlock&&) noexcept = default;
template <typename T>
MoeBlock<T>& MoeBlock<T>::operator=(MoeBlock&&) noexcept = default;

template <typename T>
float MoeBlock<T>::forward(T* out, const T* x, const T* router_w, const ExpertWeights<T>& w, int N, int C, int F,
                           int E, int K, int capacity, bool gate_normalize, cudaStream_t stream) {
  check_shape(N, C, F, E, K, capacity);
  const float aux = route(x, router_w, N, C, E, K, capacity, gate_normalize, nullptr, stream);
  experts_forward(w, F, stream);
  combine(out, stream);
  return aux;
}

template <typename T>
void MoeBlock<T>::backward(T* dx, T* drouter_w, const ExpertWeights<T>& dw, const T* dout, float aux_weight,
                           const T* x, const T* router_w, const ExpertWeights<T>& w, cudaStream_t stream) {
  combine_backward(dout, stream);
  experts_backward(dw, w, stream);
  scatter_router_backward(dx, drouter_w, aux_weight, x, router_w, stream);
}

template <typename T>
float MoeBlock<T>::route(const T* x, const T* router_w, int N, int C, int E, int K, int capacity,
                         bool gate_normalize, const int* forced_experts, cudaStream_t stream) {
  have_forward_ = have_experts_ = false;  // until this forward completes
  check_shape(N, C, 1, E, K, capacity);
  N_ = N, C_ = C, E_ = E, K_ = K;

  // Router: logits = x Wr^T, then softmax / top-k / gates / capacity / aux on the device.
  grow(logits_, (size_t)N * E);
  matmul_forward(logits_.data(), x, router_w, static_cast<const T*>(nullptr), N, C, E, stream);
  profile_step("router: logits = x Wr^T", stream);
  grow(rb_, N, E, K);
  routing_ = rb_.view();
  const RouterParams params{K, capacity, gate_normalize};
  route_from_logits(routing_, logits_.data(), N, E, params, forced_experts, stream);
  profile_step("router: softmax, top-k, gates, capacity, aux", stream);

  // Dispatch layout; the offsets (and aux) go to the host once: the expert GEMMs size on them.
  grow(d_offsets_, (size_t)E + 1);
  grow(slot_of_, (size_t)N * K);
  grow(token_of_, (size_t)N * K);
  dispatch_layout(d_offsets_.data(), slot_of_.data(), token_of_.data(), routing_.expert, routing_.kept, N, K, E,
                  stream);
  profile_step("dispatch layout", stream);
  if (host_capacity_ < E + 1) {
    host_capacity_ = 0;  // until the new allocation succeeds
    host_offsets_.reset();
    int* p = nullptr;
    MOEBENCH_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p), sizeof(int) * (size_t)(E + 1)));
    host_offsets_.reset(p);
    host_capacity_ = E + 1;
  }
  if (!host_aux_) {
    float* p = nullptr;
    MOEBENCH_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p), sizeof(float)));
    host_aux_.reset(p);
  }
  MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(host_offsets_.get(), d_offsets_.data(), sizeof(int) * (size_t)(E + 1),
                                      cudaMemcpyDeviceToHost, stream));
  MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(host_aux_.get(), routing_.aux, sizeof(float), cudaMemcpyDeviceToHost, stream));
  MOEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  profile_step("offsets to the host", stream);
  offsets_.assign(host_offsets_.get(), host_offsets_.get() + E + 1);
  const int S = offsets_[E];

  grow(xg_, (size_t)S * C);
  grow(y_, (size_t)S * C);
  moe_permute_forward(xg_.data(), x, token_of_.data(), S, C, stream);
  profile_step("permute", stream);
  have_forward_ = true;
  return *host_aux_;
}

template <typename T>
void MoeBlock<T>::experts_forward(const ExpertWeights<T>& w, int F, cudaStream_t stream) {
  if (!have_forward_) throw std::logic_error("cuda::MoeBlock::experts_forward without route");
  check_shape(N_, C_, F, E_, K_, 0);
  F_ = F;
  const int S = offsets_[E_];
  grow(h_, (size_t)S * F);
  grow(a_, (size_t)S * F);
  moebench::cuda::experts_forward(y_.data(), h_.data(), a_.data(), xg_.data(), offsets_.data(), w, E_, C_, F, stream,
                                  expert_gemms);
  have_experts_ = true;
}

template <typename T>
void MoeBlock<T>::combine(T* out, cudaStream_t stream) {
  if (!have_forward_) throw std::logic_error("cuda::MoeBlock::combine without route");
  moe_unpermute_forward(out, y_.data(), routing_.gate, slot_of_.data(), N_, K_, C_, stream);
  profile_step("unpermute (gate-weighted sum)", stream);
}

template <typename T>
void MoeBlock<T>::prepare_backward() {
  if (!have_forward_) throw std::logic_error("cuda::MoeBlock::backward without forward");
  const int S = offsets_[E_];
  grow(dgate_, (size_t)N_ * K_);
  grow(dy_, (size_t)S * C_);
  grow(dxg_, (size_t)S * C_);
}

template <typename T>
void MoeBlock<T>::combine_backward(const T* dout, cudaStream_t stream) {
  prepare_backward();
  moe_unpermute_backward(dgate_.data(), dy_.data(), dout, y_.data(), routing_.gate, slot_of_.data(), N_, K_, C_,
                         stream);
  profile_step("unpermute backward", stream);
}

template <typename T>
void MoeBlock<T>::experts_backward(const ExpertWeights<T>& dw, const ExpertWeights<T>& w, cudaStream_t stream) {
  if (!have_experts_) throw std::logic_error("cuda::MoeBlock::experts_backward without experts_forward");
  const int S = offsets_[E_];
  grow(da_, (size_t)S * F_);
  grow(dh_, (size_t)S * F_);
  moebench::cuda::experts_backward(dxg_.data(), dw, da_.data(), dh_.data(), dy_.data(), xg_.data(), h_.data(),
                                   a_.data(), offsets_.data(), w, E_, C_, F_, stream, expert_gemms);
}

template <typename T>
void MoeBlock<T>::scatter_router_backward(T* dx, T* drouter_w, float aux_weight, const T* x, const T* router_w,
                                          cudaStream_t stream) {
  if (!have_forward_) throw std::logic_error("cuda::MoeBlock::backward without forward");
  grow(dlogits_, (size_t)N_ * E_);
  moe_permute_backward(dx, dxg_.data(), slot_of_.data(), N_, K_, C_, stream);
  profile_step("permute backward (scatter-add)", stream);
  // Router: dgate (+ aux) -> dlogits -> dx += dlogits Wr, dWr += dlogits^T x.
  router_logits_backward(dlogits_.data(), dgate_.data(), aux_weight, routing_, stream);
  profile_step("router backward", stream);
  matmul_backward(dx, drouter_w, static_cast<T*>(nullptr), dlogits_.data(), x, router_w, N_, C_, E_, stream);
  profile_step("router: dx += dlogits Wr, dWr", stream);
}

template class MoeBlock<float>;
template class MoeBlock<bf16>;

}  // namespace moebench::cuda
