// dispatch_layout on the device: one block per expert, two ordered passes over the
// assignments (count, then place), no atomics.
#include <stdexcept>
#include <string>

#include "moe_block_scan.cuh"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/dispatch_layout.h"

namespace moebench::cuda {
namespace {

using moe_detail::kScanBlock;
using moe_detail::kScanWarps;

__global__ void __launch_bounds__(kScanBlock)
    dispatch_layout_kernel(int* offsets, int* slot_of, int* token_of, const int* expert,
                           const uint8_t* kept, int N, int K, int E) {
  __shared__ int shared[kScanWarps];
  const int e = blockIdx.x;
  const long NK = (long)N * K;
  // Pass 1: the start of e = kept assignments of experts below e; and e's own count.
  int below = 0, own = 0;
  for (long i = threadIdx.x; i < NK; i += kScanBlock) {
    if (!kept[i]) continue;
    const int ex = expert[i];
    below += ex < e ? 1 : 0;
    own += ex == e ? 1 : 0;
  }
  const int start = moe_detail::block_sum_int(below, shared);
  const int count = moe_detail::block_sum_int(own, shared);
  if (threadIdx.x == 0) {
    offsets[e] = start;
    if (e == E - 1) offsets[E] = start + count;
  }
  // Pass 2: e's assignments in (n, k) order; the kept ones take consecutive slots.
  int running = start;
  for (long base = 0; base < NK; base += kScanBlock) {
    const long i = base + threadIdx.x;
    const bool mine = i < NK && expert[i] == e;
    const bool place = mine && kept[i];
    int total = 0;
    const int slot = running + moe_detail::block_scan_flag(place, &total, shared);
    if (mine) {
      slot_of[i] = place ? slot : -1;
      if (place) token_of[slot] = (int)(i / K);
    }
    running += total;
  }
}

}  // namespace

void dispatch_layout(int* offsets, int* slot_of, int* token_of, const int* expert,
                     const uint8_t* kept, int N, int K, int E, cudaStream_t stream) {
  if (N < 0 || K < 1 || E < 1)
    throw std::invalid_argument("cuda::dispatch_layout: need N >= 0, K >= 1, E >= 1 (got N = " +
                                std::to_string(N) + ", K = " + std::to_string(K) +
                                ", E = " + std::to_string(E) + ")");
  dispatch_layout_kernel<<<E, kScanBlock, 0, stream>>>(offsets, slot_of, token_of, expert, kept, N, K, E);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace moebench::cuda
