// cuBLAS GEMM timing for `moebench bench gemm --device cuda`.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>

#include "moebench/kernels/blas_handle.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/device_buffer.h"
#include "moebench/kernels/gemm_timing.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/precision.h"

namespace moebench::cuda {
namespace {

// Deterministic values in [-1, 1] from the element index (a hash), so no host upload.
template <typename T>
__global__ void fill_uniform_kernel(T* p, long n, unsigned seed) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    p[i] = from_float<T>((float)(x & 0xffffff) / (float)0x800000 - 1.0f);
  }
}

template <typename T>
void fill_uniform(DeviceBuffer<T>& b, unsigned seed) {
  const Launch1d l = launch_1d((long)b.size());
  if (l.grid == 0) return;
  fill_uniform_kernel<<<l.grid, l.block>>>(b.data(), (long)b.size(), seed);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

struct EventDeleter {
  void operator()(CUevent_st* e) const { cudaEventDestroy(e); }
};
using EventPtr = std::unique_ptr<CUevent_st, EventDeleter>;

EventPtr make_event() {
  cudaEvent_t e = nullptr;
  MOEBENCH_CUDA_CHECK(cudaEventCreate(&e));
  return EventPtr(e);
}

template <typename T>
std::vector<double> time_typed(int m, int n, int k, cudaDataType_t dtype, cublasComputeType_t compute,
                               int warmup, int iters) {
  DeviceBuffer<T> a((size_t)m * k), b((size_t)k * n), c((size_t)m * n);
  fill_uniform(a, 1u);
  fill_uniform(b, 2u);
  cublasHandle_t raw = cublas_handle();
  MOEBENCH_CUBLAS_CHECK(cublasSetStream(raw, nullptr));
  MOEBENCH_CUBLAS_CHECK(cublasSetPointerMode(raw, CUBLAS_POINTER_MODE_HOST));
  const float alpha = 1.0f, beta = 0.0f;
  // Column-major C^T[n,m] = B^T[n,k] A^T[k,m]: row-major C = A B without transposes.
  auto gemm = [&] {
    MOEBENCH_CUBLAS_CHECK(cublasGemmEx(raw, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b.data(), dtype, n,
                                       a.data(), dtype, k, &beta, c.data(), dtype, n, compute,
                                       CUBLAS_GEMM_DEFAULT));
  };
  for (int i = 0; i < warmup; ++i) gemm();
  const EventPtr start = make_event(), stop = make_event();
  std::vector<double> seconds;
  for (int i = 0; i < iters; ++i) {
    MOEBENCH_CUDA_CHECK(cudaEventRecord(start.get()));
    gemm();
    MOEBENCH_CUDA_CHECK(cudaEventRecord(stop.get()));
    MOEBENCH_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0.0f;
    MOEBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    seconds.push_back(ms * 1e-3);
  }
  return seconds;
}

}  // namespace

const char* gemm_type_name(GemmType t) {
  switch (t) {
    case GemmType::fp32: return "fp32";
    case GemmType::tf32: return "tf32";
    case GemmType::bf16: return "bf16";
  }
  return "?";
}

std::vector<double> time_gemm(int m, int n, int k, GemmType type, int warmup, int iters) {
  switch (type) {
    case GemmType::fp32: return time_typed<float>(m, n, k, CUDA_R_32F, CUBLAS_COMPUTE_32F, warmup, iters);
    case GemmType::tf32:
      return time_typed<float>(m, n, k, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, warmup, iters);
    case GemmType::bf16: return time_typed<bf16>(m, n, k, CUDA_R_16BF, CUBLAS_COMPUTE_32F, warmup, iters);
  }
  return {};
}

}  // namespace moebench::cuda
