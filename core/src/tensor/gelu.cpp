#include "moebench/tensor/gelu.h"

namespace moebench {

namespace {
constexpr float kScale = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kCube = 0.044715f;
}  // namespace

void gelu_forward(float* out, const float* inp, long N) {
#pragma omp parallel for simd schedule(static)
  for (long i = 0; i < N; ++i) {
    const float x = inp[i];
    const float th = fast_tanh(kScale * (x + kCube * x * x * x));
    out[i] = 0.5f * x * (1.0f + th);
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, long N) {
#pragma omp parallel for simd schedule(static)
  for (long i = 0; i < N; ++i) {
    const float x = inp[i];
    const float th = fast_tanh(kScale * (x + kCube * x * x * x));
    const float sech2 = 1.0f - th * th;
    const float grad =
        0.5f * (1.0f + th) + 0.5f * x * sech2 * kScale * (1.0f + 3.0f * kCube * x * x);
    dinp[i] += grad * dout[i];
  }
}

}  // namespace moebench
