#pragma once
// The MoE router on the device: core's moe/router.h from the logits on (same conventions:
// softmax, top-k by descending probability with ties to the lower expert index, gates
// optionally renormalised over the k chosen with dropped ones included, GShard capacity
// admission in priority order, aux = E * sum_e f_e P_e), and its backward down to dlogits.
//
// The logits GEMM is not here: the caller computes logits[N,E] = x[N,C] @ Wr[E,C]^T with
// moebench::cuda::matmul_forward (cuBLAS), and dx, dWr from dlogits with matmul_backward.
//
// Logits and dlogits are T = float or bf16; everything the router produces (probabilities,
// gates, statistics) is fp32 for both, as are the gate gradients it consumes.
//
// Determinism: one warp per token for the row work, one block per expert scanning every
// assignment for the admission order and the statistics; no atomics, fixed reduction orders.
// Given probabilities equal to the CPU's, the expert choice, gates, kept flags, selected and
// counts equal the CPU's bit for bit (the gate sums run in k order as on the CPU); the
// probabilities themselves differ from the CPU by a few ulp (expf, warp-tree sums).
#include <cuda_runtime.h>

#include <cstdint>

#include "moebench/kernels/device_buffer.h"

namespace moebench::cuda {

// core's RouterOptions with the capacity already resolved by moebench::expert_capacity():
// kernels/ does not depend on core, so the caller does that one line.
struct RouterParams {
  int top_k = 2;               // K, 1 <= K <= E
  int capacity = 0;            // per-expert capacity; 0 = unlimited (dropless)
  bool gate_normalize = true;  // renormalise the k gate weights to sum to 1
};

// The routing decision of one forward pass on the device (core's Routing without the logits
// copy). The shape fields are host values that route_from_logits sets; the arrays are device
// memory owned by the caller (DeviceRoutingBuffers below, or the runtime's arena).
struct DeviceRouting {
  int N = 0, E = 0, K = 0;
  int capacity = 0;            // 0 = unlimited
  bool gate_normalize = true;
  float* probs = nullptr;      // [N,E] softmax(logits)
  int* expert = nullptr;       // [N,K] chosen expert per assignment (descending probability)
  float* gate = nullptr;       // [N,K] gate weight (normalised when gate_normalize)
  uint8_t* kept = nullptr;     // [N,K] 1 = admitted, 0 = dropped by capacity
  int* selected = nullptr;     // [E] top-k selections per expert, before dropping
  int* counts = nullptr;       // [E] kept assignments per expert
  float* f = nullptr;          // [E] selected / (N*K)
  float* P = nullptr;          // [E] mean probability
  float* aux = nullptr;        // [1] E * sum_e f_e P_e (unweighted)
};

// Owning storage for a DeviceRouting of up to N tokens (reallocated when a shape changes).
struct DeviceRoutingBuffers {
  DeviceBuffer<float> probs, gate, f, P, aux;
  DeviceBuffer<int> expert, selected, counts;
  DeviceBuffer<uint8_t> kept;

  void resize(int N, int E, int K) {
    probs.resize((size_t)N * E);
    expert.resize((size_t)N * K);
    gate.resize((size_t)N * K);
    kept.resize((size_t)N * K);
    selected.resize(E);
    counts.resize(E);
    f.resize(E);
    P.resize(E);
    aux.resize(1);
  }
  // The pointers, with the shape fields left for route_from_logits to set.
  DeviceRouting view() {
    DeviceRouting r;
    r.probs = probs.data();
    r.expert = expert.data();
    r.gate = gate.data();
    r.kept = kept.data();
    r.selected = selected.data();
    r.counts = counts.data();
    r.f = f.data();
    r.P = P.data();
    r.aux = aux.data();
    return r;
  }
};

// Fills the arrays of r (sized for N, E, K) from device logits[N,E] and sets its shape
// fields. forced_experts: optional device [N,K] choice replacing top-k (indices must be in
// [0, E); the CPU function checks that, the device cannot throw). Throws
// std::invalid_argument on bad sizes (N < 0, E < 1, K outside [1, E], capacity < 0).
// Non-finite logits give an unspecified (but in-range) expert choice.
template <typename T>
void route_from_logits(DeviceRouting& r, const T* logits, int N, int E, const RouterParams& p,
                       const int* forced_experts = nullptr, cudaStream_t stream = nullptr);

// dlogits[N,E] (overwritten) for a loss L = (terms through the gates) + aux_weight * aux,
// given device dgate[N,K] = dL/dgate (zero for dropped assignments, as
// moe_unpermute_backward writes it): back through the optional normalisation and the aux
// loss into dprobs, then through the softmax. r is the routing of the forward pass.
template <typename T>
void router_logits_backward(T* dlogits, const float* dgate, float aux_weight, const DeviceRouting& r,
                            cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
