// NcclCommunicator: NCCL collectives and point-to-point on device buffers, one owned stream.
// Built only when CUDA and NCCL are found (core/CMakeLists.txt, MOEBENCH_HAVE_NCCL).
#include "moebench/dist/device_sharing.h"
#include "moebench/dist/nccl_communicator.h"
#include "ipc_windows.h"
#include "nccl_watchdog.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace moebench {

namespace {

void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("NcclCommunicator: ") + call + " failed: " +
                             cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const char* call) {
  if (r != ncclSuccess)
    throw std::runtime_error(std::string("NcclCommunicator: ") + call + " failed: " +
                             ncclGetErrorString(r));
}

ncclDataType_t to_nccl(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::u8: return ncclUint8;
  }
  throw std::invalid_argument("NcclCommunicator: unknown dtype");
}

ncclRedOp_t to_nccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  throw std::invalid_argument("NcclCommunicator: unknown reduce op");
}


// Makes `device` current for the scope and restores the caller's device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check_cuda(cudaGetDevice(&prev_), "cudaGetDevice");
    if (prev_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceGuard() {
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != prev_) (void)cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = 0;
};

// ncclGroupStart/End as a scope: the group is always closed, errors inside it rethrown.
class NcclGroup {
 public:
  NcclGroup() { check_nccl(ncclGroupStart(), "ncclGroupStart"); }
  ~NcclGroup() {
    if (open_) (void)ncclGroupEnd();
  }
  void end() {
    open_ = false;
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

 private:
  bool open_ = true;
};

// One cudaEvent (timing disabled), destroyed with its last owner.
struct DeviceEvent {
  cudaEvent_t ev = nullptr;
  explicit DeviceEvent(cudaStream_t stream) {
    check_cuda(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    cudaError_t e = cudaEventRecord(ev, stream);
    if (e != cudaSuccess) {
      (void)cudaEventDestroy(ev);
      check_cuda(e, "cudaEventRecord");
    }
  }
  ~DeviceEvent() {
    if (ev) (void)cudaEventDestroy(ev);
  }
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;
};

// Completion slot of one request: the event is set once the operation is on the stream.
struct Slot {
  std::shared_ptr<DeviceEvent> event;
};

}  // namespace

struct NcclCommunicator::Impl {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;  // owned
  std::function<CUstream_st*()> follow;  // follow_streams(): the stream each operation goes on
  int device = 0;
  int rank = 0;
  int size = 1;
  std::vector<int> world;  // group rank -> world rank
  int32_t* scratch = nullptr;  // one device int for barrier(), allocated on first use

  struct P2P {
    bool is_send;
    void* buf;
    size_t count;
    DType type;
    int peer;
    std::shared_ptr<Slot> slot;
  };
  std::vector<P2P> pending;  // queued isend/irecv, issued together by flush_p2p()

  // Issues every queued point-to-point operation as one NCCL group, then records one event
  // that completes all their requests.
  void flush_p2p() {
    if (pending.empty()) return;
    std::vector<P2P> ops;
    ops.swap(pending);
    DeviceGuard g(device);
    {
      NcclGroup group;
      for (const P2P& op : ops) {
        if (op.count == 0) continue;
        if (op.is_send)
          check_nccl(ncclSend(op.buf, op.count, to_nccl(op.type), op.peer, comm, op_stream()), "ncclSend");
        else
          check_nccl(ncclRecv(op.buf, op.count, to_nccl(op.type), op.peer, comm, op_stream()), "ncclRecv");
      }
      group.end();
    }
    auto ev = std::make_shared<DeviceEvent>(op_stream());
    for (P2P& op : ops) op.slot->event = ev;
  }

