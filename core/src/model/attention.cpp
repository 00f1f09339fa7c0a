#include "moebench/model/attention.h"

#include <cmath>
#include <cstring>

namespace moebench {

void attention_forward(float* out, float* preatt, float* att, const float* qkv,
                       int B, int T, int C, int NH) {
  const int hs = C / NH;
  const long C3 = 3L * C;
  const float scale = 1.0f / std::sqrt((float)hs);
#pragma omp parallel for collapse(3) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const float* q = qkv + ((long)b * T + t) * C3 + h * hs;
        float* pre = preatt + (((long)b * NH + h) * T + t) * T;
        float* a = att + (((long)b * NH + h) * T + t) * T;
        // Scaled scores and their max over the causal window t2 <= t.
        float maxval = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + ((long)b * T + t2) * C3 + C + h * hs;
          float dot = 0.0f;
          for (int i = 0; i < hs; ++i) dot += q[i] * k[i];
          dot *= scale;
          pre[t2] = dot;
          if (dot > maxval) maxval = dot;
        }
        float sum = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float e = std::exp(pre[t2] - maxval);
          a[t2] = e;
          sum += e;
        }
        const float inv = 1.0f / sum;
        for (int t2 = 0; t2 <= t; ++t2) a[t2] *= inv;
        for (int t2 = t + 1; t2 < T; ++t2) pre[t2] = a[t2] = 0.0f;
        // Weighted sum of values.
        float* o = out + ((long)b * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + ((long)b * T + t2) * C3 + 2L * C + h * hs;
          const float w = a[t2];
          for (int i = 0; i < hs; ++i) o[i] += w * v[i];
        }
      }
    }
  }
}

void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout,
                        const float* qkv, const float* att, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const long C3 = 3L * C;
  const float scale = 1.0f / std::sqrt((float)hs);
  // Each (b, h) pair touches only batch b's rows and head h's columns of dqkv.
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const long bh = ((long)b * NH + h) * T * T;
      std::memset(dpreatt + bh, 0, sizeof(float) * (size_t)T * T);
      std::memset(datt + bh, 0, sizeof(float) * (size_t)T * T);
      for (int t = 0; t < T; ++t) {
        const float* a = att + bh + (long)t * T;
        float* da = datt + bh + (long)t * T;
        float* dpre = dpreatt + bh + (long)t * T;
        const float* d = dout + ((long)b * T + t) * C + h * hs;
        // out = att @ v
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + ((long)b * T + t2) * C3 + 2L * C + h * hs;
          float* dv = dqkv + ((long)b * T + t2) * C3 + 2L * C + h * hs;
          float dot = 0.0f;
          for (int i = 0; i < hs; ++i) {
            dot += v[i] * d[i];
            dv[i] += a[t2] * d[i];
          }
          da[t2] = dot;
        }
        // softmax: dpre = a * (da - sum(a * da))
        float s = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) s += a[t2] * da[t2];
        for (int t2 = 0; t2 <= t; ++t2) dpre[t2] = a[t2] * (da[t2] - s);
        // pre = scale * q . k
        const float* q = qkv + ((long)b * T + t) * C3 + h * hs;
        float* dq = dqkv + ((long)b * T + t) * C3 + h * hs;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + ((long)b * T + t2) * C3 + C + h * hs;
          float* dk = dqkv + ((long)b * T + t2) * C3 + C + h * hs;
          const float g = dpre[t2] * scale;
          for (int i = 0; i < hs; ++i) {
            dq[i] += g * k[i];
            dk[i] += g * q[i];
          }
        }
      }
    }
  }
}

}  // namespace moebench
