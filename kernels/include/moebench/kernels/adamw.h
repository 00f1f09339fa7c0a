#pragma once
// AdamW and gradient-norm clipping on the device (optim/adamw.h). Master parameters and the
// moments m, v are fp32; gradients G = float or bf16 (math in fp32). The CPU AdamW::step walks
// a ParamArena's views; on the device the caller launches adamw_update once per contiguous
// range of views with the same decay flag, passing weight_decay = 0 for decay = false views.
// The norm functions take one contiguous gradient array (a ParamArena's grads are one) and
// leave their result in device memory, so nothing waits for the host.
#include <cuda_runtime.h>

#include <cstddef>

#include "moebench/kernels/precision.h"

namespace moebench::cuda {

// One AdamW step (t = 1-based step count for bias correction, computed on the host as
// 1 - pow(beta, t) in float, as AdamW::step) over params[n], m[n], v[n] from grads[n]:
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//   p -= lr * ((m / bc1) / (sqrt(v / bc2) + eps) + weight_decay * p)
// params_bf16 (nullable): also receives bf16(p) after the update, in the same kernel (the bf16
// weights copy of run.precision = "bf16").
template <typename G>
void adamw_update(float* params, float* m, float* v, bf16* params_bf16, const G* grads, long n,
                  float lr, float beta1, float beta2, float eps, float weight_decay, long t,
                  cudaStream_t stream = nullptr);

// Device scratch the functions below need (block partial sums; 4 KiB whatever n is).
size_t grad_norm_workspace_bytes(long n);

// *sumsq (device, double) = (accumulate ? *sumsq : 0) + sum_i grads[i]^2. Deterministic: a
// grid fixed by n alone (at most 512 blocks of 256 threads, grid-stride) writes one double
// partial per block, reduced by fixed trees, then one block sums the partials in a fixed
// tree. Use accumulate to sum several arrays, or all-reduce *sumsq across ranks.
template <typename G>
void grad_sumsq(double* sumsq, const G* grads, long n, bool accumulate, void* workspace,
                cudaStream_t stream = nullptr);

// *norm (device, double) = L2 norm of grads[n] (as grad_sumsq, then sqrt). The CPU grad_norm
// returns it; here it stays on the device (copy it back when the host needs it).
template <typename G>
void grad_norm(double* norm, const G* grads, long n, void* workspace, cudaStream_t stream = nullptr);

// grads *= (float)(max_norm / (*norm + 1e-6)) when max_norm > 0 and *norm > max_norm, the
// condition evaluated on the device from the norm in device memory (a global norm over
// several arrays or ranks: compute it first, then call this per array).
template <typename G>
void clip_grads_to_norm(G* grads, long n, const double* norm, float max_norm,
                        cudaStream_t stream = nullptr);

// The CPU clip_grad_norm for one array: *norm (device) = grad_norm(grads), then
// clip_grads_to_norm(grads, n, norm, max_norm). max_norm <= 0: no clipping.
template <typename G>
void clip_grad_norm(G* grads, double* norm, long n, float max_norm, void* workspace,
                    cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
