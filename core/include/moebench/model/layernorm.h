#pragma once
// Layer normalisation over the last dimension (eps 1e-5), llm.c argument order.

namespace moebench {

// For each of the N rows of inp[N,C]:
//   out[n,:] = (inp[n,:] - mean[n]) * rstd[n] * weight[:] + bias[:]
// mean[N] and rstd[N] = 1/sqrt(var + 1e-5) (biased variance) are saved for the backward.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int N, int C);

// Accumulates (+=) dinp[N,C], dweight[C], dbias[C] from dout[N,C]. Rows are processed in
// parallel for dinp; dweight/dbias are reduced in a fixed row order (deterministic).
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int N, int C);

}  // namespace moebench
