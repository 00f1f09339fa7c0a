#pragma once
// The cuBLAS handle the launchers in kernels/ use (matmul, attention, MoE expert GEMMs).
#include <cublas_v2.h>

namespace moebench::cuda {

// The handle of the calling host thread on its current CUDA device (cudaGetDevice): created
// lazily on first use, one per (thread, device), destroyed when the thread exits. Default
// math mode (fp32 GEMMs are true fp32, no TF32). The handle has no fixed stream: every
// launcher calls cublasSetStream(cublas_handle(), stream) before its cuBLAS calls, and sets
// the pointer mode it needs (host scalars in kernels/), so callers may share it freely on
// one thread. Throws (MOEBENCH_CUDA_CHECK / MOEBENCH_CUBLAS_CHECK) if creation fails.
cublasHandle_t cublas_handle();

}  // namespace moebench::cuda
