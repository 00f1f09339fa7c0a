#pragma once
// NcclCommunicator: the Communicator interface over NCCL, on DEVICE buffers.
// Compiled only when CUDA and NCCL are found (MOEBENCH_HAVE_NCCL=1); include this header
// under `#ifdef MOEBENCH_HAVE_NCCL`. The header itself needs neither cuda_runtime.h nor
// nccl.h.
//
// Bootstrap: rank 0 of the bootstrap communicator (normally an MpiCommunicator over the
// same ranks) creates the ncclUniqueId and broadcasts it over the bootstrap; every rank then
// selects `device` (cudaSetDevice) and joins with ncclCommInitRank (collective). Before that
// the ranks agree (a 1-int all-reduce on the bootstrap) that every one has its device, so a
// rank that cannot start makes all of them throw instead of leaving the others waiting.
// Group rank i of the NCCL communicator is rank i of the bootstrap; world ranks from it.
// NCCL allows one rank per GPU of a host in a communicator ("Duplicate GPU detected"
// otherwise): ranks of one host that share a device get distinct NCCL host identities first
// (dist/device_sharing.h: NCCL_HOSTID, NCCL_SOCKET_IFNAME=lo unless set), collective over the
// bootstrap, and then talk over loopback sockets.
//
// Semantics
//  * Every buffer is a device pointer on this communicator's device (or managed memory).
//  * The communicator owns one CUDA stream (stream()); every operation is enqueued on it.
//    It does NOT wait for other streams: producers of the data must be complete (or the
//    caller orders them against stream()) before a call.
//  * Blocking calls return once their work on the stream is complete (stream/event sync).
//  * follow_streams(current): from then on every operation is enqueued on the stream
//    current() returns at the call — the running task's stream (runtime/device_queue.h) —
//    and blocking calls return once enqueued (barrier() excepted): the executor's events order
//    what comes after. How a step graph's comm tasks use NCCL on the GPU.
//    Non-blocking calls return a Request backed by a cudaEvent recorded after the operation:
//    test() = cudaEventQuery, wait() = cudaEventSynchronize.
//  * Point to point: NCCL has no tags, `tag` is ignored; messages between a pair match in
//    issue order. isend/irecv are queued and issued together as one ncclGroupStart/End
//    group at the next point where they must progress (any request's test()/wait(), a
//    blocking send/recv — which joins the group — or any other operation). So the usual
//    MPI pattern "irecv; isend; wait both" (or "isend; recv") does not deadlock the stream.
//  * all_to_all_v is one NCCL group of per-peer ncclSend/ncclRecv (the self block is a
//    device-to-device copy). barrier() is a 1-element all-reduce followed by a stream sync.
//  * split() uses ncclCommSplit (NCCL >= 2.18; otherwise it throws). A negative color
//    (e.g. MPI_UNDEFINED) joins no communicator and returns nullptr. dup() is a split with
//    one color, ordered by rank. Both are collective over this communicator; the new one
//    follows the streams this one follows (follow_streams).
//  * Requests must not outlive the communicator that issued them.
//  * Every CUDA / NCCL failure throws std::runtime_error naming the call and carrying
//    cudaGetErrorString / ncclGetErrorString.
//  * Asynchronous errors (a peer gone, a failed link: NCCL's kernels would spin forever) are
//    polled by a watchdog thread (src/dist/nccl/nccl_watchdog.h), which aborts the communicator
//    — its kernels end, host waits return — and the communicator's next operation (or a
//    blocking call's wait) throws "NCCL error on rank R (GPU d) in an NCCL group of P ranks:
//    <error> (<detail>); the communicator was aborted". A rank that makes no further call within
//    30 s is ended with that message and exit 1.
//
// Traffic accounting (count_send): explicit algorithms count exact bytes per peer —
// send/isend (the message), all_to_all_v (each non-self block to its peer). NCCL's
// collectives choose their own algorithm internally (ring, tree, NVLS, ...), so for them
// the counts are the NCCL RING-MODEL counts, all to the next rank of the ring (rank+1 mod P):
//   all_reduce      2(P-1)/P * bytes                (bytes = the whole buffer; floor)
//   all_gather      (P-1)/P * output bytes = (P-1) * count * elem
//   reduce_scatter  (P-1)/P * input bytes  = (P-1) * count * elem
//   broadcast       bytes, on every ring rank except the one before the root (the ring's end)
//   reduce          bytes, on every ring rank except the root (the ring ends there)
//   not counted     control traffic: barrier() (a 1-element all-reduce), the bootstrap
//                   (counted by the bootstrap communicator itself), split/dup metadata.
//                   Self-sends (and the all_to_all_v self block) are never counted.
// The collective counts are a model, not measurements of what NCCL actually moved.
//
// One-sided windows (data_centric's pulls and pushes on GPUs) over CUDA IPC, which reach the
// ranks of one machine (window_reach; an operation on a rank of another machine throws: a served
// window, dist/served_window.h, carries those over MPI through host staging): create_window and
// create_shared_window (collective) publish each rank's cudaIpcMemHandle (of the allocation
// holding the memory, with the offset) over this communicator and map the others'.
//   get / put      cudaMemcpyAsync from / to the target's mapped memory on the current stream
//                  (a peer GPU's over NVLink or PCIe, or the same GPU's when ranks share it);
//   accumulate     float sums only: an atomicAdd kernel into the target's memory
//                  (kernels/atomic_add.h), so concurrent contributions add in any order;
//   flush          nothing to wait for: stream order (and the executor's events) complete an
//                  operation for what follows it;
//   barrier, sync  this communicator's barrier(): every rank's earlier operations on the
//                  stream are complete when it returns.
// A shared window's segments are zeroed device allocations of each rank. Counted traffic: a get
// on the pulling rank's meter with peer = target, a put or accumulate on the origin's (as the MPI
// backend counts them). Destroying a window waits at a barrier for the peers (not while unwinding).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "moebench/dist/communicator.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace moebench {

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `bootstrap`. `device` is the CUDA device this rank uses.
  NcclCommunicator(Communicator& bootstrap, int device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  // Number of visible CUDA devices; 0 when there is no GPU or no usable driver.
  static int device_count();

  int device() const;
  CUstream_st* stream() const;  // the cudaStream_t every operation is enqueued on
  CUstream_st* current_stream() const;  // where the next operation goes: stream() or the followed one
  void count_one_sided(int group_peer, size_t bytes) { count_send(group_peer, bytes); }  // the windows' traffic
  void synchronize();           // issues queued point-to-point work, then syncs the stream
  // Enqueue on the caller's streams from now on (see above).
  void follow_streams(std::function<CUstream_st*()> current);

  int rank() const override;
  int size() const override;
  int world_rank(int group_rank) const override;
  std::string backend() const override { return "nccl"; }

  void send(const void* buf, size_t count, DType type, int peer, int tag = 0) override;
  void recv(void* buf, size_t count, DType type, int peer, int tag = 0) override;
  RequestPtr isend(const void* buf, size_t count, DType type, int peer, int tag = 0) override;
  RequestPtr irecv(void* buf, size_t count, DType type, int peer, int tag = 0) override;

  void all_reduce(void* data, size_t count, DType type, ReduceOp op = ReduceOp::sum) override;
  void all_gather(const void* send, void* recv, size_t count, DType type) override;
  void reduce_scatter(const void* send, void* recv, size_t count, DType type,
                      ReduceOp op = ReduceOp::sum) override;
  void all_to_all_v(const void* send, const size_t* send_counts, const size_t* send_displs,
                    void* recv, const size_t* recv_counts, const size_t* recv_displs,
                    DType type) override;
  void broadcast(void* data, size_t count, DType type, int root) override;
  void reduce(void* data, size_t count, DType type, int root, ReduceOp op = ReduceOp::sum) override;
  void barrier() override;

  RequestPtr iall_reduce(void* data, size_t count, DType type, ReduceOp op = ReduceOp::sum) override;
  RequestPtr iall_gather(const void* send, void* recv, size_t count, DType type) override;
  RequestPtr iall_to_all_v(const void* send, const size_t* send_counts, const size_t* send_displs,
                           void* recv, const size_t* recv_counts, const size_t* recv_displs,
                           DType type) override;
  RequestPtr ibroadcast(void* data, size_t count, DType type, int root) override;

  std::unique_ptr<Communicator> split(int color, int key) override;
  std::unique_ptr<Communicator> dup() override;

  // CUDA IPC windows (see above).
  std::unique_ptr<Window> create_window(void* base, size_t count, DType type) override;
  std::unique_ptr<SharedWindow> create_shared_window(size_t bytes) override;
  std::vector<int> window_reach() override;  // the ranks of one machine (CUDA IPC)
  std::unique_ptr<WindowStaging> window_staging(Window& inner, void* base) override;

  struct Impl;  // CUDA / NCCL state (defined in the .cpp)

 private:
  explicit NcclCommunicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Communicator> split_impl(int color, int key);

  // Enqueue helpers (no host sync); each counts its traffic.
  void enqueue_all_reduce(void* data, size_t count, DType type, ReduceOp op);
  void enqueue_all_gather(const void* send, void* recv, size_t count, DType type);
  void enqueue_all_to_all_v(const void* send, const size_t* send_counts, const size_t* send_displs,
                            void* recv, const size_t* recv_counts, const size_t* recv_displs,
                            DType type);
  void enqueue_broadcast(void* data, size_t count, DType type, int root);
  RequestPtr queue_p2p(bool is_send, void* buf, size_t count, DType type, int peer);
  RequestPtr record_request();

  std::unique_ptr<Impl> impl_;
};

}  // namespace moebench
