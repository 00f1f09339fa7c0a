// GeLU kernels (tanh approximation, GPT-2), grid-stride, fp32 math for every T.
#include "gelu_math.cuh"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/gelu.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/precision.h"

namespace moebench::cuda {
namespace {

template <typename T>
__global__ void gelu_forward_kernel(T* out, const T* inp, long N) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < N; i += (long)gridDim.x * blockDim.x)
    out[i] = from_float<T>(gelu_math::gelu(to_float(inp[i])));
}

template <typename T>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, long N) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < N; i += (long)gridDim.x * blockDim.x)
    dinp[i] = from_float<T>(to_float(dinp[i]) + gelu_math::gelu_grad(to_float(inp[i])) * to_float(dout[i]));
}

}  // namespace

template <typename T>
void gelu_forward(T* out, const T* inp, long N, cudaStream_t stream) {
  const Launch1d l = launch_1d(N);
  if (l.grid == 0) return;
  gelu_forward_kernel<<<l.grid, l.block, 0, stream>>>(out, inp, N);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template <typename T>
void gelu_backward(T* dinp, const T* inp, const T* dout, long N, cudaStream_t stream) {
  const Launch1d l = launch_1d(N);
  if (l.grid == 0) return;
  gelu_backward_kernel<<<l.grid, l.block, 0, stream>>>(dinp, inp, dout, N);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template void gelu_forward<float>(float*, const float*, long, cudaStream_t);
template void gelu_forward<bf16>(bf16*, const bf16*, long, cudaStream_t);
template void gelu_backward<float>(float*, const float*, const float*, long, cudaStream_t);
template void gelu_backward<bf16>(bf16*, const bf16*, const bf16*, long, cudaStream_t);

}  // namespace moebench::cuda
