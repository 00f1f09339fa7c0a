// Router kernels: a row kernel (one warp per token: softmax, top-k, gates), the admission
// kernel (one block per expert: GShard priority positions, kept flags, selections, counts,
// f and P), a one-thread aux kernel, and the backward row kernel.
#include <climits>
#include <stdexcept>
#include <string>

#include "moe_block_scan.cuh"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/precision.h"
#include "moebench/kernels/router.h"

namespace moebench::cuda {
namespace {

using moe_detail::kScanBlock;
using moe_detail::kScanWarps;

constexpr int kRowsPerBlock = 8;  // warps (tokens) per block of the row kernels

// Ranks (p, e) against (q, f) in the top-k order: higher probability first, equal
// probabilities to the lower expert index. Probabilities are finite, so this is a strict
// total order and the k-th choice is the best element ranked after the (k-1)-th.
__device__ inline bool ranks_before(float p, int e, float q, int f) {
  return p > q || (p == q && e < f);
}

// probs, expert and gate of one token per warp.
template <typename T>
__global__ void __launch_bounds__(kRowsPerBlock * kWarp)
    route_rows_kernel(float* probs, int* expert, float* gate, const T* logits, const int* forced,
                      int N, int E, int K, bool normalize) {
  const int lane = threadIdx.x % kWarp;
  const long n = (long)blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp;
  if (n >= N) return;  // warp-uniform
  const T* l = logits + n * E;
  float* p = probs + n * E;

  // Softmax, as the CPU: p = exp(l - max) / sum.
  float mx = -INFINITY;
  for (int e = lane; e < E; e += kWarp) mx = fmaxf(mx, to_float(l[e]));
  mx = moe_detail::warp_max(mx);
  float sum = 0.0f;
  for (int e = lane; e < E; e += kWarp) {
    const float v = expf(to_float(l[e]) - mx);
    p[e] = v;
    sum += v;
  }
  sum = moe_detail::warp_sum(sum);
  const float inv = 1.0f / sum;
  for (int e = lane; e < E; e += kWarp) p[e] *= inv;

  // Top-k: K warp arg-max reductions, each over the elements ranked after the last choice.
  int* ex = expert + n * K;
  if (forced) {
    for (int k = lane; k < K; k += kWarp) ex[k] = forced[n * K + k];
  } else {
    float last_p = INFINITY;
    int last_e = -1;
    for (int k = 0; k < K; ++k) {
      float best_p = -INFINITY;
      int best_e = INT_MAX;
      for (int e = lane; e < E; e += kWarp) {
        const float pe = p[e];  // written by this lane above
        if (ranks_before(last_p, last_e, pe, e) && ranks_before(pe, e, best_p, best_e)) {
          best_p = pe;
          best_e = e;
        }
      }
      for (int o = kWarp / 2; o > 0; o /= 2) {
        const float op = __shfl_xor_sync(0xffffffffu, best_p, o);
        const int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
        if (ranks_before(op, oe, best_p, best_e)) {
          best_p = op;
          best_e = oe;
        }
      }
      if (best_e >= E) best_e = k;  // only with NaN probabilities: keep the index in range
      if (lane == 0) ex[k] = best_e;
      last_p = best_p;
      last_e = best_e;
    }
  }
  __syncwarp();  // probabilities and choices written by other lanes become visible to lane 0

  // Gates in k order, exactly as the CPU sums them.
  if (lane == 0) {
    float* g = gate + n * K;
    float s = 0.0f;
    for (int k = 0; k < K; ++k) {
      g[k] = p[ex[k]];
      s += g[k];
    }
    if (normalize) {
      const float ginv = 1.0f / s;
      for (int k = 0; k < K; ++k) g[k] = g[k] * ginv;
    }
  }
}

// Block e: admission of expert e's assignments in GShard priority order (choice rank k
// outer, token n inner): the position of assignment (n, k) is the number of earlier
// assignments to e in that order; it is kept when the position is below the capacity.
// Every assignment is written by the block of its expert, so each kept[i] exactly once.
// Then selected, counts, f and P of e (P summed in double in a fixed tree order).
__global__ void __launch_bounds__(kScanBlock)
    route_admission_kernel(uint8_t* kept, int* selected, int* counts, float* f, float* P,
                           const int* expert, const float* probs, int N, int E, int K,
                           int capacity) {
  __shared__ int scan_shared[kScanWarps];
  __shared__ double sum_shared[kScanBlock];
  const int e = blockIdx.x;
  const long NK = (long)N * K;
  int running = 0;  // assignments to e met so far in priority order
  for (long base = 0; base < NK; base += kScanBlock) {
    const long j = base + threadIdx.x;  // priority order: j = k * N + n
    long i = -1;
    bool mine = false;
    if (j < NK) {
      const long k = j / N, n = j % N;
      i = n * K + k;
      mine = expert[i] == e;
    }
    int total = 0;
    const int pos = running + moe_detail::block_scan_flag(mine, &total, scan_shared);
    if (mine) kept[i] = (capacity == 0 || pos < capacity) ? 1 : 0;
    running += total;
  }
  double psum = 0.0;
  for (long n = threadIdx.x; n < N; n += kScanBlock) psum += probs[n * E + e];
  psum = moe_detail::block_sum_double(psum, sum_shared);
  if (threadIdx.x == 0) {
    selected[e] = running;
    counts[e] = capacity == 0 ? running : min(running, capacity);
    f[e] = N > 0 ? (float)((double)running / ((double)N * K)) : 0.0f;
    P[e] = N > 0 ? (float)(psum / N) : 0.0f;
  }
}

// aux = E * sum_e f_e P_e, summed in expert order in double.
__global__ void route_aux_kernel(float* aux, const float* f, const float* P, int E) {
  double s = 0.0;
  for (int e = 0; e < E; ++e) s += (double)f[e] * (double)P[e];
  *aux = (float)(E * s);
}

// dlogits of one token per warp. Each lane owns experts lane, lane + 32, ...: dprobs[e] =
// aux_scale * f[e] + (the gate terms of the k with expert[k] == e, in k order), which is the
// CPU's accumulation order; the value is computed twice (for sum p * dp, then for the output)
// instead of being stored.
template <typename T>
__global__ void __launch_bounds__(kRowsPerBlock * kWarp)
    router_backward_rows_kernel(T* dlogits, const float* dgate, const float* probs, const int* expert,
                                const float* gate, const float* f, float aux_scale, int N, int E,
                                int K, bool normalize) {
  const int lane = threadIdx.x % kWarp;
  const long n = (long)blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp;
  if (n >= N) return;
  const float* p = probs + n * E;
  const int* ex = expert + n * K;
  const float* g = gate + n * K;
  const float* dg = dgate + n * K;
  // g_k = p_k / S: dp_j = dg_j / S - (sum_k dg_k g_k) / S.
  float S = 0.0f, dot = 0.0f;
  if (normalize) {
    for (int k = 0; k < K; ++k) {
      S += p[ex[k]];
      dot += dg[k] * g[k];
    }
  }
  const float inv = normalize ? 1.0f / S : 1.0f;
  auto dprob = [&](int e) {
    float d = aux_scale * f[e];
    for (int k = 0; k < K; ++k)
      if (ex[k] == e) d += normalize ? (dg[k] - dot) * inv : dg[k];
    return d;
  };
  float pd = 0.0f;
  for (int e = lane; e < E; e += kWarp) pd += p[e] * dprob(e);
  pd = moe_detail::warp_sum(pd);
  T* out = dlogits + n * E;
  for (int e = lane; e < E; e += kWarp) out[e] = from_float<T>(p[e] * (dprob(e) - pd));
}

void check_routing_shape(int N, int E, int K, int capacity) {
  if (N < 0) throw std::invalid_argument("cuda::route_from_logits: negative token count");
  if (E < 1) throw std::invalid_argument("cuda::route_from_logits: need at least one expert");
  if (K < 1 || K > E)
    throw std::invalid_argument("cuda::route_from_logits: top_k = " + std::to_string(K) +
                                " must be in [1, experts = " + std::to_string(E) + "]");
  if (capacity < 0) throw std::invalid_argument("cuda::route_from_logits: negative capacity");
}

}  // namespace

template <typename T>
void route_from_logits(DeviceRouting& r, const T* logits, int N, int E, const RouterParams& p,
                       const int* forced_experts, cudaStream_t stream) {
  const int K = p.top_k;
  check_routing_shape(N, E, K, p.capacity);
  r.N = N;
  r.E = E;
  r.K = K;
  r.capacity = p.capacity;
  r.gate_normalize = p.gate_normalize;
  const Launch1d rows = launch_rows(N, kRowsPerBlock);
  if (rows.grid > 0) {
    route_rows_kernel<T><<<rows.grid, rows.block, 0, stream>>>(r.probs, r.expert, r.gate, logits,
                                                               forced_experts, N, E, K, p.gate_normalize);
    MOEBENCH_CUDA_CHECK_LAUNCH();
  }
  route_admission_kernel<<<E, kScanBlock, 0, stream>>>(r.kept, r.selected, r.counts, r.f, r.P, r.expert,
                                                      r.probs, N, E, K, p.capacity);
  MOEBENCH_CUDA_CHECK_LAUNCH();
  route_aux_kernel<<<1, 1, 0, stream>>>(r.aux, r.f, r.P, E);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template <typename T>
void router_logits_backward(T* dlogits, const float* dgate, float aux_weight, const DeviceRouting& r,
                            cudaStream_t stream) {
  const int N = r.N, E = r.E, K = r.K;
  const float aux_scale = N > 0 ? aux_weight * (float)E / (float)N : 0.0f;  // as the CPU
  const Launch1d rows = launch_rows(N, kRowsPerBlock);
  if (rows.grid == 0) return;
  router_backward_rows_kernel<T><<<rows.grid, rows.block, 0, stream>>>(
      dlogits, dgate, r.probs, r.expert, r.gate, r.f, aux_scale, N, E, K, r.gate_normalize);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template void route_from_logits<float>(DeviceRouting&, const float*, int, int, const RouterParams&,
                                       const int*, cudaStream_t);
template void route_from_logits<bf16>(DeviceRouting&, const bf16*, int, int, const RouterParams&,
                                      const int*, cudaStream_t);
template void router_logits_backward<float>(float*, const float*, float, const DeviceRouting&,
                                            cudaStream_t);
template void router_logits_backward<bf16>(bf16*, const float*, float, const DeviceRouting&,
                                           cudaStream_t);

}  // namespace moebench::cuda
