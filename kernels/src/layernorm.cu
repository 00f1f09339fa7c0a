// LayerNorm: warp-per-row forward and input gradient, column-tile weight/bias gradients.
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/layernorm.h"
#include "moebench/kernels/precision.h"
#include "reduce.cuh"

namespace moebench::cuda {
namespace {

constexpr float kEps = 1e-5f;

template <typename T>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* inp,
                                         const T* weight, const T* bias, int N, int C) {
  const long n = blockIdx.x * (long)(blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (n >= N) return;  // the whole warp
  const int lane = threadIdx.x % kWarp;
  const T* x = inp + n * C;
  float sum = 0.0f;
  for (int c = lane; c < C; c += kWarp) sum += to_float(x[c]);
  const float m = warp_sum(sum) / C;
  float var = 0.0f;
  for (int c = lane; c < C; c += kWarp) {
    const float d = to_float(x[c]) - m;
    var += d * d;
  }
  const float s = 1.0f / sqrtf(warp_sum(var) / C + kEps);
  T* o = out + n * C;
  for (int c = lane; c < C; c += kWarp)
    o[c] = from_float<T>((to_float(x[c]) - m) * s * to_float(weight[c]) + to_float(bias[c]));
  if (lane == 0) {
    if (mean) mean[n] = m;
    if (rstd) rstd[n] = s;
  }
}

template <typename T>
__global__ void layernorm_backward_input_kernel(T* dinp, const T* dout, const T* inp,
                                                const T* weight, const float* mean,
                                                const float* rstd, int N, int C) {
  const long n = blockIdx.x * (long)(blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (n >= N) return;
  const int lane = threadIdx.x % kWarp;
  const T* x = inp + n * C;
  const T* d = dout + n * C;
  const float m = mean[n], s = rstd[n];
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (int c = lane; c < C; c += kWarp) {
    const float dnorm = to_float(weight[c]) * to_float(d[c]);
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * (to_float(x[c]) - m) * s;
  }
  dnorm_mean = warp_sum(dnorm_mean) / C;
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / C;
  T* di = dinp + n * C;
  for (int c = lane; c < C; c += kWarp) {
    const float norm = (to_float(x[c]) - m) * s;
    const float g = (to_float(weight[c]) * to_float(d[c]) - dnorm_mean - norm * dnorm_norm_mean) * s;
    di[c] = from_float<T>(to_float(di[c]) + g);
  }
}

// Block (32, 32) owns channels blockIdx.x*32 .. +32; thread (x, y) sums rows y, y+32, ...
template <typename T>
__global__ void layernorm_backward_params_kernel(T* dweight, T* dbias, const T* dout,
                                                 const T* inp, const float* mean,
                                                 const float* rstd, int N, int C) {
  const int c = blockIdx.x * kWarp + threadIdx.x;
  float dw = 0.0f, db = 0.0f;
  if (c < C) {
    for (int n = threadIdx.y; n < N; n += kWarp) {
      const long i = (long)n * C + c;
      const float d = to_float(dout[i]);
      db += d;
      dw += (to_float(inp[i]) - mean[n]) * rstd[n] * d;
    }
  }
  const float dw_sum = tile_column_sum(dw);
  const float db_sum = tile_column_sum(db);
  const int col = blockIdx.x * kWarp + threadIdx.y;
  if (threadIdx.x == 0 && col < C) {
    dweight[col] = from_float<T>(to_float(dweight[col]) + dw_sum);
    dbias[col] = from_float<T>(to_float(dbias[col]) + db_sum);
  }
}

}  // namespace

template <typename T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight,
                       const T* bias, int N, int C, cudaStream_t stream) {
  const Launch1d l = launch_rows(N);
  if (l.grid == 0 || C <= 0) return;
  layernorm_forward_kernel<<<l.grid, l.block, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                        const T* weight, const float* mean, const float* rstd, int N, int C,
                        cudaStream_t stream) {
  const Launch1d l = launch_rows(N);
  if (l.grid == 0 || C <= 0) return;
  layernorm_backward_input_kernel<<<l.grid, l.block, 0, stream>>>(dinp, dout, inp, weight, mean,
                                                                   rstd, N, C);
  MOEBENCH_CUDA_CHECK_LAUNCH();
  layernorm_backward_params_kernel<<<(unsigned)ceil_div(C, kWarp), dim3(kWarp, kWarp), 0, stream>>>(
      dweight, dbias, dout, inp, mean, rstd, N, C);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template void layernorm_forward<float>(float*, float*, float*, const float*, const float*,
                                       const float*, int, int, cudaStream_t);
template void layernorm_forward<bf16>(bf16*, float*, float*, const bf16*, const bf16*,
                                      const bf16*, int, int, cudaStream_t);
template void layernorm_backward<float>(float*, float*, float*, const float*, const float*,
                                        const float*, const float*, const float*, int, int,
                                        cudaStream_t);
template void layernorm_backward<bf16>(bf16*, bf16*, bf16*, const bf16*, const bf16*,
                                       const bf16*, const float*, const float*, int, int,
                                       cudaStream_t);

}  // namespace moebench::cuda
