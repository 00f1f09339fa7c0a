#pragma once
// The CPU backend (tensor/backend.h): host memory and core's CPU layer functions (BLAS and
// OpenMP), run on the calling thread. One instance serves every model of the process.
#include "moebench/tensor/backend.h"

namespace moebench {

Backend& cpu_backend();

}  // namespace moebench
