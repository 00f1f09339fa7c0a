#pragma once
// MoeBlock<T>: one MoE block on one GPU with all E experts local, forward and backward: the
// device counterpart of core's MoeLayer without a strategy (moe/moe_layer.h), same semantics:
//
//   forward   logits[N,E] = x Wr^T (matmul_forward) -> route_from_logits (softmax, top-k,
//             gates, GShard capacity admission, aux) -> dispatch_layout -> ONE small
//             device-to-host copy of the offsets [E+1] and aux (the grouped expert GEMMs size
//             themselves on the host; the stream is synchronised once here) -> permute ->
//             experts_forward (grouped cuBLAS) -> unpermute (gate-weighted combine).
//   backward  unpermute backward (dgate, dy) -> experts_backward -> permute backward (dx +=)
//             -> router_logits_backward (gates + aux_weight * aux) -> matmul_backward
//             (dx += dlogits Wr, dWr += dlogits^T x).
//
// Accumulation as MoeLayer documents it: out is overwritten; dx, drouter_w and the expert
// gradients are accumulated (+=). T = float (fp32 everywhere, no TF32) or bf16 (bf16
// activations, weights and gradients, fp32 accumulation inside every kernel and GEMM; router
// probabilities, gates and gate gradients fp32 as in router.h). For bf16 keep C and F
// multiples of 8 (cuBLAS alignment, experts.h).
//
// Kept from the last forward for backward (device memory owned by the block): the routing
// (probs, expert, gate, kept, selected, counts, f, P, aux), the dispatch layout (slot_of
// [N*K], token_of [S]; offsets [E+1] on the device and on the host), the permuted inputs
// xg [S,C], the expert outputs y [S,C] (for dgate) and the expert activations h, a [S,F]
// (pre- and post-GeLU). x, router_w and the weights are NOT copied: backward takes them
// again and they must be unchanged. Backward's scratch: dgate [N,K] (fp32), dlogits [N,E],
// dy, dxg [S,C], da, dh [S,F]. S = kept assignments <= N*K.
//
// Buffers grow to the largest shape seen and are reused (no allocation when the shape
// repeats or shrinks). Every call runs on `stream`; forward returns after the offsets are on
// the host, with the expert GEMMs and the combine still queued; backward returns at once.
// forward and backward must be ordered by the caller (same stream, or an event between).
// Not thread-safe; one block per host thread and device (cuBLAS: blas_handle.h).
//
// Determinism: every step is deterministic (router.h, dispatch_layout.h, moe_permute.h,
// experts.h, matmul.h), so the results are bitwise identical run to run.
#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "moebench/kernels/device_buffer.h"
#include "moebench/kernels/experts.h"
#include "moebench/kernels/precision.h"
#include "moebench/kernels/router.h"

namespace moebench::cuda {

template <typename T>
class MoeBlock {
 public:
  MoeBlock();
  ~MoeBlock();
  MoeBlock(MoeBlock&&) noexcept;
  MoeBlock& operator=(MoeBlock&&) noexcept;
  MoeBlock(const MoeBlock&) = delete;
  MoeBlock& operator=(const MoeBlock&) = delete;

  // Which GEMMs the experts run on (experts.h, expert_gemm_tuner.h): measured by default.
  ExpertGemmPath expert_gemms = ExpertGemmPath::automatic;

  // out[N,C] (overwritten) = sum over the kept (n,k) of gate[n,k] * expert_{e[n,k]}(x[n]);
  // router_w is [E,C], w the E experts' FFNs (experts.h layout). capacity: assignments each
  // expert admits, 0 = dropless (the caller resolves it with core's expert_capacity, as
  // MoeLayer does). Returns the unweighted aux loss (read back with the offsets). Throws
  // std::invalid_argument on a bad shape (N < 0; C, F, E < 1; K outside [1, E]; capacity < 0).
  float forward(T* out, const T* x, const T* router_w, const ExpertWeights<T>& w, int N, int C, int F, int E,
                int K, int capacity, bool gate_normalize, cudaStream_t stream = nullptr);

