#pragma once
// Launch geometry of the kernels in kernels/: plain C++ (no CUDA headers), so the CPU test
// suite checks it on machines without nvcc (tests/tst_kernel_launch.cpp).
//
// Conventions: a 1-D elementwise kernel uses `block` threads and a grid-stride loop over at
// most max_grid_x blocks; a row kernel (LayerNorm, softmax, cross-entropy, router) gives each
// row one warp (kWarp threads), rows_per_block warps per block.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace moebench::cuda {

inline constexpr int kWarp = 32;
inline constexpr int kMaxThreadsPerBlock = 1024;
// Grid-stride kernels cap their x dimension here (4 waves of 132 SMs x 2048 threads / 256
// is about 4.2k; 65535 leaves room for any GPU and is the y/z limit too).
inline constexpr long kMaxGridX = 65535;

constexpr long ceil_div(long a, long b) { return (a + b - 1) / b; }

struct Launch1d {
  int grid = 0;   // blocks
  int block = 0;  // threads per block
};

// Blocks for n elements at `block` threads, each thread handling `per_thread` consecutive
// elements (vector loads), capped at kMaxGridX (the kernel's grid-stride loop covers the
// rest). n == 0 gives grid 0: the launcher then launches nothing.
inline Launch1d launch_1d(long n, int block = 256, int per_thread = 1) {
  if (block <= 0 || block > kMaxThreadsPerBlock || block % kWarp != 0)
    throw std::invalid_argument("launch_1d: block must be a multiple of 32 in [32, 1024], got " +
                                std::to_string(block));
  if (per_thread <= 0) throw std::invalid_argument("launch_1d: per_thread must be positive");
  if (n < 0) throw std::invalid_argument("launch_1d: negative element count");
  const long blocks = ceil_div(ceil_div(n, per_thread), block);
  return {(int)std::min(blocks, kMaxGridX), block};
}

// One warp per row: rows_per_block warps per block, ceil(N / rows_per_block) blocks.
inline Launch1d launch_rows(long rows, int rows_per_block = 8) {
  if (rows_per_block <= 0 || rows_per_block * kWarp > kMaxThreadsPerBlock)
    throw std::invalid_argument("launch_rows: rows_per_block must be in [1, 32], got " +
                                std::to_string(rows_per_block));
  if (rows < 0) throw std::invalid_argument("launch_rows: negative row count");
  const long blocks = ceil_div(rows, rows_per_block);
  if (blocks > 0x7fffffffL) throw std::invalid_argument("launch_rows: too many rows");
  return {(int)blocks, rows_per_block * kWarp};
}

}  // namespace moebench::cuda
