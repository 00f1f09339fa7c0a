#pragma once
// For the suites with the `gpu` label: MOEBENCH_REQUIRE_GPU() skips the running test (usually
// initTestCase, which skips the whole suite) without a CUDA build or a visible GPU, saying which;
// worst_relative compares a GPU result with the CPU's.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "moebench/train/device.h"

#define MOEBENCH_REQUIRE_GPU()                                                                \
  do {                                                                                        \
    const moebench::CudaAvailability cuda_ = moebench::cuda_availability();                   \
    if (!cuda_.built) QSKIP("built without CUDA");                                            \
    if (cuda_.devices == 0) QSKIP(qPrintable(QString::fromStdString("no GPU visible (" + cuda_.detail + ")"))); \
  } while (0)

namespace moebench::test {

// Largest |a - b| / max(1e-3 max|b|, |b|) over elements [first, first + n): relative to each
// element, with a floor at a thousandth of the range's largest value so that near-zero entries
// compare absolutely (one tensor of an arena: first = its offset, n = its size).
inline double worst_relative(const std::vector<float>& a, const std::vector<float>& b, size_t first, size_t n) {
  double scale = 0.0;
  for (size_t i = first; i < first + n; ++i) scale = std::max(scale, (double)std::abs(b[i]));
  double worst = 0.0;
  for (size_t i = first; i < first + n; ++i)
    worst = std::max(worst, std::abs((double)a[i] - b[i]) / std::max(1e-3 * scale, (double)std::abs(b[i])));
  return worst;
}

}  // namespace moebench::test
