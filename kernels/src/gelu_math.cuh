#pragma once
// GeLU's value and derivative in fp32 (tanh approximation, GPT-2), shared by the GeLU kernels
// (gelu.cu) and the experts' fused bias + GeLU kernels (experts_detail.cuh). Private to
// kernels/src/.
#include <cuda_runtime.h>

namespace moebench::cuda::gelu_math {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

__device__ inline float gelu(float x) {
  const float cube = 0.044715f * x * x * x;
  return 0.5f * x * (1.0f + tanhf(kGeluScale * (x + cube)));
}

__device__ inline float gelu_grad(float x) {
  const float cube = 0.044715f * x * x * x;
  const float th = tanhf(kGeluScale * (x + cube));
  const float sech2 = 1.0f - th * th;
  return 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
}

}  // namespace moebench::cuda::gelu_math
