#pragma once
// Internals of the MPI backend (core/src/dist only): error checking, type mapping,
// point-to-point messages cut into pieces of at most 1 GiB, and the collective algorithms
// bound to one MPI communicator (MpiCommunicator::Ops).
#include <mpi.h>

#include <cstddef>
#include <vector>

#include "moebench/dist/communicator.h"
#include "moebench/dist/mpi_communicator.h"

namespace moebench::detail {

[[noreturn]] void throw_mpi(const char* op, int rc);
inline void mpi_check(int rc, const char* op) {
  if (rc != MPI_SUCCESS) throw_mpi(op, rc);
}
MPI_Datatype mpi_type(DType t);
MPI_Op mpi_op(ReduceOp op);
void check_peer(const char* what, int peer, int size);

// Largest single MPI message (bytes); bigger transfers are several messages in order.
constexpr size_t kPieceBytes = size_t(1) << 30;

// The process's dynamic RMA window over MPI_COMM_WORLD (a dup), with MPI_Win_lock_all held:
// opened on demand by open_rma_window() (MpiCommunicator::enable_windows, collective over the
// world; a no-op once open; std::runtime_error naming the Open MPI settings to try when this MPI
// cannot create it), closed when the last live MpiRuntime ends (collective too).
// rma_window() is MPI_WIN_NULL when none is open.
void rma_runtime_started();
void rma_runtime_ended();
void open_rma_window();
MPI_Win rma_window();
// Attaches [base, base + bytes) to it unless an attached buffer holds that range already
// (reference-counted); returns the attachment to pass to rma_detach.
const void* rma_attach(void* base, size_t bytes);
void rma_detach(const void* attachment);

// Tags of the blocking collectives' own messages (above the user range, see comm_detail.h).
constexpr int kTagReduceScatter = 32701;
constexpr int kTagAllGather = 32702;
constexpr int kTagBroadcast = 32703;
constexpr int kTagReduce = 32704;

// A set of posted non-blocking point-to-point pieces. wait() completes them all and checks
// that every receive got exactly the expected element count.
class PendingMessages {
 public:
  PendingMessages() = default;
  PendingMessages(const PendingMessages&) = delete;
  PendingMessages& operator=(const PendingMessages&) = delete;
  ~PendingMessages();  // waits (errors ignored)
  // Posts count elements (at least one message, possibly empty).
  void send(const void* buf, size_t count, DType type, int peer, int tag, MPI_Comm comm);
  void recv(void* buf, size_t count, DType type, int peer, int tag, MPI_Comm comm);
  void wait(const char* op);
  bool test(const char* op);
  bool empty() const { return reqs_.empty(); }

 private:
  void check_statuses(std::vector<MPI_Status>& st, int rc, const char* op);
  void finish(std::vector<MPI_Status>& st, int rc, const char* op);
  std::vector<MPI_Request> reqs_;
  std::vector<long long> expect_;  // elements for a receive piece, -1 for a send piece
  std::vector<int> peers_;
  std::vector<MPI_Datatype> types_;
};

}  // namespace moebench::detail

namespace moebench {

// The algorithms of one MpiCommunicator on one of its MPI communicators (the blocking one or
// the async dup): same ranks, same traffic meter.
struct MpiCommunicator::Ops {
  MpiCommunicator* self;
  MPI_Comm comm;
  int rank, size;

  // Sends scount elements to dst while receiving rcount from src (either may be 0), counted.
  void exchange(const void* sbuf, size_t scount, int dst, void* rbuf, size_t rcount, int src,
                DType type, int tag, const char* op);
  void all_reduce(void* data, size_t count, DType type, ReduceOp op);
  void all_gather(const void* send, void* recv, size_t count, DType type);
  void reduce_scatter(const void* send, void* recv, size_t count, DType type, ReduceOp op);
  void all_to_all_v(const void* send, const size_t* send_counts, const size_t* send_displs,
                    void* recv, const size_t* recv_counts, const size_t* recv_displs, DType type);
  void broadcast(void* data, size_t count, DType type, int root);
  void reduce(void* data, size_t count, DType type, int root, ReduceOp op);
};

}  // namespace moebench
