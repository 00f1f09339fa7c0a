#pragma once
// DeviceBuffer<T>: an owning cudaMalloc'd array (RAII, movable), with host <-> device copies.
// Used by the kernel tests, the benchmarks and the device runtime. An allocation failure
// throws with the size that was tried ("out of memory allocating 12.0 GiB on device 0").
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <utility>
#include <vector>

#include "moebench/kernels/cuda_check.h"

namespace moebench::cuda {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { resize(n); }
  explicit DeviceBuffer(const std::vector<T>& host) { upload(host); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Reallocates when n differs (contents are not kept).
  void resize(size_t n) {
    if (n == n_) return;
    release();
    if (n == 0) return;
    const cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T));
    if (e != cudaSuccess) {
      p_ = nullptr;
      char size[32];
      std::snprintf(size, sizeof size, "%.1f GiB", (double)(n * sizeof(T)) / (1u << 30));
      throw_cuda_error("cudaMalloc", __FILE__, __LINE__,
                       std::string(cudaGetErrorString(e)) + " allocating " + size);
    }
    n_ = n;
  }
  void zero(cudaStream_t stream = nullptr) {
    if (n_) MOEBENCH_CUDA_CHECK(cudaMemsetAsync(p_, 0, n_ * sizeof(T), stream));
  }
  void upload(const std::vector<T>& host) {
    resize(host.size());
    if (n_) MOEBENCH_CUDA_CHECK(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    if (n_) MOEBENCH_CUDA_CHECK(cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  void release() {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace moebench::cuda
