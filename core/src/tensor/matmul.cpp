#include "moebench/tensor/matmul.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <thread>

namespace moebench {

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int N, int C, int OC) {
  if (N == 0) return;
  if (bias) {
    for (int n = 0; n < N; ++n)
      for (int o = 0; o < OC; ++o) out[(long)n * OC + o] = bias[o];
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, weight, C,
              bias ? 1.0f : 0.0f, out, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int N, int C, int OC) {
  if (N == 0) return;
  if (dinp)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, weight, C,
                1.0f, dinp, C);
  if (dweight)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f,
                dweight, C);
  if (dbias) {
    for (int n = 0; n < N; ++n)
      for (int o = 0; o < OC; ++o) dbias[o] += dout[(long)n * OC + o];
  }
}

static int g_threads = 0;

void set_num_threads(int n) {
  if (n <= 0) n = (int)std::max(1u, std::thread::hardware_concurrency());
  g_threads = n;
  openblas_set_num_threads(n);
  omp_set_num_threads(n);
}

int num_threads() {
  if (g_threads == 0) set_num_threads(0);
  return g_threads;
}

}  // namespace moebench
