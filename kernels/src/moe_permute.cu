// Permute / unpermute kernels: one block per destination row (grid-stride over rows), the
// threads over the C columns; the unpermute backward gives one warp to each assignment.
#include <algorithm>
#include <cstdint>

#include "moe_block_scan.cuh"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/moe_permute.h"
#include "moebench/kernels/precision.h"

namespace moebench::cuda {
namespace {

constexpr int kRowBlock = 128;          // threads per row of the row kernels
constexpr int kWarpsPerBlock = 8;       // assignments per block of the unpermute backward

int row_grid(long rows) { return (int)std::min<long>(rows, kMaxGridX); }

// Row copy in 16-byte vectors (used when the row size and both bases allow it).
__global__ void __launch_bounds__(kRowBlock)
    permute_rows_vec_kernel(uint4* xg, const uint4* x, const int* token_of, int S, int V) {
  for (long slot = blockIdx.x; slot < S; slot += gridDim.x) {
    const uint4* src = x + (long)token_of[slot] * V;
    uint4* dst = xg + slot * V;
    for (int v = threadIdx.x; v < V; v += kRowBlock) dst[v] = src[v];
  }
}

template <typename T>
__global__ void __launch_bounds__(kRowBlock)
    permute_rows_kernel(T* xg, const T* x, const int* token_of, int S, int C) {
  for (long slot = blockIdx.x; slot < S; slot += gridDim.x) {
    const T* src = x + (long)token_of[slot] * C;
    T* dst = xg + slot * C;
    for (int c = threadIdx.x; c < C; c += kRowBlock) dst[c] = src[c];
  }
}

template <typename T>
__global__ void __launch_bounds__(kRowBlock)
    permute_backward_kernel(T* dx, const T* dxg, const int* slot_of, int N, int K, int C) {
  for (long n = blockIdx.x; n < N; n += gridDim.x) {
    const int* slots = slot_of + n * K;
    T* o = dx + n * C;
    for (int c = threadIdx.x; c < C; c += kRowBlock) {
      float acc = to_float(o[c]);
      for (int k = 0; k < K; ++k) {
        const int slot = slots[k];
        if (slot >= 0) acc += to_float(dxg[(long)slot * C + c]);
      }
      o[c] = from_float<T>(acc);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kRowBlock)
    unpermute_forward_kernel(T* out, const T* y, const float* gate, const int* slot_of, int N, int K,
                             int C) {
  for (long n = blockIdx.x; n < N; n += gridDim.x) {
    const int* slots = slot_of + n * K;
    const float* g = gate + n * K;
    T* o = out + n * C;
    for (int c = threadIdx.x; c < C; c += kRowBlock) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) {
        const int slot = slots[k];
        if (slot >= 0) acc += g[k] * to_float(y[(long)slot * C + c]);
      }
      o[c] = from_float<T>(acc);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
    unpermute_backward_kernel(float* dgate, T* dy, const T* dout, const T* y, const float* gate,
                              const int* slot_of, int N, int K, int C) {
  const int lane = threadIdx.x % kWarp;
  const long NK = (long)N * K;
  for (long i = (long)blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp; i < NK;
       i += (long)gridDim.x * kWarpsPerBlock) {  // warp-uniform
    const int slot = slot_of[i];
    if (slot < 0) {
      if (lane == 0) dgate[i] = 0.0f;
      continue;
    }
    const T* d = dout + (i / K) * C;
    const T* yr = y + (long)slot * C;
    T* dyr = dy + (long)slot * C;
    const float g = gate[i];
    float dot = 0.0f;
    for (int c = lane; c < C; c += kWarp) {
      const float dc = to_float(d[c]);
      dot += dc * to_float(yr[c]);
      dyr[c] = from_float<T>(g * dc);
    }
    dot = moe_detail::warp_sum(dot);
    if (lane == 0) dgate[i] = dot;
  }
}

}  // namespace

template <typename T>
void moe_permute_forward(T* xg, const T* x, const int* token_of, int S, int C, cudaStream_t stream) {
  if (S <= 0 || C <= 0) return;
  const bool vec = ((long)C * (long)sizeof(T)) % (long)sizeof(uint4) == 0 &&
                   reinterpret_cast<uintptr_t>(xg) % sizeof(uint4) == 0 &&
                   reinterpret_cast<uintptr_t>(x) % sizeof(uint4) == 0;
  if (vec) {
    const int V = (int)((long)C * (long)sizeof(T) / (long)sizeof(uint4));
    permute_rows_vec_kernel<<<row_grid(S), kRowBlock, 0, stream>>>(
        reinterpret_cast<uint4*>(xg), reinterpret_cast<const uint4*>(x), token_of, S, V);
  } else {
    permute_rows_kernel<T><<<row_grid(S), kRowBlock, 0, stream>>>(xg, x, token_of, S, C);
  }
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template <typename T>
void moe_permute_backward(T* dx, const T* dxg, const int* slot_of, int N, int K, int C,
                          cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  permute_backward_kernel<T><<<row_grid(N), kRowBlock, 0, stream>>>(dx, dxg, slot_of, N, K, C);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template <typename T>
void moe_unpermute_forward(T* out, const T* y, const float* gate, const int* slot_of, int N, int K,
                           int C, cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  unpermute_forward_kernel<T><<<row_grid(N), kRowBlock, 0, stream>>>(out, y, gate, slot_of, N, K, C);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template <typename T>
void moe_unpermute_backward(float* dgate, T* dy, const T* dout, const T* y, const float* gate,
                            const int* slot_of, int N, int K, int C, cudaStream_t stream) {
  const long NK = (long)N * K;
  if (NK <= 0) return;
  const int grid = (int)std::min<long>(ceil_div(NK, kWarpsPerBlock), kMaxGridX);
  unpermute_backward_kernel<T><<<grid, kWarpsPerBlock * kWarp, 0, stream>>>(dgate, dy, dout, y, gate,
                                                                          slot_of, N, K, C);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

#define MOEBENCH_INSTANTIATE_PERMUTE(T)                                                             \
  template void moe_permute_forward<T>(T*, const T*, const int*, int, int, cudaStream_t);          \
  template void moe_permute_backward<T>(T*, const T*, const int*, int, int, int, cudaStream_t);    \
  template void moe_unpermute_forward<T>(T*, const T*, const float*, const int*, int, int, int,    \
                                         cudaStream_t);                                             \
  template void moe_unpermute_backward<T>(float*, T*, const T*, const T*, const float*, const int*, \
                                          int, int, int, cudaStream_t);
MOEBENCH_INSTANTIATE_PERMUTE(float)
MOEBENCH_INSTANTIATE_PERMUTE(bf16)
#undef MOEBENCH_INSTANTIATE_PERMUTE

}  // namespace moebench::cuda
