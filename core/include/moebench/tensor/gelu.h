#pragma once
// GeLU, tanh approximation as in GPT-2:
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// with a fast, vectorisable tanh (max abs error < 1e-6 against std::tanh).

#include <bit>
#include <cstdint>

namespace moebench {

// Rational 13/6 minimax approximation of tanh (the coefficients of Eigen's
// generic_fast_tanh_float); |x| is clamped to 7.9053111, where it reaches +-1 (NaN too,
// which gives +-1). The clamp works on the bit pattern: float compares would keep GCC from
// vectorising callers under the default -ftrapping-math.
inline float fast_tanh(float x) {
  const int32_t cbits = std::bit_cast<int32_t>(7.90531110763549805f);
  const int32_t bits = std::bit_cast<int32_t>(x);
  const int32_t mag = bits & 0x7fffffff;
  const int32_t sign = bits & INT32_MIN;
  const float xc = std::bit_cast<float>(sign | (mag < cbits ? mag : cbits));
  const float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return (xc * p) / q;
}

// out[N] = gelu(inp[N]).
void gelu_forward(float* out, const float* inp, long N);

// Accumulates (+=) dinp[N] += gelu'(inp) * dout.
void gelu_backward(float* dinp, const float* inp, const float* dout, long N);

}  // namespace moebench