  // The stream the next operation is enqueued on: the owned one, or the caller's. Every
  // operation asks, so an aborted communicator (nccl_watchdog.h) throws its error here.
  cudaStream_t op_stream() const {
    alive();
    return follow ? follow() : stream;
  }
  std::string describe() const {
    return "rank " + std::to_string(world.empty() ? rank : world[rank]) + " (GPU " + std::to_string(device) +
           ") in an NCCL group of " + std::to_string(size) + " ranks";
  }
  void alive() const {
    if (!comm) return;
    if (std::string f = nccl_watch::failure(comm); !f.empty()) throw std::runtime_error(f);
  }

  // The end of a blocking call: the owned stream synchronised; nothing when following the
  // caller's streams (their order completes the call).
  void sync_stream() {
    if (follow) return;
    DeviceGuard g(device);
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    alive();  // the wait may have ended because the watchdog aborted the communicator
  }

  ~Impl() {
    if (!stream && !comm) return;
    int prev = -1;
    bool have_prev = cudaGetDevice(&prev) == cudaSuccess;
    (void)cudaSetDevice(device);
    try {
      flush_p2p();
    } catch (...) {
    }
    const bool aborted = comm && !nccl_watch::failure(comm).empty();
    if (comm) nccl_watch::remove(comm);
    if (stream && !aborted) (void)cudaStreamSynchronize(stream);
    if (scratch) (void)cudaFree(scratch);
    if (comm && !aborted) (void)ncclCommDestroy(comm);
    if (stream) (void)cudaStreamDestroy(stream);
    if (have_prev && prev != device) (void)cudaSetDevice(prev);
  }
};

namespace {

class NcclRequest final : public Request {
 public:
  NcclRequest(NcclCommunicator::Impl* impl, std::shared_ptr<Slot> slot)
      : impl_(impl), slot_(std::move(slot)) {}
  ~NcclRequest() override {
    try {
      wait();
    } catch (...) {
    }
  }
  void wait() override {
    if (done_) return;
    issue();
    check_cuda(cudaEventSynchronize(slot_->event->ev), "cudaEventSynchronize");
    impl_->alive();  // the wait may have ended because the watchdog aborted the communicator
    done_ = true;
  }
  bool test() override {
    if (done_) return true;
    issue();
    cudaError_t e = cudaEventQuery(slot_->event->ev);
    if (e == cudaErrorNotReady) return false;
    check_cuda(e, "cudaEventQuery");
    done_ = true;
    return true;
  }

 private:
  void issue() {
    if (!slot_->event) impl_->flush_p2p();
    if (!slot_->event) {
      done_ = true;  // never completes: do not retry from the destructor
      throw std::runtime_error(
          "NcclCommunicator: point-to-point operation was not issued (an earlier NCCL error)");
    }
  }

  NcclCommunicator::Impl* impl_;
  std::shared_ptr<Slot> slot_;
  bool done_ = false;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction

int NcclCommunicator::device_count() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear the (non-sticky) error
    return 0;
  }
  return n;
}

namespace {

// Ranks of one host on one GPU become separate NCCL hosts (dist/device_sharing.h). Collective
// over the bootstrap; sets the environment before ncclCommInitRank reads it.
void share_devices(Communicator& bootstrap, int rank, int device) {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  const int P = bootstrap.size();
  std::vector<int64_t> mine = {(int64_t)host_identity(name), device}, all((size_t)2 * P);
  bootstrap.all_gather(mine.data(), all.data(), 2, DType::i64);
  std::vector<uint64_t> host(P);
  std::vector<int> dev(P);
  for (int i = 0; i < P; ++i) {
    host[i] = (uint64_t)all[(size_t)2 * i];
    dev[i] = (int)all[(size_t)2 * i + 1];
  }
  if (!ranks_sharing_a_device(host, dev)[rank]) return;
  const std::string id = std::string(name) + "/rank" + std::to_string(rank);
  setenv("NCCL_HOSTID", id.c_str(), 0);
  setenv("NCCL_SOCKET_IFNAME", "lo", 0);
}

}  // namespace

NcclCommunicator::NcclCommunicator(Communicator& bootstrap, int device)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.rank = bootstrap.rank();
  s.size = bootstrap.size();
  s.device = device;
  s.world.resize(s.size);
  for (int i = 0; i < s.size; ++i) s.world[i] = bootstrap.world_rank(i);

