// MpiCommunicator windows: the process's dynamic RMA window (passive target, lock_all for its
// life), windows that attach caller memory to it, and node-shared windows (see
// mpi_communicator.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "moebench/dist/mpi_communicator.h"
#include "mpi_detail.h"

namespace moebench {

using detail::mpi_check;

namespace detail {
namespace {
struct RmaWindow {
  std::mutex mu;
  int users = 0;  // live MpiRuntimes
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Win win = MPI_WIN_NULL;
  struct Attached {
    size_t bytes;
    int windows;  // Window objects over a range inside it
  };
  std::map<const char*, Attached> attached;  // by base address
};
RmaWindow& rma() {
  static RmaWindow w;
  return w;
}

// What a failed MPI_Win_create_dynamic means, and what to try (docs/limits.md, "MPI one-sided
// windows"). Open MPI 4.1's osc/rdma needs a transport that reads other processes' memory:
// between processes of one machine that is vader's single-copy mechanism (CMA, XPMEM or KNEM),
// which containers and VMs often forbid, and a singleton (no mpirun) has none at all. osc/ucx
// serves the same windows over UCX, and osc/sm the node-shared ones (checked on Debian 12's Open
// MPI 4.1.4: `mpirun --mca btl_vader_single_copy_mechanism none` reproduces the failure, and
// `--mca osc sm,ucx` with UCX_TLS=self,tcp trains data_centric to the same losses; UCX 1.13's
// shared-memory transports failed there: POSIX crashed, SysV lost a remote key about one run in
// 30, `shmat ... Invalid argument`: tst_one_sided_windows).
std::string one_sided_unavailable(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string("MPI one-sided windows are not available (MPI_Win_create_dynamic failed: ") + text +
         "). Open MPI's osc/rdma component cannot serve them on this transport (no single-copy "
         "mechanism between local processes, or a process started without mpirun). Try Open MPI's UCX "
         "component: export OMPI_MCA_osc=sm,ucx (mpirun --mca osc sm,ucx), and where UCX's shared memory fails "
         "too, UCX_TLS=self,tcp; see docs/limits.md";
}
}  // namespace

void rma_runtime_started() {
  RmaWindow& w = rma();
  std::lock_guard lock(w.mu);
  ++w.users;
}

void rma_runtime_ended() {
  RmaWindow& w = rma();
  std::lock_guard lock(w.mu);
  if (w.users == 0 || --w.users > 0 || w.win == MPI_WIN_NULL) return;
  MPI_Win_unlock_all(w.win);
  MPI_Win_free(&w.win);
  MPI_Comm_free(&w.comm);
}

void open_rma_window() {
  RmaWindow& w = rma();
  std::lock_guard lock(w.mu);
  if (w.win != MPI_WIN_NULL) return;
  if (w.users == 0) throw std::logic_error("enable_windows: no MpiRuntime is alive (it owns the RMA window)");
  try {
    mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &w.comm), "MPI_Comm_dup");
    mpi_check(MPI_Comm_set_errhandler(w.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    const int rc = MPI_Win_create_dynamic(MPI_INFO_NULL, w.comm, &w.win);
    if (rc != MPI_SUCCESS) {
      w.win = MPI_WIN_NULL;
      throw std::runtime_error(one_sided_unavailable(rc));
    }
    mpi_check(MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
    mpi_check(MPI_Win_lock_all(MPI_MODE_NOCHECK, w.win), "MPI_Win_lock_all");
  } catch (...) {
    if (w.win != MPI_WIN_NULL) MPI_Win_free(&w.win);
    if (w.comm != MPI_COMM_NULL) MPI_Comm_free(&w.comm);
    throw;
  }
}

// MPI forbids attaching overlapping memory, and several windows may cover the same buffer (a
// strategy with one instance per activation set): a range inside an attached one reuses it.
const void* rma_attach(void* base, size_t bytes) {
  RmaWindow& w = rma();
  std::lock_guard lock(w.mu);
  const char* b = static_cast<const char*>(base);
  auto it = w.attached.upper_bound(b);
  if (it != w.attached.begin()) {
    auto prev = std::prev(it);
    if (b + bytes <= prev->first + prev->second.bytes) {
      ++prev->second.windows;
      return prev->first;
    }
  }
  int rc = MPI_Win_attach(w.win, base, (MPI_Aint)bytes);
  if (rc != MPI_SUCCESS)
    throw_mpi(("MPI_Win_attach of " + std::to_string(bytes) + " bytes (" + std::to_string(w.attached.size()) +
               " buffers attached; osc_rdma_max_attach, an MCA parameter, is the limit; overlapping buffers "
               "cannot be attached)")
                  .c_str(),
              rc);
  w.attached[b] = {bytes, 1};
  return b;
}

void rma_detach(const void* attachment) {
  RmaWindow& w = rma();
  std::lock_guard lock(w.mu);
  auto it = w.attached.find(static_cast<const char*>(attachment));
  if (it == w.attached.end() || --it->second.windows > 0) return;
  MPI_Win_detach(w.win, const_cast<char*>(it->first));
  w.attached.erase(it);
}

MPI_Win rma_window() {
  RmaWindow& w = rma();
  std::lock_guard lock(w.mu);
  return w.win;
}
}  // namespace detail

namespace {
// A window's destructor frees collectively (a barrier, MPI_Win_free). While an exception unwinds
// the rank's stack the other ranks are elsewhere (in a step's all-reduce), so that collective
// would hang the job before the error is reported and the job aborted (cli/cmd_run.cpp): then
// the window is left to the abort.
bool unwinding_or_finalized() {
  if (std::uncaught_exceptions() > 0) return true;
  int fin = 0;
  MPI_Finalized(&fin);
  return fin != 0;
}
}  // namespace

class MpiCommunicator::MpiWin final : public Window {
 public:
  MpiWin(MpiCommunicator* owner, void* base, size_t count, DType type)
      : owner_(owner), type_(type), count_(count), win_(detail::rma_window()) {
    if (!base && count) throw std::invalid_argument("create_window: null base with a non-zero count");
    if (win_ == MPI_WIN_NULL)
      throw std::logic_error("create_window: one-sided windows are not enabled (enable_windows() on the world, first)");
    for (int r = 0; r < owner->size_; ++r) targets_.push_back(owner->world_rank(r));
    mpi_check(MPI_Comm_dup(owner->comm_, &comm_), "MPI_Comm_dup");
    try {
      mpi_check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
      const uint64_t mine = (uint64_t)count * dtype_size(type);
      if (mine) attached_ = detail::rma_attach(base, mine);
      MPI_Aint address = 0;
      mpi_check(MPI_Get_address(base ? base : &address, &address), "MPI_Get_address");
      uint64_t row[2] = {mine, (uint64_t)address};
      std::vector<uint64_t> all(2 * (size_t)owner->size_);
      mpi_check(MPI_Allgather(row, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm_), "MPI_Allgather");
      window_bytes_.resize(owner->size_);
      addresses_.resize(owner->size_);
      for (int r = 0; r < owner->size_; ++r) {
        window_bytes_[r] = all[2 * (size_t)r];
        addresses_[r] = (MPI_Aint)all[2 * (size_t)r + 1];
      }
    } catch (...) {
      if (attached_) detail::rma_detach(attached_);
      MPI_Comm_free(&comm_);
      throw;
    }
  }

