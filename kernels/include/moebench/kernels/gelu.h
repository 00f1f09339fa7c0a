#pragma once
// GeLU (tanh approximation) on the device: tensor/gelu.h's functions with the same names
// and argument order plus the stream. T = float or bf16 (math in fp32).
#include <cuda_runtime.h>

namespace moebench::cuda {

// out[N] = gelu(inp[N]).
template <typename T>
void gelu_forward(T* out, const T* inp, long N, cudaStream_t stream = nullptr);
// Accumulates (+=) dinp[N] += gelu'(inp) * dout (as the CPU function).
template <typename T>
void gelu_backward(T* dinp, const T* inp, const T* dout, long N, cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
