#pragma once
// Helpers of the GPU suites (tst_kernels_*): host <-> device copies with conversion to and
// from the kernel element type, and tolerance comparisons that name the worst element.
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
#include "moebench/kernels/precision.h"

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

}  // namespace moebench::test
