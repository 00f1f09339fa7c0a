// AdamW update (fp32 master params and moments, optional bf16 copy) and deterministic
// gradient norm / clipping.
#include <algorithm>
#include <cmath>

#include "moebench/kernels/adamw.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/precision.h"
#include "reduce.cuh"

namespace moebench::cuda {
namespace {

constexpr int kNormThreads = 256;
constexpr int kNormBlocks = 512;  // also the thread count of the final block

enum class NormOut { store_sumsq, add_sumsq, store_sqrt };

template <typename G>
__global__ void adamw_kernel(float* params, float* m, float* v, bf16* params_bf16, const G* grads,
                             long n, float lr, float beta1, float beta2, float eps, float wd,
                             float bc1, float bc2) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    const float g = to_float(grads[i]);
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float mhat = mi / bc1;
    const float vhat = vi / bc2;
    float p = params[i];
    p -= lr * (mhat / (sqrtf(vhat) + eps) + wd * p);
    params[i] = p;
    if (params_bf16) params_bf16[i] = from_float<bf16>(p);
  }
}

template <typename G>
__global__ void __launch_bounds__(kNormThreads)
sumsq_partials_kernel(double* partials, const G* grads, long n) {
  double acc = 0.0;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    const double g = to_float(grads[i]);
    acc += g * g;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void __launch_bounds__(kNormBlocks)
sumsq_finish_kernel(double* out, const double* partials, int count, NormOut mode) {
  const double sum = block_sum((int)threadIdx.x < count ? partials[threadIdx.x] : 0.0);
  if (threadIdx.x == 0) {
    if (mode == NormOut::store_sumsq) *out = sum;
    else if (mode == NormOut::add_sumsq) *out += sum;
    else *out = sqrt(sum);
  }
}

template <typename G>
__global__ void clip_kernel(G* grads, long n, const double* norm, float max_norm) {
  const double total = *norm;
  if (!(max_norm > 0.0f && total > max_norm)) return;
  const float scale = (float)(max_norm / (total + 1e-6));
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    grads[i] = from_float<G>(to_float(grads[i]) * scale);
}

template <typename G>
void sumsq(double* out, const G* grads, long n, NormOut mode, void* workspace, cudaStream_t stream) {
  if (n < 0) n = 0;
  const int blocks = (int)std::min<long>(kNormBlocks, std::max<long>(1, ceil_div(n, kNormThreads)));
  double* partials = static_cast<double*>(workspace);
  sumsq_partials_kernel<<<blocks, kNormThreads, 0, stream>>>(partials, grads, n);
  MOEBENCH_CUDA_CHECK_LAUNCH();
  sumsq_finish_kernel<<<1, kNormBlocks, 0, stream>>>(out, partials, blocks, mode);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <typename G>
void adamw_update(float* params, float* m, float* v, bf16* params_bf16, const G* grads, long n,
                  float lr, float beta1, float beta2, float eps, float weight_decay, long t,
                  cudaStream_t stream) {
  const Launch1d l = launch_1d(n);
  if (l.grid == 0) return;
  const float bc1 = 1.0f - std::pow(beta1, (float)t);
  const float bc2 = 1.0f - std::pow(beta2, (float)t);
  adamw_kernel<<<l.grid, l.block, 0, stream>>>(params, m, v, params_bf16, grads, n, lr, beta1,
                                                beta2, eps, weight_decay, bc1, bc2);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

size_t grad_norm_workspace_bytes(long /*n*/) { return kNormBlocks * sizeof(double); }

template <typename G>
void grad_sumsq(double* sumsq_out, const G* grads, long n, bool accumulate, void* workspace,
                cudaStream_t stream) {
  sumsq(sumsq_out, grads, n, accumulate ? NormOut::add_sumsq : NormOut::store_sumsq, workspace, stream);
}

template <typename G>
void grad_norm(double* norm, const G* grads, long n, void* workspace, cudaStream_t stream) {
  sumsq(norm, grads, n, NormOut::store_sqrt, workspace, stream);
}

template <typename G>
void clip_grads_to_norm(G* grads, long n, const double* norm, float max_norm, cudaStream_t stream) {
  const Launch1d l = launch_1d(n);
  if (l.grid == 0 || !(max_norm > 0.0f)) return;
  clip_kernel<<<l.grid, l.block, 0, stream>>>(grads, n, norm, max_norm);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template <typename G>
void clip_grad_norm(G* grads, double* norm, long n, float max_norm, void* workspace,
                    cudaStream_t stream) {
  grad_norm(norm, grads, n, workspace, stream);
  clip_grads_to_norm(grads, n, norm, max_norm, stream);
}

#define MOEBENCH_ADAMW_INSTANTIATE(G)                                                            \
  template void adamw_update<G>(float*, float*, float*, bf16*, const G*, long, float, float,     \
                                float, float, float, long, cudaStream_t);                        \
  template void grad_sumsq<G>(double*, const G*, long, bool, void*, cudaStream_t);              \
  template void grad_norm<G>(double*, const G*, long, void*, cudaStream_t);                     \
  template void clip_grads_to_norm<G>(G*, long, const double*, float, cudaStream_t);            \
  template void clip_grad_norm<G>(G*, double*, long, float, void*, cudaStream_t);
MOEBENCH_ADAMW_INSTANTIATE(float)
MOEBENCH_ADAMW_INSTANTIATE(bf16)
#undef MOEBENCH_ADAMW_INSTANTIATE

}  // namespace moebench::cuda