  // Accumulates (+=) dx[N,C], drouter_w[E,C] and dw (same layout as w) given dout[N,C];
  // aux_weight is the weight of this block's aux loss in the total loss. x, router_w and w
  // are those of the last forward. Throws std::logic_error without a forward.
  void backward(T* dx, T* drouter_w, const ExpertWeights<T>& dw, const T* dout, float aux_weight, const T* x,
                const T* router_w, const ExpertWeights<T>& w, cudaStream_t stream = nullptr);

  // The same work in phases, for a caller that moves the routed rows itself between them (a
  // distributed strategy: core's moe/moe_rows.h). forward = route, experts_forward, combine;
  // backward = combine_backward, experts_backward, scatter_router_backward.
  //   route             logits, routing, layout, the offsets (and aux) on the host, xg; sizes
  //                     y. forced_experts: optional DEVICE [N,K] choice replacing top-k.
  //                     Returns the unweighted aux loss.
  //   experts_forward   y = the E experts of w applied to xg (every expert on this device).
  //   combine           out[N,C] (overwritten) = gate-weighted sum of y.
  //   combine_backward  dgate and dy from dout; sizes dxg (prepare_backward: the sizes alone,
  //                     for a caller that binds dy and dxg before).
  //   experts_backward  dxg (overwritten) and dw (+=) from dy.
  //   scatter_router_backward  dx += dxg's rows by token, then the router: dx, drouter_w +=.
  // xg, y, dy, dxg: [S,C] device arrays of the last route (a caller fills y and dxg itself when
  // the experts run elsewhere).
  float route(const T* x, const T* router_w, int N, int C, int E, int K, int capacity, bool gate_normalize,
              const int* forced_experts = nullptr, cudaStream_t stream = nullptr);
  void experts_forward(const ExpertWeights<T>& w, int F, cudaStream_t stream = nullptr);
  void combine(T* out, cudaStream_t stream = nullptr);
  void prepare_backward();  // sizes dy and dxg (combine_backward does it too)
  void combine_backward(const T* dout, cudaStream_t stream = nullptr);
  void experts_backward(const ExpertWeights<T>& dw, const ExpertWeights<T>& w, cudaStream_t stream = nullptr);
  void scatter_router_backward(T* dx, T* drouter_w, float aux_weight, const T* x, const T* router_w,
                               cudaStream_t stream = nullptr);
  T* xg() { return xg_.data(); }
  T* y() { return y_.data(); }
  T* dy() { return dy_.data(); }
  T* dxg() { return dxg_.data(); }

  // Of the last forward: the routing (device arrays; shape fields set), the dispatch layout
  // (offsets on the host [E+1]; slot_of [N*K] on the device, -1 when dropped) and the kept
  // assignments S = offsets[E].
  const DeviceRouting& routing() const { return routing_; }
  const std::vector<int>& expert_offsets() const { return offsets_; }
  const int* slot_of() const { return slot_of_.data(); }
  int rows() const { return offsets_.empty() ? 0 : offsets_.back(); }

 private:
  struct PinnedFree {
    void operator()(void* p) const noexcept;
  };

  int N_ = 0, C_ = 0, F_ = 0, E_ = 0, K_ = 0;
  bool have_forward_ = false;  // routed (the backward phases need it)
  bool have_experts_ = false;  // experts_forward ran (experts_backward needs its activations)
  DeviceRoutingBuffers rb_;
  DeviceRouting routing_;
  std::unique_ptr<int, PinnedFree> host_offsets_;  // pinned [E+1], the D2H target
  std::unique_ptr<float, PinnedFree> host_aux_;    // pinned [1]
  int host_capacity_ = 0;                           // entries of host_offsets_
  std::vector<int> offsets_;                        // [E+1] of the last forward
  DeviceBuffer<T> logits_, dlogits_;                // [N,E]
  DeviceBuffer<int> d_offsets_, slot_of_, token_of_;  // [E+1], [N*K], [N*K] (S used)
  DeviceBuffer<T> xg_, y_, dy_, dxg_;               // [S,C]
  DeviceBuffer<T> h_, a_, da_, dh_;                 // [S,F]
  DeviceBuffer<float> dgate_;                       // [N,K]
};

extern template class MoeBlock<float>;
extern template class MoeBlock<bf16>;

}  // namespace moebench::cuda