  ~MpiWin() override {
    if (unwinding_or_finalized()) return;
    MPI_Win_flush_all(win_);
    MPI_Barrier(comm_);  // nobody still reads or writes this rank's memory
    if (attached_) detail::rma_detach(attached_);
    MPI_Comm_free(&comm_);
  }

  void get(void* dst, size_t count, int target, size_t off) override {
    check("get", count, target, off);
    for_pieces(count, [&](size_t done, int n) {
      mpi_check(MPI_Get(static_cast<char*>(dst) + done * es(), n, t(), targets_[target],
                        disp(target, off + done * es()), n, t(), win_),
                "MPI_Get");
    });
    owner_->count_send(target, count * es());  // pull traffic: target -> us, on our meter
  }

  void put(const void* src, size_t count, int target, size_t off) override {
    check("put", count, target, off);
    for_pieces(count, [&](size_t done, int n) {
      mpi_check(MPI_Put(static_cast<const char*>(src) + done * es(), n, t(), targets_[target],
                        disp(target, off + done * es()), n, t(), win_),
                "MPI_Put");
    });
    owner_->count_send(target, count * es());
  }

  void accumulate(const void* src, size_t count, int target, size_t off, ReduceOp op) override {
    check("accumulate", count, target, off);
    for_pieces(count, [&](size_t done, int n) {
      mpi_check(MPI_Accumulate(static_cast<const char*>(src) + done * es(), n, t(), targets_[target],
                               disp(target, off + done * es()), n, t(), detail::mpi_op(op), win_),
                "MPI_Accumulate");
    });
    owner_->count_send(target, count * es());
  }

  void flush(int target) override {
    detail::check_peer("Window::flush", target, (int)window_bytes_.size());
    mpi_check(MPI_Win_flush(targets_[target], win_), "MPI_Win_flush");
  }
  void flush_all() override { mpi_check(MPI_Win_flush_all(win_), "MPI_Win_flush_all"); }
  void barrier() override {
    mpi_check(MPI_Win_flush_all(win_), "MPI_Win_flush_all");
    mpi_check(MPI_Win_sync(win_), "MPI_Win_sync");
    mpi_check(MPI_Barrier(comm_), "MPI_Barrier");
    mpi_check(MPI_Win_sync(win_), "MPI_Win_sync");
  }
  DType dtype() const override { return type_; }
  size_t local_count() const override { return count_; }

