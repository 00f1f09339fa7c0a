// The NCCL backend's one-sided windows over CUDA IPC (dist/nccl_communicator.h, "One-sided
// windows"): handles exchanged once over the communicator, copies and atomic additions on the
// communicator's current stream. Built only with NCCL (core/CMakeLists.txt).
#include "ipc_windows.h"

#include <cuda.h>  // the cuMemGetAddressRange type only: the driver entry point comes from the runtime
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "moebench/dist/device_sharing.h"
#include "moebench/dist/nccl_communicator.h"
#ifdef MOEBENCH_HAVE_CUDA
#include "moebench/kernels/atomic_add.h"
#endif

namespace moebench {
namespace {

void check(cudaError_t e, const char* call) { check_window_cuda(e, "NCCL backend window", call); }

// The allocation that holds p (cudaIpcGetMemHandle shares whole allocations): its base.
char* allocation_base(void* p) {
  using Fn = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  static Fn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    check(cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault, &found),
          "cudaGetDriverEntryPointByVersion(cuMemGetAddressRange)");
#else
    check(cudaGetDriverEntryPoint("cuMemGetAddressRange", &f, cudaEnableDefault, &found),
          "cudaGetDriverEntryPoint(cuMemGetAddressRange)");
#endif
    if (found != cudaDriverEntryPointSuccess || !f)
      throw std::runtime_error("NCCL backend window: the driver has no cuMemGetAddressRange");
    return reinterpret_cast<Fn>(f);
  }();
  CUdeviceptr base = 0;
  size_t size = 0;
  if (fn(&base, &size, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS)
    throw std::runtime_error("NCCL backend window: the window's memory is not one cudaMalloc allocation");
  return reinterpret_cast<char*>(base);
}

// What a rank publishes about its part of a window.
struct Published {
  cudaIpcMemHandle_t handle;
  uint64_t offset;  // of the window's base in the allocation
  uint64_t bytes;
  uint64_t host;    // host_identity(hostname): ranks must share the machine
  int64_t pid;
};

// Every rank's `mine` (blocking: the gather completes before the return).
template <class T>
std::vector<T> gather(NcclCommunicator& comm, const T& mine) {
  const int P = comm.size();
  char* dev = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(T) * (size_t)(P + 1)), "cudaMalloc");
  std::vector<T> all((size_t)P);
  try {
    cudaStream_t s = comm.current_stream();
    check(cudaMemcpyAsync(dev + sizeof(T) * P, &mine, sizeof mine, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    comm.all_gather(dev + sizeof(T) * P, dev, sizeof(T), DType::u8);
    s = comm.current_stream();
    check(cudaMemcpyAsync(all.data(), dev, sizeof(T) * (size_t)P, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  } catch (...) {
    cudaFree(dev);
    throw;
  }
  check(cudaFree(dev), "cudaFree");
  return all;
}

uint64_t this_host() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return host_identity(name);
}

// Opened IPC allocations of this process, shared by the windows that map the same one (a handle
// opens once per process).
struct Opened {
  char* base = nullptr;
  int users = 0;
};
std::mutex opened_mutex;
std::map<std::pair<int64_t, std::string>, Opened> opened;  // (pid, handle bytes) -> mapping

char* open_peer(const Published& p) {
  const std::pair<int64_t, std::string> key{p.pid, std::string(p.handle.reserved, sizeof p.handle.reserved)};
  std::lock_guard lock(opened_mutex);
  Opened& o = opened[key];
  if (o.users == 0) {
    void* base = nullptr;
    const cudaError_t e = cudaIpcOpenMemHandle(&base, p.handle, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      opened.erase(key);
      check(e, "cudaIpcOpenMemHandle (a peer rank's window memory)");
    }
    o.base = static_cast<char*>(base);
  }
  ++o.users;
  return o.base + p.offset;
}

void close_peer(const Published& p) noexcept {
  const std::pair<int64_t, std::string> key{p.pid, std::string(p.handle.reserved, sizeof p.handle.reserved)};
  std::lock_guard lock(opened_mutex);
  auto it = opened.find(key);
  if (it == opened.end() || --it->second.users > 0) return;
  cudaIpcCloseMemHandle(it->second.base);
  opened.erase(it);
}

// Whether every rank's `ok` is true (a 1-int min all-reduce over comm, blocking).
bool all_agree(NcclCommunicator& comm, bool ok) {
  int32_t* dev = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(int32_t)), "cudaMalloc");
  int32_t v = ok ? 1 : 0;
  try {
    cudaStream_t s = comm.current_stream();
    check(cudaMemcpyAsync(dev, &v, sizeof v, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    comm.all_reduce(dev, 1, DType::i32, ReduceOp::min);
    s = comm.current_stream();
    check(cudaMemcpyAsync(&v, dev, sizeof v, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  } catch (...) {
    cudaFree(dev);
    throw;
  }
  check(cudaFree(dev), "cudaFree");
  return v == 1;
}

// accumulate adds into a peer GPU's memory with atomicAdd: atomic across GPUs only where the pair
// has native peer-to-peer atomics (NVLink); ranks sharing a GPU need nothing.
void check_peer_atomics(int mine, const char* peer_ptr) {
  cudaPointerAttributes a{};
  check(cudaPointerGetAttributes(&a, peer_ptr), "cudaPointerGetAttributes");
  if (a.device == mine) return;
  int access = 0, atomics = 0;
  check(cudaDeviceCanAccessPeer(&access, mine, a.device), "cudaDeviceCanAccessPeer");
  check(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, mine, a.device),
        "cudaDeviceGetP2PAttribute");
  if (!access || !atomics)
    throw std::runtime_error("data_centric's gradient pushes on GPUs add into the owner's memory with atomics: GPU " +
                             std::to_string(mine) + " and GPU " + std::to_string(a.device) +
                             " have no native peer-to-peer atomics (NVLink); not built for this machine");
}

// The ranks' memory of one window, mapped into this process (this rank's own pointer as is):
// the ranks on this machine (CUDA IPC), or every rank with `one_host` (else it fails).
// Collective: every rank throws when any rank could not map or check a peer's memory.
class Mapping {
 public:
  Mapping(NcclCommunicator& comm, char* mine, size_t bytes, bool atomics, bool one_host) {
    Published me{};
    char* base = allocation_base(mine);
    check(cudaIpcGetMemHandle(&me.handle, base), "cudaIpcGetMemHandle");
    me.offset = (uint64_t)(mine - base);
    me.bytes = bytes;
    me.host = this_host();
    me.pid = (int64_t)getpid();
    all_ = gather(comm, me);
    ptr_.assign(all_.size(), nullptr);
    std::string failure;
    try {
      for (size_t r = 0; r < all_.size(); ++r) {
        if (all_[r].host != me.host) {
          if (one_host)
            throw std::runtime_error("node-shared windows on GPUs (CUDA IPC) need every rank of the group on one "
                                     "machine; rank " + std::to_string(comm.world_rank((int)r)) +
                                     " is on another host than rank " + std::to_string(comm.world_rank(comm.rank())));
          continue;  // out of reach: served windows (dist/served_window.h) carry its operations
        }
        ptr_[r] = (int)r == comm.rank() ? mine : open_peer(all_[r]);
        if (atomics && (int)r != comm.rank()) check_peer_atomics(comm.device(), ptr_[r]);
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (!all_agree(comm, failure.empty())) {  // no rank goes on to wait for one that stopped here
      release(comm.rank());
      throw std::runtime_error(failure.empty() ? "another rank could not map its peers' window memory (CUDA IPC); "
                                                 "its message names why"
                                               : failure);
    }
    me_ = comm.rank();
  }
  ~Mapping() { release(me_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  char* at(int rank, size_t offset, size_t bytes, const char* op) const {
    if (rank < 0 || rank >= (int)ptr_.size())
      throw std::out_of_range(std::string("window ") + op + ": no rank " + std::to_string(rank));
    if (offset + bytes > all_[(size_t)rank].bytes)
      throw std::out_of_range(std::string("window ") + op + ": " + std::to_string(bytes) + " bytes at " +
                              std::to_string(offset) + " beyond rank " + std::to_string(rank) + "'s " +
                              std::to_string(all_[(size_t)rank].bytes));
    if (!ptr_[(size_t)rank])
      throw std::logic_error(std::string("window ") + op + ": rank " + std::to_string(rank) +
                             " is on another machine, out of CUDA IPC's reach (create_served_window serves it)");
    return ptr_[(size_t)rank] + offset;
  }
  size_t bytes(int rank) const { return all_[(size_t)rank].bytes; }

 private:
  void release(int me) noexcept {
    for (size_t r = 0; r < ptr_.size(); ++r)
      if ((int)r != me && ptr_[r]) close_peer(all_[r]);
    ptr_.clear();
  }
  std::vector<Published> all_;
  std::vector<char*> ptr_;
  int me_ = -1;
};

// Ends a mapping collectively: no peer uses this rank's memory any more (a barrier), this rank
// closes its mappings of the peers', and every peer has closed its mapping of this rank's (a
// second barrier) before the caller may free it (CUDA: freeing an exported allocation before
// its importers closed it is undefined). While unwinding, only the local close.
void close_mapping(NcclCommunicator& comm, std::unique_ptr<Mapping>& map) noexcept {
  const bool collective = std::uncaught_exceptions() == 0;
  try {
    if (collective) comm.barrier();
    map.reset();
    if (collective) comm.barrier();
  } catch (...) {
    map.reset();
  }
}

class IpcWindow final : public Window {
 public:
  IpcWindow(NcclCommunicator& comm, void* base, size_t count, DType type)
      : comm_(comm),
        type_(type),
        count_(count),
        map_(std::make_unique<Mapping>(comm, static_cast<char*>(base), count * dtype_size(type), type == DType::f32, false)) {}
  ~IpcWindow() override { close_mapping(comm_, map_); }
  void get(void* dst, size_t count, int target, size_t off) override {
    bind();
    const size_t bytes = count * dtype_size(type_);
    check(cudaMemcpyAsync(dst, map_->at(target, off, bytes, "get"), bytes, cudaMemcpyDefault, comm_.current_stream()),
          "cudaMemcpyAsync (window get)");
    comm_.count_one_sided(target, bytes);  // pull traffic: target -> us, on our meter
  }
  void put(const void* src, size_t count, int target, size_t off) override {
    bind();
    const size_t bytes = count * dtype_size(type_);
    check(cudaMemcpyAsync(map_->at(target, off, bytes, "put"), src, bytes, cudaMemcpyDefault, comm_.current_stream()),
          "cudaMemcpyAsync (window put)");
    comm_.count_one_sided(target, bytes);
  }
  void accumulate(const void* src, size_t count, int target, size_t off, ReduceOp op) override {
    if (type_ != DType::f32 || op != ReduceOp::sum)
      throw std::invalid_argument("window accumulate on GPUs: float sums only");
    bind();
    const size_t bytes = count * sizeof(float);
    float* dst = reinterpret_cast<float*>(map_->at(target, off, bytes, "accumulate"));
#ifdef MOEBENCH_HAVE_CUDA
    cuda::atomic_add(dst, static_cast<const float*>(src), (long)count, comm_.current_stream());
#else
    (void)dst;
    throw std::runtime_error("window accumulate on GPUs needs the CUDA build's kernels (nvcc)");
#endif
    comm_.count_one_sided(target, bytes);
  }
  // Stream order completes an operation for what follows it on the stream and for the work the
  // executor orders after the task by events: nothing to wait for on the host.
  void flush(int) override {}
  void flush_all() override {}
  // Every rank's earlier operations (on the same stream as the barrier's all-reduce) complete.
  void barrier() override { comm_.barrier(); }
  DType dtype() const override { return type_; }
  size_t local_count() const override { return count_; }

 private:
  void bind() const { check(cudaSetDevice(comm_.device()), "cudaSetDevice"); }  // the calling thread's device
  NcclCommunicator& comm_;
  DType type_;
  size_t count_;
  std::unique_ptr<Mapping> map_;
};

// Each rank's segment is a zeroed cudaMalloc of its own, mapped into the other ranks.
class IpcSharedWindow final : public SharedWindow {
 public:
  IpcSharedWindow(NcclCommunicator& comm, size_t bytes) : comm_(comm) {
    check(cudaMalloc(reinterpret_cast<void**>(&mine_), bytes ? bytes : 1), "cudaMalloc (a node-shared segment)");
    try {
      cudaStream_t s = comm.current_stream();  // zeroed before any peer can read it (publish syncs)
      check(cudaMemsetAsync(mine_, 0, bytes ? bytes : 1, s), "cudaMemsetAsync");
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      map_ = std::make_unique<Mapping>(comm, mine_, bytes, false, true);
    } catch (...) {
      cudaFree(mine_);
      throw;
    }
  }
  ~IpcSharedWindow() override {
    close_mapping(comm_, map_);
    cudaFree(mine_);
  }
  void* segment(int local_rank) override { return map_->at(local_rank, 0, 0, "segment"); }
  size_t segment_bytes(int local_rank) const override { return map_->bytes(local_rank); }
  int local_rank() const override { return comm_.rank(); }
  int local_size() const override { return comm_.size(); }
  void sync() override { comm_.barrier(); }

 private:
  NcclCommunicator& comm_;
  char* mine_ = nullptr;
  std::unique_ptr<Mapping> map_;
};

}  // namespace

std::unique_ptr<Window> make_ipc_window(NcclCommunicator& comm, void* base, size_t count, DType type) {
  return std::make_unique<IpcWindow>(comm, base, count, type);
}

std::unique_ptr<SharedWindow> make_ipc_shared_window(NcclCommunicator& comm, size_t bytes) {
  return std::make_unique<IpcSharedWindow>(comm, bytes);
}

std::vector<int> ipc_reach(NcclCommunicator& comm) {
  const std::vector<uint64_t> hosts = gather(comm, this_host());
  std::vector<int> reach(hosts.size());
  for (size_t r = 0; r < hosts.size(); ++r)
    reach[r] = (int)(std::find(hosts.begin(), hosts.end(), hosts[r]) - hosts.begin());
  return reach;
}

void check_window_cuda(cudaError_t e, const char* who, const char* call) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(who) + ": " + call + " failed: " + cudaGetErrorString(e));
}

}  // namespace moebench
