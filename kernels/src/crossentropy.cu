// Softmax + cross-entropy: block-per-row forward (three passes, block reductions),
// elementwise backward.
#include "moebench/kernels/crossentropy.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/precision.h"
#include "reduce.cuh"

namespace moebench::cuda {
namespace {

constexpr int kRowThreads = 512;

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
crossentropy_forward_kernel(float* losses, T* probs, const T* logits, const int* targets, int V) {
  const long n = blockIdx.x;
  const T* l = logits + n * V;
  T* p = probs + n * V;
  float maxval = -INFINITY;
  for (int v = threadIdx.x; v < V; v += blockDim.x) maxval = fmaxf(maxval, to_float(l[v]));
  maxval = block_max(maxval);
  float sum = 0.0f;
  for (int v = threadIdx.x; v < V; v += blockDim.x) sum += expf(to_float(l[v]) - maxval);
  sum = block_sum(sum);
  const float inv = 1.0f / sum;
  for (int v = threadIdx.x; v < V; v += blockDim.x) p[v] = from_float<T>(expf(to_float(l[v]) - maxval) * inv);
  if (threadIdx.x == 0) losses[n] = logf(sum) - (to_float(l[targets[n]]) - maxval);
}

template <typename T>
__global__ void crossentropy_backward_kernel(T* dlogits, const T* probs, const int* targets,
                                             float dloss, int V, long total) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
    const long n = i / V;
    const long v = i - n * V;
    const float onehot = v == targets[n] ? 1.0f : 0.0f;
    dlogits[i] = from_float<T>(to_float(dlogits[i]) + dloss * (to_float(probs[i]) - onehot));
  }
}

}  // namespace

template <typename T>
void crossentropy_softmax_forward(float* losses, T* probs, const T* logits, const int* targets,
                                  int N, int V, cudaStream_t stream) {
  if (N <= 0 || V <= 0) return;
  crossentropy_forward_kernel<<<(unsigned)N, kRowThreads, 0, stream>>>(losses, probs, logits, targets, V);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template <typename T>
void crossentropy_softmax_backward(T* dlogits, const T* probs, const int* targets, float dloss,
                                   int N, int V, cudaStream_t stream) {
  if (N <= 0 || V <= 0) return;
  const long total = (long)N * V;
  const Launch1d l = launch_1d(total);
  crossentropy_backward_kernel<<<l.grid, l.block, 0, stream>>>(dlogits, probs, targets, dloss, V, total);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template void crossentropy_softmax_forward<float>(float*, float*, const float*, const int*, int,
                                                  int, cudaStream_t);
template void crossentropy_softmax_forward<bf16>(float*, bf16*, const bf16*, const int*, int, int,
                                                 cudaStream_t);
template void crossentropy_softmax_backward<float>(float*, const float*, const int*, float, int,
                                                   int, cudaStream_t);
template void crossentropy_softmax_backward<bf16>(bf16*, const bf16*, const int*, float, int, int,
                                                  cudaStream_t);

}  // namespace moebench::cuda
