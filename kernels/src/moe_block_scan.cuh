#pragma once
// Device helpers shared by the MoE kernels (router.cu, dispatch_layout.cu, moe_permute.cu):
// warp reductions and an ordered block scan of 0/1 flags. All of them combine values in a
// fixed order (no atomics), so the results are the same run to run.
#include <cuda_runtime.h>

#include "moebench/kernels/launch.h"

namespace moebench::cuda::moe_detail {

// The block size of the one-block-per-expert scans (a multiple of 32, at most 32 warps).
inline constexpr int kScanBlock = 256;
inline constexpr int kScanWarps = kScanBlock / kWarp;

__device__ inline float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ inline int warp_sum_int(int v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum of v over a block of kScanBlock threads; every thread gets the result. `shared` holds
// kScanWarps ints. Contains __syncthreads: call from every thread of the block.
__device__ inline int block_sum_int(int v, int* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = warp_sum_int(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  int total = 0;
  for (int w = 0; w < kScanWarps; ++w) total += shared[w];
  __syncthreads();  // shared may be reused right after
  return total;
}

// Sum of v over a block of kScanBlock threads in a fixed tree order (double); every thread
// gets the result. `shared` holds kScanBlock doubles.
__device__ inline double block_sum_double(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = kScanBlock / 2; half > 0; half /= 2) {
    if ((int)threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();
  return total;
}

// Exclusive scan of one 0/1 flag per thread of a kScanBlock block, in thread order: returns
// the number of set flags of the lower threads and stores the block's total in *total.
// `shared` holds kScanWarps ints. Contains __syncthreads: call from every thread.
__device__ inline int block_scan_flag(bool flag, int* total, int* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const unsigned ballot = __ballot_sync(0xffffffffu, flag);
  const int in_warp = __popc(ballot & ((1u << lane) - 1u));
  if (lane == 0) shared[warp] = __popc(ballot);
  __syncthreads();
  int before = 0, all = 0;
  for (int w = 0; w < kScanWarps; ++w) {
    before += w < warp ? shared[w] : 0;
    all += shared[w];
  }
  __syncthreads();
  *total = all;
  return before + in_warp;
}

}  // namespace moebench::cuda::moe_detail
