#pragma once
// MpiRuntime and MpiCommunicator: the OpenMPI backend (MPI_THREAD_MULTIPLE).
//
// MpiRuntime (RAII) initialises MPI when nobody has yet and finalises it when it did; every
// MpiCommunicator / window must be destroyed before it. Its destructor is collective over
// MPI_COMM_WORLD when the process's RMA window is open (it frees it, see Windows).
//
// MpiCommunicator wraps one MPI communicator with MPI_ERRORS_RETURN: every MPI failure becomes
// a std::runtime_error "<MPI call> failed: <MPI_Error_string>". Construction, split(), dup(),
// create_window(), create_shared_window() and the window destructors are collective.
//
// Exact traffic accounting (every byte this rank sends is passed to count_send, per peer):
//   all_reduce      ring reduce-scatter then ring all-gather over point-to-point messages. The
//                   buffer is cut into size() segments (the first count % size() segments one
//                   element longer); each rank sends only to its right neighbour (rank+1) and,
//                   for count divisible by P, exactly 2 (P-1)/P * count * dtype bytes. Every
//                   segment is reduced once, along a fixed chain, then copied, so all ranks end
//                   with bitwise-identical results (dense gradient replicas stay identical).
//   reduce_scatter  the ring reduce-scatter phase ((P-1) * count elements to rank+1).
//   all_gather      the ring all-gather phase ((P-1) * count elements to rank+1).
//   broadcast       binomial tree over point-to-point (count elements to each child).
//   reduce          the same tree reversed: every rank but the root sends count elements to its
//                   parent once it has reduced its children's (in ascending tree order).
//   all_to_all_v    MPI_Alltoallv: send_counts[p] elements to each peer p != rank.
//   send / isend    count elements to peer.
//   windows         put / accumulate: the bytes go to the target. get: the target sends the
//                   bytes to us; there is no "received" counter, so gets are counted on the
//                   ORIGIN's meter with peer = target (pull traffic, what Janus' pull
//                   accounting needs). Window traffic uses the meter the communicator has
//                   at the time of each call. Shared-window accesses are plain loads and
//                   stores: not counted.
//   not counted     control traffic: barrier, split/dup, window creation metadata, MPI
//                   internals. Self-sends are never counted.
// Messages larger than 1 GiB are sent as several messages of at most 1 GiB (same bytes).
//
// Point-to-point tags must be in [0, 32700): higher tags carry the ring / tree messages of the
// blocking collectives, which use this communicator's own MPI communicator.
// recv / irecv must name exactly the element count of the matching send (runtime_error else).
//
// Non-blocking collectives run the blocking algorithm on a second MPI communicator (a dup made
// at construction) in one worker thread owned by this object, in the order they were called
// (the same order on every rank, as MPI requires); they proceed while the caller computes and
// may overlap with blocking operations on this communicator. Their buffers (and, for
// iall_to_all_v, nothing else: the count arrays are copied) must stay valid until wait().
// isend / irecv are MPI_Isend / MPI_Irecv.
//
// split(color, key): MPI_Comm_split; color < 0 (MPI_UNDEFINED) returns nullptr.
// Sub-communicators and dups inherit the traffic meter pointer.
//
// Windows: one dynamic RMA window over MPI_COMM_WORLD per process (MPI_Win_create_dynamic, made
// by the world communicator's enable_windows() -- only a process that uses windows opens one, so
// a run whose MPI cannot serve one-sided windows still runs every strategy that does not pull --
// and freed by the last MpiRuntime's destructor; passive target with
// MPI_Win_lock_all(MPI_MODE_NOCHECK) in between). create_window() attaches the caller's memory
// to it (MPI_Win_attach) and gathers every member's address and size over a dup of this
// communicator (so a window may be used from another thread than the communicator); targets
// are translated to world ranks. One window for all groups, rather than one MPI_Win_create per
// group, because OpenMPI 4.1's osc/rdma names a window's shared-memory segment after its
// communicator's context id, which the groups of one MPI_Comm_split share: their windows would
// collide (open-mpi/ompi#9492). A rank may have at most osc_rdma_max_attach buffers attached
// (an MCA parameter, 64 by default; the attach fails naming it otherwise). Offsets are in
// BYTES, counts in elements of the window's dtype; bounds are checked against every rank's
// window size. get / put / accumulate return at once (MPI semantics): dst holds the data, and
// src may be reused, only after flush(target), flush_all() or barrier() (flushes cover every
// window of the process: correct, if sometimes longer). barrier(): flush_all + MPI_Win_sync +
// MPI_Barrier (this group) + MPI_Win_sync. The destructor flushes and barriers over the group
// before detaching. A window needs enable_windows() first (create_window throws std::logic_error
// without it).
// Shared windows: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) + MPI_Win_allocate_shared; every
// segment starts zeroed; sync() = MPI_Win_sync + barrier on the node communicator + MPI_Win_sync.
#include <mpi.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "moebench/dist/communicator.h"

namespace moebench {

class MpiRuntime {
 public:
  // Initialises MPI with MPI_Init_thread(MPI_THREAD_MULTIPLE) unless already initialised.
  // Throws std::runtime_error "OpenMPI was built without MPI_THREAD_MULTIPLE ..." when the
  // provided thread level (fresh or pre-existing) is lower.
  MpiRuntime(int* argc, char*** argv);
  MpiRuntime() : MpiRuntime(nullptr, nullptr) {}
  ~MpiRuntime();  // frees the RMA window if open; MPI_Finalize when this object initialised MPI
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  bool initialised_here() const { return owns_; }
  static int world_rank();  // rank / size in MPI_COMM_WORLD
  static int world_size();
  // True when this process was started by an MPI launcher (mpirun / mpiexec / srun / hydra):
  // OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK, PMI_SIZE or MV2_COMM_WORLD_RANK is set, or
  // SLURM_PROCID inside an srun step (SLURM_STEP_ID set; a bare sbatch script is not a launch).
  static bool under_mpi_launcher();
  static std::string hostname();
  // MPI_Abort(MPI_COMM_WORLD, code) (brings every rank down); plain exit when MPI is not running.
  [[noreturn]] static void abort_job(int code);

 private:
  bool owns_ = false;
};

class MpiCommunicator : public Communicator {
 public:
  // A dup of MPI_COMM_WORLD (collective over the world). MPI must be initialised.
  static std::unique_ptr<MpiCommunicator> world();
  // Wraps comm (collective over comm: dups the async communicator). When `owned`, comm is
  // freed by the destructor.
  MpiCommunicator(MPI_Comm comm, bool owned);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  MPI_Comm comm() const { return comm_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int world_rank(int group_rank) const override;
  std::string backend() const override { return "mpi"; }

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

  void enable_windows() override;
  std::unique_ptr<Window> create_window(void* base, size_t count, DType type) override;
  std::unique_ptr<SharedWindow> create_shared_window(size_t bytes) override;

 private:
  struct Ops;          // the algorithms, bound to one MPI communicator (mpi_detail.h)
  struct AsyncWorker;  // the thread that runs non-blocking collectives
  class MpiWin;
  class MpiSharedWin;
  RequestPtr submit_async(const char* what, std::function<void(Ops&)> job);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm async_comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  int rank_ = 0, size_ = 1;
  std::vector<int> world_ranks_;  // group rank -> MPI_COMM_WORLD rank
  std::unique_ptr<AsyncWorker> worker_;
};

}  // namespace moebench
