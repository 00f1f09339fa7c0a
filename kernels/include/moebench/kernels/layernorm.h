#pragma once
// Layer normalisation on the device (eps 1e-5): model/layernorm.h's functions with the same
// names and argument order plus the stream. T = float or bf16 for activations, weights and
// gradients; mean and rstd are fp32 arrays for every T; math in fp32. One warp per row.
#include <cuda_runtime.h>

namespace moebench::cuda {

// For each of the N rows of inp[N,C]:
//   out[n,:] = (inp[n,:] - mean[n]) * rstd[n] * weight[:] + bias[:]
// mean[N] and rstd[N] = 1/sqrt(var + 1e-5) (biased variance, two-pass) are saved as fp32
// for the backward; either may be nullptr when no backward follows.
template <typename T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight,
                       const T* bias, int N, int C, cudaStream_t stream = nullptr);

// Accumulates (+=) dinp[N,C], dweight[C], dbias[C] from dout[N,C]. dinp: one warp per row.
// dweight/dbias: a second kernel in which each block owns 32 channels and sums the rows in a
// fixed order (deterministic, no atomics), added to the old values in fp32, rounded once.
template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                        const T* weight, const float* mean, const float* rstd, int N, int C,
                        cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