 private:
  size_t es() const { return dtype_size(type_); }
  MPI_Datatype t() const { return detail::mpi_type(type_); }
  // A dynamic window's displacements are absolute addresses in the target.
  MPI_Aint disp(int target, size_t off) const { return MPI_Aint_add(addresses_[target], (MPI_Aint)off); }

  void check(const char* what, size_t count, int target, size_t off) const {
    detail::check_peer(what, target, (int)window_bytes_.size());
    uint64_t total = window_bytes_[target], bytes = (uint64_t)count * es();
    if (off > total || bytes > total - off)
      throw std::out_of_range(std::string("Window::") + what + ": bytes [" + std::to_string(off) +
                              ", " + std::to_string(off + bytes) + ") outside rank " +
                              std::to_string(target) + "'s window of " + std::to_string(total) +
                              " bytes");
  }

  template <class F>
  void for_pieces(size_t count, F&& f) const {
    const size_t step = detail::kPieceBytes / es();
    for (size_t done = 0; done < count; done += step) f(done, (int)std::min(step, count - done));
  }

  MpiCommunicator* owner_;
  DType type_;
  size_t count_;
  MPI_Win win_;               // the process's dynamic window (MPI_COMM_WORLD ranks)
  std::vector<int> targets_;  // group rank -> world rank
  MPI_Comm comm_ = MPI_COMM_NULL;  // this group, for the address exchange and barriers
  const void* attached_ = nullptr;  // the attachment that holds our memory
  std::vector<uint64_t> window_bytes_;  // every rank's window size
  std::vector<MPI_Aint> addresses_;     // every rank's window base
};

class MpiCommunicator::MpiSharedWin final : public SharedWindow {
 public:
  MpiSharedWin(MpiCommunicator* owner, size_t bytes) {
    mpi_check(MPI_Comm_split_type(owner->comm_, MPI_COMM_TYPE_SHARED, owner->rank_, MPI_INFO_NULL, &node_),
              "MPI_Comm_split_type");
    try {
      mpi_check(MPI_Comm_set_errhandler(node_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
      mpi_check(MPI_Comm_rank(node_, &local_rank_), "MPI_Comm_rank");
      mpi_check(MPI_Comm_size(node_, &local_size_), "MPI_Comm_size");
      void* base = nullptr;
      mpi_check(MPI_Win_allocate_shared((MPI_Aint)bytes, 1, MPI_INFO_NULL, node_, &base, &win_),
                "MPI_Win_allocate_shared");
      mpi_check(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
      segs_.resize(local_size_);
      sizes_.resize(local_size_);
      for (int r = 0; r < local_size_; ++r) {
        MPI_Aint size = 0;
        int disp = 1;
        void* p = nullptr;
        mpi_check(MPI_Win_shared_query(win_, r, &size, &disp, &p), "MPI_Win_shared_query");
        segs_[r] = p;
        sizes_[r] = (size_t)size;
      }
      mpi_check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
      if (bytes) std::memset(segs_[local_rank_], 0, bytes);
      sync();
    } catch (...) {
      if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
      MPI_Comm_free(&node_);
      throw;
    }
  }

  ~MpiSharedWin() override {
    if (unwinding_or_finalized()) return;
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
    MPI_Comm_free(&node_);
  }

  void* segment(int local_rank) override {
    detail::check_peer("SharedWindow::segment", local_rank, local_size_);
    return segs_[local_rank];
  }
  size_t segment_bytes(int local_rank) const override {
    detail::check_peer("SharedWindow::segment_bytes", local_rank, local_size_);
    return sizes_[local_rank];
  }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  void sync() override {
    mpi_check(MPI_Win_sync(win_), "MPI_Win_sync");
    mpi_check(MPI_Barrier(node_), "MPI_Barrier");
    mpi_check(MPI_Win_sync(win_), "MPI_Win_sync");
  }

 private:
  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  int local_rank_ = 0, local_size_ = 1;
  std::vector<void*> segs_;
  std::vector<size_t> sizes_;
};

void MpiCommunicator::enable_windows() {
  if (size_ != MpiRuntime::world_size())
    throw std::logic_error("enable_windows is collective over MPI_COMM_WORLD: call it on the world communicator");
  detail::open_rma_window();
}

std::unique_ptr<Window> MpiCommunicator::create_window(void* base, size_t count, DType type) {
  return std::make_unique<MpiWin>(this, base, count, type);
}

std::unique_ptr<SharedWindow> MpiCommunicator::create_shared_window(size_t bytes) {
  return std::make_unique<MpiSharedWin>(this, bytes);
}

}  // namespace moebench
