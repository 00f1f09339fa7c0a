#include "moebench/model/embedding_partition.h"

#include <algorithm>

namespace moebench {

void embedding_partition_lookup(float* out, const int* ids, const float* wte_part, long rows, int Cp) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < rows; ++i) std::copy_n(wte_part + (long)ids[i] * Cp, Cp, out + i * Cp);
}

void embedding_partition_assemble(float* x, const float* slices, const float* wpe, long N, int T, int P, int Cp) {
  const long C = (long)P * Cp;
#pragma omp parallel for schedule(static)
  for (long n = 0; n < N; ++n) {
    const float* wp = wpe + (n % T) * C;
    for (int q = 0; q < P; ++q) {
      const float* s = slices + ((long)q * N + n) * Cp;
      float* o = x + n * C + (long)q * Cp;
      for (int c = 0; c < Cp; ++c) o[c] = s[c] + wp[(long)q * Cp + c];  // wte + wpe, as encoder_forward
    }
  }
}

void embedding_partition_split(float* slices, const float* dx, long N, int P, int Cp) {
  const long C = (long)P * Cp;
#pragma omp parallel for schedule(static)
  for (long n = 0; n < N; ++n)
    for (int q = 0; q < P; ++q) std::copy_n(dx + n * C + (long)q * Cp, Cp, slices + ((long)q * N + n) * Cp);
}

void embedding_partition_backward(float* dwte_part, const float* dslices, const int* ids, long rows, int Cp) {
#pragma omp parallel for schedule(static)
  for (int c = 0; c < Cp; ++c)
    for (long i = 0; i < rows; ++i) dwte_part[(long)ids[i] * Cp + c] += dslices[i * Cp + c];
}

void position_embedding_forward(float* x, const float* wpe, long N, int T, int C) {
#pragma omp parallel for schedule(static)
  for (long n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) x[n * C + c] += wpe[(n % T) * C + c];
}

void position_embedding_backward(float* dwpe, const float* dx, long N, int T, int C) {
#pragma omp parallel for schedule(static)
  for (int c = 0; c < C; ++c)
    for (long n = 0; n < N; ++n) dwpe[(n % T) * C + c] += dx[n * C + c];
}

}  // namespace moebench
