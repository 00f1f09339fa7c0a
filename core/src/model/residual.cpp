#include "moebench/model/residual.h"

namespace moebench {

void residual_forward(float* out, const float* inp1, const float* inp2, long N) {
#pragma omp parallel for simd schedule(static)
  for (long i = 0; i < N; ++i) out[i] = inp1[i] + inp2[i];
}

void residual_backward(float* dinp1, float* dinp2, const float* dout, long N) {
#pragma omp parallel for simd schedule(static)
  for (long i = 0; i < N; ++i) {
    dinp1[i] += dout[i];
    dinp2[i] += dout[i];
  }
}

}  // namespace moebench
