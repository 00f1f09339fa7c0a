#pragma once
// One cuBLAS handle per host thread and device, created lazily; launchers set its stream per call.
#include <cublas_v2.h>
namespace moebench::cuda {
cublasHandle_t cublas_handle();
}  // namespace moebench::cuda
