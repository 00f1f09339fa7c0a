#pragma once
// Communicator: the one interface every strategy talks through. Backends:
//   LocalCommunicator  one rank, no MPI (copies only): single-process runs and tests
//   MpiCommunicator    OpenMPI, MPI_THREAD_MULTIPLE (mpi_communicator.h)
//   NcclCommunicator   NCCL on device buffers, bootstrapped over MPI (nccl_communicator.h)
// Every byte a rank sends goes through count_send() into its TrafficMeter (when one is
// attached), by peer and link class: the ground truth for traffic claims. Collectives are
// implemented so that the bytes per peer are known exactly (see each backend).
//
// Counts are in elements of `type`. A communicator object is used by one thread at a time;
// concurrent communication (e.g. gradient all-reduce on the comm stream while the compute
// stream exchanges tokens) uses separate communicators (dup()).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace moebench {

class TrafficMeter;
class WindowStaging;  // dist/served_window.h

enum class DType { f32, f64, i32, i64, u8 };
size_t dtype_size(DType t);
const char* dtype_name(DType t);
enum class ReduceOp { sum, max, min };

// A pending non-blocking operation. wait() completes it (rethrowing any error); the
// destructor waits too, so a request is never leaked in flight.
class Request {
 public:
  virtual ~Request() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;  // true once complete (then wait() returns at once)
};
using RequestPtr = std::unique_ptr<Request>;

// One-sided access to memory every rank of the communicator exposed (collective creation).
// Passive target: get/accumulate may be issued at any time; flush() completes this rank's
// operations to a target. Offsets and counts are in bytes / elements of the window's dtype.
class Window {
 public:
  virtual ~Window() = default;
  virtual void get(void* dst, size_t count, int target, size_t target_offset) = 0;
  virtual void put(const void* src, size_t count, int target, size_t target_offset) = 0;
  virtual void accumulate(const void* src, size_t count, int target, size_t target_offset,
                          ReduceOp op = ReduceOp::sum) = 0;
  virtual void flush(int target) = 0;
  virtual void flush_all() = 0;
  virtual void barrier() = 0;       // all ranks' earlier operations are complete and visible
  virtual DType dtype() const = 0;
  virtual size_t local_count() const = 0;
};

// Memory shared by the ranks of one node (MPI_Win_allocate_shared on the node communicator):
// every local rank reads and writes every segment directly. For Janus' per-node caches.
class SharedWindow {
 public:
  virtual ~SharedWindow() = default;
  virtual void* segment(int local_rank) = 0;  // base of that rank's segment
  virtual size_t segment_bytes(int local_rank) const = 0;
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  virtual void sync() = 0;  // memory barrier + barrier among the node's ranks
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int world_rank(int group_rank) const = 0;  // for traffic accounting by world peer
  virtual std::string backend() const = 0;           // "local", "mpi", "nccl"

  // Point to point.
  virtual void send(const void* buf, size_t count, DType type, int peer, int tag = 0) = 0;
  virtual void recv(void* buf, size_t count, DType type, int peer, int tag = 0) = 0;
  virtual RequestPtr isend(const void* buf, size_t count, DType type, int peer, int tag = 0) = 0;
  virtual RequestPtr irecv(void* buf, size_t count, DType type, int peer, int tag = 0) = 0;

  // Collectives (blocking). all_reduce is in place; all_gather/reduce_scatter take
  // `count` = elements per rank; all_to_all_v counts/displacements are per peer, in elements.
  virtual void all_reduce(void* data, size_t count, DType type, ReduceOp op = ReduceOp::sum) = 0;
  virtual void all_gather(const void* send, void* recv, size_t count, DType type) = 0;
  virtual void reduce_scatter(const void* send, void* recv, size_t count, DType type,
                              ReduceOp op = ReduceOp::sum) = 0;
  virtual void all_to_all_v(const void* send, const size_t* send_counts, const size_t* send_displs,
                            void* recv, const size_t* recv_counts, const size_t* recv_displs,
                            DType type) = 0;
  virtual void broadcast(void* data, size_t count, DType type, int root) = 0;
  // In place: root's data becomes the reduction of every rank's data; the other ranks' data is
  // left as it was.
  virtual void reduce(void* data, size_t count, DType type, int root, ReduceOp op = ReduceOp::sum) = 0;
  virtual void barrier() = 0;

  // Collectives (non-blocking): the operation runs while the caller continues.
  virtual RequestPtr iall_reduce(void* data, size_t count, DType type, ReduceOp op = ReduceOp::sum) = 0;
  virtual RequestPtr iall_gather(const void* send, void* recv, size_t count, DType type) = 0;
  virtual RequestPtr iall_to_all_v(const void* send, const size_t* send_counts,
                                   const size_t* send_displs, void* recv, const size_t* recv_counts,
                                   const size_t* recv_displs, DType type) = 0;
  virtual RequestPtr ibroadcast(void* data, size_t count, DType type, int root) = 0;

  // Sub-communicators: ranks with the same color form one, ordered by key (then rank).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // A communicator over the same ranks with its own message space (for another thread).
  virtual std::unique_ptr<Communicator> dup() = 0;

  // Makes create_window() usable on this communicator and on every communicator split or
  // duplicated from it. Collective: call it on the world communicator, on every rank, before the
  // first create_window (the MPI backend opens its one-sided window here, and says which MPI
  // settings to try when this MPI cannot; a no-op for backends that need nothing). Idempotent.
  virtual void enable_windows() {}
  // One-sided windows over `count` elements of caller memory at `base` (collective).
  virtual std::unique_ptr<Window> create_window(void* base, size_t count, DType type) = 0;
  // Node-shared memory: each rank contributes `bytes` (collective over the node's ranks).
  virtual std::unique_ptr<SharedWindow> create_shared_window(size_t bytes) = 0;
  // Which ranks create_window's windows reach (collective): ranks with equal values reach each
  // other's memory; an operation on a rank with another value throws. MPI and local: all ranks;
  // NCCL: the ranks of one machine (CUDA IPC). create_served_window (dist/served_window.h) makes
  // windows that reach the others too.
  virtual std::vector<int> window_reach() { return std::vector<int>((size_t)size(), 0); }
  // How a served window moves this backend's memory (`inner`: this communicator's window over
  // `base`). Host memory by default.
  virtual std::unique_ptr<WindowStaging> window_staging(Window& inner, void* base);

  // Traffic accounting: the meter (shared by the communicators of one rank) that counts
  // bytes this rank sends. May be null (no accounting).
  void set_traffic_meter(TrafficMeter* meter) { meter_ = meter; }
  TrafficMeter* traffic_meter() const { return meter_; }

 protected:
  void count_send(int group_peer, size_t bytes);  // adds to the meter, if any

 private:
  TrafficMeter* meter_ = nullptr;
};

}  // namespace moebench
