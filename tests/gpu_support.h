#pragma once
// For the suites with the `gpu` label: MOEBENCH_REQUIRE_GPU() skips the running test (usually
// initTestCase, which skips the whole suite) without a CUDA build or a visible GPU, saying which.
#include <QtTest>

#include <string>

#include "moebench/train/device.h"

#define MOEBENCH_REQUIRE_GPU()                                                                \
  do {                                                                                        \
    const moebench::CudaAvailability cuda_ = moebench::cuda_availability();                   \
    if (!cuda_.built) QSKIP("built without CUDA");                                            \
    if (cuda_.devices == 0) QSKIP(qPrintable(QString::fromStdString("no GPU visible (" + cuda_.detail + ")"))); \
  } while (0)