  // Local checks first, then agree over the bootstrap, so that no rank is left waiting in
  // the broadcast or in ncclCommInitRank when another one cannot start.
  const int ndev = device_count();
  std::string local_error;
  if (device < 0 || device >= ndev)
    local_error = "device " + std::to_string(device) + " is not available (" + std::to_string(ndev) +
                  " CUDA devices)";
  ncclUniqueId id{};
  if (local_error.empty() && s.rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) local_error = std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(r);
  }
  int32_t ok = local_error.empty() ? 1 : 0;
  bootstrap.all_reduce(&ok, 1, DType::i32, ReduceOp::min);
  if (!local_error.empty()) throw std::runtime_error("NcclCommunicator: " + local_error);
  if (!ok) throw std::runtime_error("NcclCommunicator: another rank could not start (see its error)");
  bootstrap.broadcast(&id, sizeof(id), DType::u8, 0);
  share_devices(bootstrap, s.rank, device);

  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  check_cuda(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check_nccl(ncclCommInitRank(&s.comm, s.size, id, s.rank), "ncclCommInitRank");
  nccl_watch::add(s.comm, s.describe());
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NcclCommunicator::~NcclCommunicator() = default;

int NcclCommunicator::device() const { return impl_->device; }
CUstream_st* NcclCommunicator::stream() const { return impl_->stream; }
CUstream_st* NcclCommunicator::current_stream() const { return impl_->op_stream(); }
int NcclCommunicator::rank() const { return impl_->rank; }
int NcclCommunicator::size() const { return impl_->size; }

int NcclCommunicator::world_rank(int group_rank) const {
  if (group_rank < 0 || group_rank >= impl_->size)
    throw std::out_of_range("NcclCommunicator::world_rank: rank " + std::to_string(group_rank) +
                            " outside a group of " + std::to_string(impl_->size));
  return impl_->world[group_rank];
}

void NcclCommunicator::synchronize() {
  impl_->flush_p2p();
  DeviceGuard g(impl_->device);
  check_cuda(cudaStreamSynchronize(impl_->op_stream()), "cudaStreamSynchronize");
}

void NcclCommunicator::follow_streams(std::function<CUstream_st*()> current) {
  impl_->flush_p2p();
  impl_->follow = std::move(current);
}

RequestPtr NcclCommunicator::record_request() {
  DeviceGuard g(impl_->device);
  auto slot = std::make_shared<Slot>();
  slot->event = std::make_shared<DeviceEvent>(impl_->op_stream());
  return std::make_unique<NcclRequest>(impl_.get(), std::move(slot));
}

// ---------------------------------------------------------------------------------------------
// Point to point

RequestPtr NcclCommunicator::queue_p2p(bool is_send, void* buf, size_t count, DType type, int peer) {
  if (peer < 0 || peer >= impl_->size)
    throw std::out_of_range("NcclCommunicator: peer " + std::to_string(peer) + " outside a group of " +
                            std::to_string(impl_->size));
  auto slot = std::make_shared<Slot>();
  impl_->pending.push_back({is_send, buf, count, type, peer, slot});
  if (is_send && peer != impl_->rank && count > 0) count_send(peer, count * dtype_size(type));
  return std::make_unique<NcclRequest>(impl_.get(), std::move(slot));
}

void NcclCommunicator::send(const void* buf, size_t count, DType type, int peer, int /*tag*/) {
  queue_p2p(true, const_cast<void*>(buf), count, type, peer)->wait();
}

void NcclCommunicator::recv(void* buf, size_t count, DType type, int peer, int /*tag*/) {
  queue_p2p(false, buf, count, type, peer)->wait();
}

RequestPtr NcclCommunicator::isend(const void* buf, size_t count, DType type, int peer, int /*tag*/) {
  return queue_p2p(true, const_cast<void*>(buf), count, type, peer);
}

RequestPtr NcclCommunicator::irecv(void* buf, size_t count, DType type, int peer, int /*tag*/) {
  return queue_p2p(false, buf, count, type, peer);
}

// ---------------------------------------------------------------------------------------------
// Collectives: enqueue (ring-model traffic counts, see the header)

void NcclCommunicator::enqueue_all_reduce(void* data, size_t count, DType type, ReduceOp op) {
  impl_->flush_p2p();
  if (count == 0) return;
  DeviceGuard g(impl_->device);
  check_nccl(ncclAllReduce(data, data, count, to_nccl(type), to_nccl(op), impl_->comm, impl_->op_stream()),
             "ncclAllReduce");
  const int P = impl_->size;
  if (P > 1) {
    uint64_t bytes = static_cast<uint64_t>(count) * dtype_size(type);
    count_send((impl_->rank + 1) % P, 2 * static_cast<uint64_t>(P - 1) * bytes / P);
  }
}

void NcclCommunicator::enqueue_all_gather(const void* send, void* recv, size_t count, DType type) {
  impl_->flush_p2p();
  if (count == 0) return;
  DeviceGuard g(impl_->device);
  check_nccl(ncclAllGather(send, recv, count, to_nccl(type), impl_->comm, impl_->op_stream()),
             "ncclAllGather");
  const int P = impl_->size;
  if (P > 1) count_send((impl_->rank + 1) % P, static_cast<uint64_t>(P - 1) * count * dtype_size(type));
}

void NcclCommunicator::enqueue_all_to_all_v(const void* send, const size_t* send_counts,
                                            const size_t* send_displs, void* recv,
                                            const size_t* recv_counts, const size_t* recv_displs,
                                            DType type) {
  impl_->flush_p2p();
  const int P = impl_->size;
  const int me = impl_->rank;
  const size_t es = dtype_size(type);
  const ncclDataType_t nt = to_nccl(type);
  const char* sbase = static_cast<const char*>(send);
  char* rbase = static_cast<char*>(recv);
  if (send_counts[me] != recv_counts[me])
    throw std::invalid_argument("NcclCommunicator::all_to_all_v: send_counts[self] (" +
                                std::to_string(send_counts[me]) + ") != recv_counts[self] (" +
                                std::to_string(recv_counts[me]) + ")");
  DeviceGuard g(impl_->device);
  if (send_counts[me] > 0)
    check_cuda(cudaMemcpyAsync(rbase + recv_displs[me] * es, sbase + send_displs[me] * es,
                               send_counts[me] * es, cudaMemcpyDeviceToDevice, impl_->op_stream()),
               "cudaMemcpyAsync");
  {
    NcclGroup group;
    for (int p = 0; p < P; ++p) {
      if (p == me) continue;
      if (send_counts[p] > 0)
        check_nccl(ncclSend(sbase + send_displs[p] * es, send_counts[p], nt, p, impl_->comm,
                            impl_->op_stream()),
                   "ncclSend");
      if (recv_counts[p] > 0)
        check_nccl(ncclRecv(rbase + recv_displs[p] * es, recv_counts[p], nt, p, impl_->comm,
                            impl_->op_stream()),
                   "ncclRecv");
    }
    group.end();
  }
  for (int p = 0; p < P; ++p)
    if (p != me && send_counts[p] > 0) count_send(p, static_cast<uint64_t>(send_counts[p]) * es);
}

void NcclCommunicator::enqueue_broadcast(void* data, size_t count, DType type, int root) {
  const int P = impl_->size;
  if (root < 0 || root >= P)
    throw std::out_of_range("NcclCommunicator::broadcast: root " + std::to_string(root) +
                            " outside a group of " + std::to_string(P));
  impl_->flush_p2p();
  if (count == 0) return;
  DeviceGuard g(impl_->device);
  check_nccl(ncclBroadcast(data, data, count, to_nccl(type), root, impl_->comm, impl_->op_stream()),
             "ncclBroadcast");
  const int next = (impl_->rank + 1) % P;
  if (P > 1 && next != root) count_send(next, static_cast<uint64_t>(count) * dtype_size(type));
}

// ---------------------------------------------------------------------------------------------
// Collectives: blocking and non-blocking

void NcclCommunicator::all_reduce(void* data, size_t count, DType type, ReduceOp op) {
  enqueue_all_reduce(data, count, type, op);
  impl_->sync_stream();
}

void NcclCommunicator::all_gather(const void* send, void* recv, size_t count, DType type) {
  enqueue_all_gather(send, recv, count, type);
  impl_->sync_stream();
}

void NcclCommunicator::reduce_scatter(const void* send, void* recv, size_t count, DType type,
                                      ReduceOp op) {
  impl_->flush_p2p();
  if (count > 0) {
    DeviceGuard g(impl_->device);
    check_nccl(ncclReduceScatter(send, recv, count, to_nccl(type), to_nccl(op), impl_->comm,
                                 impl_->op_stream()),
               "ncclReduceScatter");
    const int P = impl_->size;
    if (P > 1)
      count_send((impl_->rank + 1) % P, static_cast<uint64_t>(P - 1) * count * dtype_size(type));
  }
  impl_->sync_stream();
}

void NcclCommunicator::all_to_all_v(const void* send, const size_t* send_counts,
                                    const size_t* send_displs, void* recv, const size_t* recv_counts,
                                    const size_t* recv_displs, DType type) {
  enqueue_all_to_all_v(send, send_counts, send_displs, recv, recv_counts, recv_displs, type);
  impl_->sync_stream();
}

void NcclCommunicator::broadcast(void* data, size_t count, DType type, int root) {
  enqueue_broadcast(data, count, type, root);
  impl_->sync_stream();
}

void NcclCommunicator::reduce(void* data, size_t count, DType type, int root, ReduceOp op) {
  const int P = impl_->size;
  if (root < 0 || root >= P)
    throw std::out_of_range("NcclCommunicator::reduce: root " + std::to_string(root) + " outside a group of " +
                            std::to_string(P));
  impl_->flush_p2p();
  if (count == 0) return;
  {
    DeviceGuard g(impl_->device);
    check_nccl(ncclReduce(data, data, count, to_nccl(type), to_nccl(op), root, impl_->comm, impl_->op_stream()),
               "ncclReduce");
  }
  if (P > 1 && impl_->rank != root) count_send((impl_->rank + 1) % P, static_cast<uint64_t>(count) * dtype_size(type));
  impl_->sync_stream();
}

void NcclCommunicator::barrier() {
  impl_->flush_p2p();
  {
    DeviceGuard g(impl_->device);
    if (!impl_->scratch)
      check_cuda(cudaMalloc(reinterpret_cast<void**>(&impl_->scratch), sizeof(int32_t)), "cudaMalloc");
    check_cuda(cudaMemsetAsync(impl_->scratch, 0, sizeof(int32_t), impl_->op_stream()), "cudaMemsetAsync");
    // Control traffic: not counted (as in the MPI backend).
    check_nccl(ncclAllReduce(impl_->scratch, impl_->scratch, 1, ncclInt32, ncclSum, impl_->comm,
                             impl_->op_stream()),
               "ncclAllReduce");
  }
  check_cuda(cudaStreamSynchronize(impl_->op_stream()), "cudaStreamSynchronize");  // a host barrier, following or not
}

RequestPtr NcclCommunicator::iall_reduce(void* data, size_t count, DType type, ReduceOp op) {
  enqueue_all_reduce(data, count, type, op);
  return record_request();
}

RequestPtr NcclCommunicator::iall_gather(const void* send, void* recv, size_t count, DType type) {
  enqueue_all_gather(send, recv, count, type);
  return record_request();
}

RequestPtr NcclCommunicator::iall_to_all_v(const void* send, const size_t* send_counts,
                                           const size_t* send_displs, void* recv,
                                           const size_t* recv_counts, const size_t* recv_displs,
                                           DType type) {
  enqueue_all_to_all_v(send, send_counts, send_displs, recv, recv_counts, recv_displs, type);
  return record_request();
}

RequestPtr NcclCommunicator::ibroadcast(void* data, size_t count, DType type, int root) {
  enqueue_broadcast(data, count, type, root);
  return record_request();
}

// ---------------------------------------------------------------------------------------------
// Sub-communicators

std::unique_ptr<Communicator> NcclCommunicator::split_impl(int color, int key) {
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  synchronize();  // nothing of ours is in flight while NCCL builds the new communicator
  DeviceGuard g(impl_->device);
  ncclComm_t child = nullptr;
  check_nccl(ncclCommSplit(impl_->comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, nullptr),
             "ncclCommSplit");
  if (color < 0 || child == nullptr) return nullptr;

  auto s = std::make_unique<Impl>();
  s->comm = child;
  s->device = impl_->device;
  s->follow = impl_->follow;  // a split of a following communicator follows the same streams
  check_nccl(ncclCommUserRank(child, &s->rank), "ncclCommUserRank");
  check_nccl(ncclCommCount(child, &s->size), "ncclCommCount");

  check_cuda(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");

  // World ranks of the new group: one all-gather of this rank's world rank (setup metadata,
  // not counted as traffic).
  s->world.assign(s->size, -1);
  int32_t* dev = nullptr;
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(int32_t) * (s->size + 1)), "cudaMalloc");
  try {
    int32_t mine = impl_->world[impl_->rank];
    check_cuda(cudaMemcpyAsync(dev + s->size, &mine, sizeof(int32_t), cudaMemcpyHostToDevice, s->stream),
               "cudaMemcpyAsync");
    check_nccl(ncclAllGather(dev + s->size, dev, 1, ncclInt32, child, s->stream), "ncclAllGather");
    std::vector<int32_t> host(s->size);
    check_cuda(cudaMemcpyAsync(host.data(), dev, sizeof(int32_t) * s->size, cudaMemcpyDeviceToHost,
                               s->stream),
               "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(s->stream), "cudaStreamSynchronize");
    for (int i = 0; i < s->size; ++i) s->world[i] = host[i];
    nccl_watch::add(child, s->describe());
  } catch (...) {
    (void)cudaFree(dev);
    throw;
  }
  check_cuda(cudaFree(dev), "cudaFree");

  std::unique_ptr<NcclCommunicator> out(new NcclCommunicator(std::move(s)));
  out->set_traffic_meter(traffic_meter());
  return out;
#else
  (void)color;
  (void)key;
  throw std::runtime_error("NcclCommunicator: split/dup need ncclCommSplit (NCCL >= 2.18); built with NCCL " +
                           std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR));
#endif
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) { return split_impl(color, key); }

std::unique_ptr<Communicator> NcclCommunicator::dup() { return split_impl(0, impl_->rank); }

// ---------------------------------------------------------------------------------------------
// One-sided windows: CUDA IPC (ipc_windows.cpp)

std::unique_ptr<Window> NcclCommunicator::create_window(void* base, size_t count, DType type) {
  DeviceGuard g(impl_->device);
  impl_->flush_p2p();
  return make_ipc_window(*this, base, count, type);
}

std::unique_ptr<SharedWindow> NcclCommunicator::create_shared_window(size_t bytes) {
  DeviceGuard g(impl_->device);
  impl_->flush_p2p();
  return make_ipc_shared_window(*this, bytes);
}

std::vector<int> NcclCommunicator::window_reach() {
  DeviceGuard g(impl_->device);
  impl_->flush_p2p();
  return ipc_reach(*this);
}

std::unique_ptr<WindowStaging> NcclCommunicator::window_staging(Window&, void* base) {
  return make_device_staging(*this, base);
}

}  // namespace moebench
