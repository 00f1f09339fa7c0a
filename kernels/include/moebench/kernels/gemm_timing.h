#pragma once
// Timing of one cuBLAS GEMM on the current device (moebench bench gemm --device cuda): the
// rate a GPU reaches in a plain GEMM is the peak the moe-layer benchmark and the MFU of a
// training step are measured against.
#include <vector>

namespace moebench::cuda {

enum class GemmType {
  fp32,  // fp32 inputs and outputs, CUBLAS_COMPUTE_32F (no TF32)
  tf32,  // fp32 inputs and outputs, CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores)
  bf16,  // bf16 inputs and output, fp32 accumulation (CUBLAS_COMPUTE_32F)
};
const char* gemm_type_name(GemmType t);

// Seconds of each of `iters` runs (after `warmup` untimed ones) of C[m,n] = A[m,k] B[k,n]
// with cublasGemmEx, timed with CUDA events on one stream; inputs are random in [-1, 1].
std::vector<double> time_gemm(int m, int n, int k, GemmType type, int warmup, int iters);

}  // namespace moebench::cuda
