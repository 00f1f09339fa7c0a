#pragma once
// Helpers of the GPU suites (tst_kernels_*): host <-> device copies with conversion to and
// from the kernel element type, tolerance comparisons that name the worst element, and the
// experts' tensors on both sides.
// Include only under MOEBENCH_HAVE_CUDA.
#include <QString>
#include <QtTest>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/device_buffer.h"
#include "moebench/kernels/experts.h"
#include "moebench/kernels/precision.h"
#include "moebench/moe/expert_bank.h"
#include "test_support.h"

namespace moebench::test {

template <class T>
constexpr bool is_bf16 = std::is_same_v<T, cuda::bf16>;

// v rounded to T's precision (a copy for float).
template <class T>
std::vector<float> rounded(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = cuda::to_float(cuda::from_float<T>(v[i]));
  return out;
}
template <class T>
cuda::DeviceBuffer<T> upload(const std::vector<float>& v) {
  std::vector<T> t(v.size());
  for (size_t i = 0; i < v.size(); ++i) t[i] = cuda::from_float<T>(v[i]);
  return cuda::DeviceBuffer<T>(t);
}
// The first n elements of a device array, after all work on the device has finished (the
// kernels may run on a non-blocking stream, which cudaMemcpy does not wait for).
template <class U>
std::vector<U> download_raw(const U* dev, size_t n) {
  MOEBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<U> h(n);
  if (n) MOEBENCH_CUDA_CHECK(cudaMemcpy(h.data(), dev, n * sizeof(U), cudaMemcpyDeviceToHost));
  return h;
}
template <class U>
std::vector<U> download_raw(const cuda::DeviceBuffer<U>& b) {
  return download_raw(b.data(), b.size());
}
template <class T>
std::vector<float> download(const cuda::DeviceBuffer<T>& b) {
  const std::vector<T> h = download_raw(b);
  std::vector<float> out(h.size());
  for (size_t i = 0; i < h.size(); ++i) out[i] = cuda::to_float(h[i]);
  return out;
}

// "" when |got - ref| <= atol + rtol * |ref| everywhere, else the worst element.
inline QString mismatch(const std::vector<float>& got, const std::vector<float>& ref, double atol, double rtol) {
  if (got.size() != ref.size()) return QString("size %1 vs %2").arg(got.size()).arg(ref.size());
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double excess = std::abs((double)got[i] - ref[i]) - (atol + rtol * std::abs((double)ref[i]));
    if (!(excess <= worst)) {  // NaN counts as a mismatch
      worst = std::isnan(excess) ? INFINITY : excess;
      at = i;
    }
  }
  if (worst <= 0.0) return {};
  return QString("element %1: got %2, expected %3 (atol %4, rtol %5)")
      .arg(at).arg(got[at], 0, 'g', 9).arg(ref[at], 0, 'g', 9).arg(atol).arg(rtol);
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, (double)std::abs(x));
  return m;
}

// Contiguous expert tensors on the host (experts.h layout: w1 [E,F,C], b1 [E,F], w2 [E,C,F],
// b2 [E,C]).
struct HostExperts {
  int E = 0, C = 0, F = 0;
  std::vector<float> w1, b1, w2, b2;

  std::vector<ExpertParams> params() {
    std::vector<ExpertParams> v;
    for (int e = 0; e < E; ++e)
      v.push_back({w1.data() + (long)e * F * C, b1.data() + (long)e * F, w2.data() + (long)e * C * F,
                   b2.data() + (long)e * C});
    return v;
  }
  std::vector<std::vector<float>*> tensors() { return {&w1, &b1, &w2, &b2}; }
};

// scale 0 gives zeros.
template <class T>
HostExperts make_experts(int E, int C, int F, uint64_t seed, float scale = 1.0f) {
  HostExperts h;
  h.E = E;
  h.C = C;
  h.F = F;
  h.w1 = rounded<T>(test::random_vector((size_t)E * F * C, seed, scale / std::sqrt((float)C)));
  h.b1 = rounded<T>(test::random_vector((size_t)E * F, seed + 1, 0.1f * scale));
  h.w2 = rounded<T>(test::random_vector((size_t)E * C * F, seed + 2, scale / std::sqrt((float)F)));
  h.b2 = rounded<T>(test::random_vector((size_t)E * C, seed + 3, 0.1f * scale));
  return h;
}

template <class T>
struct DeviceExperts {
  cuda::DeviceBuffer<T> w1, b1, w2, b2;
  explicit DeviceExperts(const HostExperts& h)
      : w1(upload<T>(h.w1)), b1(upload<T>(h.b1)), w2(upload<T>(h.w2)), b2(upload<T>(h.b2)) {}
  cuda::ExpertWeights<T> view() { return {w1.data(), b1.data(), w2.data(), b2.data()}; }
  HostExperts download_all(int E, int C, int F) const {
    HostExperts h;
    h.E = E;
    h.C = C;
    h.F = F;
    h.w1 = download(w1);
    h.b1 = download(b1);
    h.w2 = download(w2);
    h.b2 = download(b2);
    return h;
  }
};

}  // namespace moebench::test
