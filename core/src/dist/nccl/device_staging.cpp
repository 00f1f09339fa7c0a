// The NCCL backend's WindowStaging (dist/served_window.h): a served window's data through host
// buffers. The requester's copies go on the running task's stream (the communicator's current
// one, after the task's producers); the server's on a stream of its own, its adds through
// kernels/atomic_add.h from a device copy, atomic with the IPC windows' pushes.
// Decision: pageable host memory and stream-ordered device scratch, no cudaMallocHost /
// cudaFreeHost / cudaFree while the window serves: those wait for the whole GPU, which may be
// in an NCCL barrier waiting for the very peer whose request the server is answering (a
// deadlock across machines). Page-locked staging allocated once per window is later work.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "ipc_windows.h"
#include "moebench/dist/nccl_communicator.h"
#ifdef MOEBENCH_HAVE_CUDA
#include "moebench/kernels/atomic_add.h"
#endif

namespace moebench {
namespace {

void check(cudaError_t e, const char* call) { check_window_cuda(e, "served window on GPU", call); }

class DeviceStaging final : public WindowStaging {
 public:
  DeviceStaging(NcclCommunicator& comm, void* base) : comm_(comm), base_(static_cast<char*>(base)) {}
  ~DeviceStaging() override {
    if (server_) {
      if (scratch_) (void)cudaFreeAsync(scratch_, server_);
      (void)cudaStreamSynchronize(server_);
      (void)cudaStreamDestroy(server_);
    }
  }
  void* alloc_host(size_t bytes) override { return ::operator new(bytes ? bytes : 1); }
  void free_host(void* p) noexcept override { ::operator delete(p); }
  void to_host(void* host, const void* src, size_t bytes) override {
    copy(host, src, bytes, cudaMemcpyDeviceToHost, comm_.current_stream());
  }
  void from_host(void* dst, const void* host, size_t bytes) override {
    copy(dst, host, bytes, cudaMemcpyHostToDevice, comm_.current_stream());
  }
  void read(void* host, size_t off, size_t bytes) override {
    copy(host, base_ + off, bytes, cudaMemcpyDeviceToHost, server());
  }
  void write(size_t off, const void* host, size_t bytes) override {
    copy(base_ + off, host, bytes, cudaMemcpyHostToDevice, server());
  }
  void add(size_t off, const float* host, size_t count) override {
    cudaStream_t s = server();
    const size_t bytes = count * sizeof(float);
    if (bytes > scratch_bytes_) {  // stream-ordered: no wait for the rest of the GPU
      if (scratch_) check(cudaFreeAsync(scratch_, s), "cudaFreeAsync");
      scratch_ = nullptr;
      scratch_bytes_ = 0;
      check(cudaMallocAsync(reinterpret_cast<void**>(&scratch_), bytes, s), "cudaMallocAsync (a served accumulate's data)");
      scratch_bytes_ = bytes;
    }
    check(cudaMemcpyAsync(scratch_, host, bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
#ifdef MOEBENCH_HAVE_CUDA
    cuda::atomic_add(reinterpret_cast<float*>(base_ + off), scratch_, (long)count, s);
#else
    throw std::runtime_error("window accumulate on GPUs needs the CUDA build's kernels (nvcc)");
#endif
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }

 private:
  void bind() const { check(cudaSetDevice(comm_.device()), "cudaSetDevice"); }
  cudaStream_t server() {  // the server thread's (created there: one thread uses it)
    bind();
    if (!server_) check(cudaStreamCreateWithFlags(&server_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return server_;
  }
  void copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
    bind();
    check(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  NcclCommunicator& comm_;
  char* base_;
  cudaStream_t server_ = nullptr;
  float* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
};

}  // namespace

std::unique_ptr<WindowStaging> make_device_staging(NcclCommunicator& comm, void* base) {
  return std::make_unique<DeviceStaging>(comm, base);
}

}  // namespace moebench
