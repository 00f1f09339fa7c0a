#pragma once
// Dense matrix products on the device through cuBLAS (cublasGemmEx on cublas_handle()):
// tensor/matmul.h's functions with the same names and argument order plus the stream.
// T = float or bf16; CUBLAS_COMPUTE_32F for both (fp32 accumulation; fp32 GEMMs are true
// fp32, no TF32). Row-major operands as on the CPU.
#include <cuda_runtime.h>

namespace moebench::cuda {

// out[N,OC] = inp[N,C] @ weight[OC,C]^T (+ bias[OC] when bias != nullptr). The bias is
// broadcast into out by a kernel and the GEMM adds to it (beta = 1), as the CPU function
// does: one rounding of the sum for bf16.
template <typename T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int N, int C, int OC,
                    cudaStream_t stream = nullptr);

// Accumulates (+=) the gradients of matmul_forward (GEMMs with beta = 1); any output pointer
// may be nullptr: dinp[N,C] += dout[N,OC] @ weight[OC,C];  dweight[OC,C] += dout^T @ inp;
// dbias[OC] += sum_n dout (a kernel: each block owns 32 columns and sums the rows in a fixed
// order, fp32, deterministic, no atomics).
template <typename T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                     int N, int C, int OC, cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
