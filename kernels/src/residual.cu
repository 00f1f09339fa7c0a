// Residual connection kernels, grid-stride, fp32 sums for every T.
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/precision.h"
#include "moebench/kernels/residual.h"

namespace moebench::cuda {
namespace {

template <typename T>
__global__ void residual_forward_kernel(T* out, const T* inp1, const T* inp2, long N) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < N; i += (long)gridDim.x * blockDim.x)
    out[i] = from_float<T>(to_float(inp1[i]) + to_float(inp2[i]));
}

template <typename T>
__global__ void residual_backward_kernel(T* dinp1, T* dinp2, const T* dout, long N) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < N; i += (long)gridDim.x * blockDim.x) {
    const float d = to_float(dout[i]);
    dinp1[i] = from_float<T>(to_float(dinp1[i]) + d);
    dinp2[i] = from_float<T>(to_float(dinp2[i]) + d);
  }
}

}  // namespace

template <typename T>
void residual_forward(T* out, const T* inp1, const T* inp2, long N, cudaStream_t stream) {
  const Launch1d l = launch_1d(N);
  if (l.grid == 0) return;
  residual_forward_kernel<<<l.grid, l.block, 0, stream>>>(out, inp1, inp2, N);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template <typename T>
void residual_backward(T* dinp1, T* dinp2, const T* dout, long N, cudaStream_t stream) {
  const Launch1d l = launch_1d(N);
  if (l.grid == 0) return;
  residual_backward_kernel<<<l.grid, l.block, 0, stream>>>(dinp1, dinp2, dout, N);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template void residual_forward<float>(float*, const float*, const float*, long, cudaStream_t);
template void residual_forward<bf16>(bf16*, const bf16*, const bf16*, long, cudaStream_t);
template void residual_backward<float>(float*, float*, const float*, long, cudaStream_t);
template void residual_backward<bf16>(bf16*, bf16*, const bf16*, long, cudaStream_t);

}  // namespace moebench::cuda
