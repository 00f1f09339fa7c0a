#pragma once
// The element types kernels/ is instantiated for: float (fp32) and __nv_bfloat16 (bf16,
// run.precision = "bf16"): bf16 activations and weights copies, fp32 accumulation inside
// every kernel and GEMM, fp32 master weights and optimizer state (AdamW reads fp32).
// Conversions go through to_float / from_float so the kernels are written once.
#include <cuda_bf16.h>

namespace moebench::cuda {

using bf16 = __nv_bfloat16;

__host__ __device__ inline float to_float(float x) { return x; }
__host__ __device__ inline float to_float(bf16 x) { return __bfloat162float(x); }
template <typename T>
__host__ __device__ inline T from_float(float x);
template <>
__host__ __device__ inline float from_float<float>(float x) { return x; }
template <>
__host__ __device__ inline bf16 from_float<bf16>(float x) { return __float2bfloat16(x); }

}  // namespace moebench::cuda
