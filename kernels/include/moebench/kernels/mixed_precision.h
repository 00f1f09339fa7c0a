#pragma once
// Mixed precision for the trainer's run.precision = "bf16" (model/cuda_backend.h): the model's
// arrays stay fp32; a GEMM reads bf16 copies of its operands and accumulates in fp32 into an
// fp32 result, as autocast does, without rounding the result to bf16.
//   cast        bf16 <- fp32 (round to nearest even, __float2bfloat16_rn) and fp32 <- bf16 (exact)
//   accumulate  acc[i] += float(x[i]): a bf16 gradient added into fp32 (the experts' GEMMs, which
//               run in bf16 through experts.h, hand their weight gradients over this way)
//   matmul_forward_mixed / matmul_backward_mixed   matmul.h's products with bf16 operands and
//               fp32 results: cublasGemmEx with A, B CUDA_R_16BF, C CUDA_R_32F,
//               CUBLAS_COMPUTE_32F; the bias (fp32) is broadcast into out first (beta = 1) and
//               its gradient summed from the fp32 dout (matmul.h's kernel).
// Accumulation as matmul.h: out is overwritten; dinp, dweight, dbias accumulate (+=); any
// gradient pointer may be nullptr. Every call runs on `stream`; deterministic.
#include <cuda_runtime.h>

#include "moebench/kernels/precision.h"

namespace moebench::cuda {

void cast(bf16* out, const float* in, long n, cudaStream_t stream = nullptr);
void cast(float* out, const bf16* in, long n, cudaStream_t stream = nullptr);
void accumulate(float* acc, const bf16* x, long n, cudaStream_t stream = nullptr);

// out[N,OC] = inp16[N,C] @ weight16[OC,C]^T (+ bias[OC]).
void matmul_forward_mixed(float* out, const bf16* inp16, const bf16* weight16, const float* bias, int N, int C,
                          int OC, cudaStream_t stream = nullptr);

// dinp[N,C] += dout16 @ weight16;  dweight[OC,C] += dout16^T @ inp16;  dbias[OC] += sum_n dout.
// dout16 is dout's bf16 copy (both given: the GEMMs read the copy, the bias sum the fp32 values).
void matmul_backward_mixed(float* dinp, float* dweight, float* dbias, const float* dout, const bf16* dout16,
                           const bf16* inp16, const bf16* weight16, int N, int C, int OC,
                           cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
