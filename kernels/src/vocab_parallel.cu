// Vocabulary-parallel embedding and cross-entropy (kernels/vocab_parallel.h).
#include <cmath>

#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/vocab_parallel.h"
#include "reduce.cuh"

namespace moebench::cuda {
namespace {

__global__ void slice_embed_kernel(float* out, const int* tok, const float* wte, long NC, int C, int lo, int Vt) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < NC; i += (long)gridDim.x * blockDim.x) {
    const long n = i / C;
    const int c = (int)(i - n * C), r = tok[n] - lo;
    out[i] = r >= 0 && r < Vt ? wte[(long)r * C + c] : 0.0f;
  }
}

// One thread per channel c, the tokens in n order: every element gets its updates in that order.
__global__ void slice_embed_backward_kernel(float* dwte, const float* dout, const int* tok, long N, int C, int lo,
                                            int Vt) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (long n = 0; n < N; ++n) {
    const int r = tok[n] - lo;
    if (r >= 0 && r < Vt) dwte[(long)r * C + c] += dout[n * C + c];
  }
}

// A warp per row.
__global__ void row_max_kernel(float* rowmax, const float* logits, int N, int Vt) {
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const float* l = logits + (long)row * Vt;
  float m = -INFINITY;
  for (int j = lane; j < Vt; j += kWarp) m = fmaxf(m, l[j]);
  m = warp_max(m);
  if (lane == 0) rowmax[row] = m;
}

__global__ void ce_exp_kernel(float* probs, float* stats, const float* logits, const float* rowmax, const int* targets,
                              int N, int Vt, int lo) {
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const float* l = logits + (long)row * Vt;
  float* p = probs + (long)row * Vt;
  const float m = rowmax[row];
  double sum = 0.0;
  for (int j = lane; j < Vt; j += kWarp) {
    p[j] = expf(l[j] - m);
    sum += p[j];
  }
  sum = warp_sum(sum);
  if (lane == 0) {
    stats[row] = (float)sum;
    const int t = targets[row] - lo;
    stats[N + row] = t >= 0 && t < Vt ? l[t] : 0.0f;
  }
}

__global__ void ce_finish_kernel(float* losses, float* probs, const float* stats, const float* rowmax, int N, int Vt) {
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const float inv = 1.0f / stats[row];
  float* p = probs + (long)row * Vt;
  for (int j = lane; j < Vt; j += kWarp) p[j] *= inv;
  if (lane == 0) losses[row] = logf(stats[row]) + rowmax[row] - stats[N + row];
}

__global__ void ce_backward_kernel(float* dlogits, const float* probs, const int* targets, float dloss, long NV, int Vt,
                                   int lo) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < NV; i += (long)gridDim.x * blockDim.x) {
    const long n = i / Vt;
    const int j = (int)(i - n * Vt);
    dlogits[i] += dloss * (probs[i] - (lo + j == targets[n] ? 1.0f : 0.0f));
  }
}

constexpr int kRowsPerBlock = 8;

}  // namespace

void vocab_slice_embed(float* out, const int* tok, const float* wte_slice, long N, int C, int lo, int Vt,
                       cudaStream_t stream) {
  const Launch1d l = launch_1d(N * C);
  if (l.grid == 0) return;
  slice_embed_kernel<<<l.grid, l.block, 0, stream>>>(out, tok, wte_slice, N * C, C, lo, Vt);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

void vocab_slice_embed_backward(float* dwte_slice, const float* dout, const int* tok, long N, int C, int lo, int Vt,
                                cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  slice_embed_backward_kernel<<<(unsigned)ceil_div(C, 128), 128, 0, stream>>>(dwte_slice, dout, tok, N, C, lo, Vt);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

void vocab_ce_row_max(float* rowmax, const float* logits, int N, int Vt, cudaStream_t stream) {
  const Launch1d l = launch_rows(N, kRowsPerBlock);
  if (l.grid == 0) return;
  row_max_kernel<<<l.grid, l.block, 0, stream>>>(rowmax, logits, N, Vt);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

void vocab_ce_exp(float* probs, float* stats, const float* logits, const float* rowmax, const int* targets, int N,
                  int Vt, int lo, cudaStream_t stream) {
  const Launch1d l = launch_rows(N, kRowsPerBlock);
  if (l.grid == 0) return;
  ce_exp_kernel<<<l.grid, l.block, 0, stream>>>(probs, stats, logits, rowmax, targets, N, Vt, lo);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

void vocab_ce_finish(float* losses, float* probs, const float* stats, const float* rowmax, int N, int Vt,
                     cudaStream_t stream) {
  const Launch1d l = launch_rows(N, kRowsPerBlock);
  if (l.grid == 0) return;
  ce_finish_kernel<<<l.grid, l.block, 0, stream>>>(losses, probs, stats, rowmax, N, Vt);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

void vocab_ce_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int Vt, int lo,
                       cudaStream_t stream) {
  const Launch1d l = launch_1d((long)N * Vt);
  if (l.grid == 0) return;
  ce_backward_kernel<<<l.grid, l.block, 0, stream>>>(dlogits, probs, targets, dloss, (long)N * Vt, Vt, lo);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace moebench::cuda
