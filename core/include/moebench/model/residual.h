#pragma once
// Residual connection (elementwise sum), llm.c argument order.

namespace moebench {

// out[N] = inp1[N] + inp2[N].
void residual_forward(float* out, const float* inp1, const float* inp2, long N);

// Accumulates (+=): dinp1[N] += dout[N];  dinp2[N] += dout[N].
void residual_backward(float* dinp1, float* dinp2, const float* dout, long N);

}  // namespace moebench
