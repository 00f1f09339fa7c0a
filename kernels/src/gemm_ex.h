#pragma once
// Column-major cuBLAS GEMMs (cublasGemmEx / cublasGemmStridedBatchedEx) for float and bf16
// operands with fp32 compute (CUBLAS_COMPUTE_32F: fp32 accumulation, no TF32 unless the
// handle's math mode asks for it), host scalars, on the given stream. The result's type TC is
// the operands' T, or float with bf16 operands (mixed_precision.h). Used by matmul.cu,
// attention.cu and mixed_precision.cu (row-major callers swap operands).
#include <cublas_v2.h>

#include "moebench/kernels/blas_handle.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/precision.h"

namespace moebench::cuda::detail {

template <typename T>
constexpr cudaDataType_t cuda_data_type();
template <>
constexpr cudaDataType_t cuda_data_type<float>() { return CUDA_R_32F; }
template <>
constexpr cudaDataType_t cuda_data_type<bf16>() { return CUDA_R_16BF; }

// C[m,n] = alpha * op(A)[m,k] op(B)[k,n] + beta * C for `batch` matrices at element strides
// sA, sB, sC (ignored when batch == 1).
template <typename T, typename TC = T>
void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
          const T* A, int lda, long long sA, const T* B, int ldb, long long sB, float beta, TC* C,
          int ldc, long long sC, int batch, cudaStream_t stream) {
  if (m == 0 || n == 0 || batch == 0) return;
  cublasHandle_t h = cublas_handle();
  MOEBENCH_CUBLAS_CHECK(cublasSetStream(h, stream));
  MOEBENCH_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  constexpr cudaDataType_t type = cuda_data_type<T>(), ctype = cuda_data_type<TC>();
  if (batch == 1) {
    MOEBENCH_CUBLAS_CHECK(cublasGemmEx(h, ta, tb, m, n, k, &alpha, A, type, lda, B, type, ldb,
                                       &beta, C, ctype, ldc, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
  } else {
    MOEBENCH_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, ta, tb, m, n, k, &alpha, A, type, lda, sA, B, type, ldb, sB, &beta, C, ctype, ldc, sC,
        batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace moebench::cuda::detail
