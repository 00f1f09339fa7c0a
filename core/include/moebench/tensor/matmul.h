#pragma once
// Dense matrix products through CBLAS (OpenBLAS), llm.c argument order: outputs, inputs, sizes.

namespace moebench {

// out[N,OC] = inp[N,C] @ weight[OC,C]^T (+ bias[OC] when bias != nullptr).
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int N, int C, int OC);

// Accumulates (+=) the gradients of matmul_forward; any output pointer may be nullptr:
// dinp[N,C] += dout[N,OC] @ weight[OC,C];  dweight[OC,C] += dout^T @ inp;  dbias[OC] += sum_n dout.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int N, int C, int OC);

// Number of threads OpenBLAS and the OpenMP loops in core use (n <= 0: all cores).
void set_num_threads(int n);
int num_threads();

}  // namespace moebench
