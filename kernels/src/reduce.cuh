#pragma once
// Warp, block and column-tile reductions shared by the kernels of this folder. Every one is a
// fixed shuffle / shared-memory tree, so the same inputs give the same bits on every run
// (fp addition is commutative, and the xor butterfly leaves every lane with the same value).
#include "moebench/kernels/launch.h"

namespace moebench::cuda {

template <typename A>
__device__ inline A warp_sum(A x) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

__device__ inline float warp_max(float x) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// Sum over a 1-D block (blockDim.x a multiple of 32): every thread gets the result. Every
// thread of the block must call it (it synchronises).
template <typename A>
__device__ inline A block_sum(A x) {
  __shared__ A partial[kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  x = warp_sum(x);
  __syncthreads();  // a previous call may still be reading partial
  if (lane == 0) partial[warp] = x;
  __syncthreads();
  const int warps = blockDim.x / kWarp;
  return warp_sum(lane < warps ? partial[lane] : A(0));
}

// Maximum over a 1-D block, as block_sum.
__device__ inline float block_max(float x) {
  __shared__ float partial[kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  x = warp_max(x);
  __syncthreads();
  if (lane == 0) partial[warp] = x;
  __syncthreads();
  const int warps = blockDim.x / kWarp;
  return warp_max(lane < warps ? partial[lane] : -INFINITY);
}

// Column sums of a (32, 32) block: thread (x, y) passes its partial sum v for column x; the
// result is the sum over y of column threadIdx.y (the tile is read transposed), held by
// every lane of warp y. Every thread must call it (it synchronises).
__device__ inline float tile_column_sum(float v) {
  __shared__ float tile[kWarp][kWarp + 1];  // +1: no bank conflicts on the transposed read
  __syncthreads();  // a previous call may still be reading tile
  tile[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
  return warp_sum(tile[threadIdx.x][threadIdx.y]);
}

}  // namespace moebench::cuda
