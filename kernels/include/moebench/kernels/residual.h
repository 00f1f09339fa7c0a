#pragma once
// Residual connection on the device: model/residual.h's functions with the same names and
// argument order plus the stream. T = float or bf16 (sums in fp32).
#include <cuda_runtime.h>

namespace moebench::cuda {

// out[N] = inp1[N] + inp2[N].
template <typename T>
void residual_forward(T* out, const T* inp1, const T* inp2, long N, cudaStream_t stream = nullptr);

// Accumulates (+=): dinp1[N] += dout[N];  dinp2[N] += dout[N]. As on the CPU, dinp1 may
// alias dinp2 (each element is then increased twice).
template <typename T>
void residual_backward(T* dinp1, T* dinp2, const T* dout, long N, cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
