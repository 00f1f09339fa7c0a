// Token + position embedding: elementwise forward; deterministic gather-style backward.
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/encoder.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/precision.h"

namespace moebench::cuda {
namespace {

constexpr int kWteThreads = 256;
constexpr int kWteChannels = 4;  // per thread: a block covers 1024 channels of a row
constexpr int kWteSlice = kWteThreads * kWteChannels;

template <typename F>
__global__ void encoder_forward_kernel(F* out, const int* inp, const F* wte, const F* wpe, int T,
                                       int C, long N) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < N; i += (long)gridDim.x * blockDim.x) {
    const long bt = i / C;
    const long c = i - bt * C;
    const long t = bt % T;
    out[i] = from_float<F>(to_float(wte[(long)inp[bt] * C + c]) + to_float(wpe[t * C + c]));
  }
}

// dwpe[t,c] += dout[0,t,c] + dout[1,t,c] + ... (one thread per (t,c), b in order).
template <typename F>
__global__ void encoder_backward_wpe_kernel(F* dwpe, const F* dout, int B, long TC) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < TC; i += (long)gridDim.x * blockDim.x) {
    float acc = to_float(dwpe[i]);
    for (int b = 0; b < B; ++b) acc += to_float(dout[b * TC + i]);
    dwpe[i] = from_float<F>(acc);
  }
}

// Block (i, slice): if position i is the first holding its token, adds dout of every
// position j >= i holding that token, in increasing j, to channels of slice `blockIdx.y`.
template <typename F>
__global__ void __launch_bounds__(kWteThreads)
encoder_backward_wte_kernel(F* dwte, const F* dout, const int* inp, int BT, int C) {
  __shared__ int matches[kWteThreads];
  __shared__ int warp_hits[kWteThreads / kWarp];
  const int i = blockIdx.x;
  const int tid = threadIdx.x;
  const int token = inp[i];
  // An earlier position with the same token owns the row: the whole block leaves.
  for (int base = 0; base < i; base += kWteThreads) {
    const int j = base + tid;
    if (__syncthreads_or(j < i && inp[j] == token)) return;
  }
  const int c0 = blockIdx.y * kWteSlice + tid;
  F* row = dwte + (long)token * C;
  float acc[kWteChannels];
#pragma unroll
  for (int k = 0; k < kWteChannels; ++k) {
    const int c = c0 + k * kWteThreads;
    acc[k] = c < C ? to_float(row[c]) : 0.0f;
  }
  const int lane = tid % kWarp, warp = tid / kWarp;
  for (int base = i; base < BT; base += kWteThreads) {
    // Compact the positions of this chunk holding the token, keeping their order.
    const int j = base + tid;
    const bool hit = j < BT && inp[j] == token;
    const unsigned ballot = __ballot_sync(0xffffffffu, hit);
    if (lane == 0) warp_hits[warp] = __popc(ballot);
    __syncthreads();
    int offset = 0, total = 0;
    for (int w = 0; w < kWteThreads / kWarp; ++w) {
      if (w < warp) offset += warp_hits[w];
      total += warp_hits[w];
    }
    if (hit) matches[offset + __popc(ballot & ((1u << lane) - 1u))] = j;
    __syncthreads();
    for (int m = 0; m < total; ++m) {
      const F* d = dout + (long)matches[m] * C;
#pragma unroll
      for (int k = 0; k < kWteChannels; ++k) {
        const int c = c0 + k * kWteThreads;
        if (c < C) acc[k] += to_float(d[c]);
      }
    }
    __syncthreads();  // matches and warp_hits are rewritten by the next chunk
  }
#pragma unroll
  for (int k = 0; k < kWteChannels; ++k) {
    const int c = c0 + k * kWteThreads;
    if (c < C) row[c] = from_float<F>(acc[k]);
  }
}

}  // namespace

template <typename F>
void encoder_forward(F* out, const int* inp, const F* wte, const F* wpe, int B, int T, int C,
                     cudaStream_t stream) {
  const long N = (long)B * T * C;
  const Launch1d l = launch_1d(N);
  if (l.grid == 0) return;
  encoder_forward_kernel<<<l.grid, l.block, 0, stream>>>(out, inp, wte, wpe, T, C, N);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template <typename F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const int* inp, int B, int T, int C,
                      cudaStream_t stream) {
  if (B <= 0 || T <= 0 || C <= 0) return;
  const long TC = (long)T * C;
  const Launch1d l = launch_1d(TC);
  encoder_backward_wpe_kernel<<<l.grid, l.block, 0, stream>>>(dwpe, dout, B, TC);
  MOEBENCH_CUDA_CHECK_LAUNCH();
  const dim3 grid((unsigned)B * (unsigned)T, (unsigned)ceil_div(C, kWteSlice));
  encoder_backward_wte_kernel<<<grid, kWteThreads, 0, stream>>>(dwte, dout, inp, B * T, C);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template void encoder_forward<float>(float*, const int*, const float*, const float*, int, int, int, cudaStream_t);
template void encoder_forward<bf16>(bf16*, const int*, const bf16*, const bf16*, int, int, int, cudaStream_t);
template void encoder_backward<float>(float*, float*, const float*, const int*, int, int, int, cudaStream_t);
template void encoder_backward<bf16>(bf16*, bf16*, const bf16*, const int*, int, int, int, cudaStream_t);

}  // namespace moebench::cuda
