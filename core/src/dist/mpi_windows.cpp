// MpiCommunicator windows: one-sided RMA windows over caller memory (passive target, lock_all
// for the window's life) and node-shared windows (see mpi_communicator.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "moebench/dist/mpi_communicator.h"
#include "mpi_detail.h"

namespace moebench {

using detail::mpi_check;

class MpiCommunicator::MpiWin final : public Window {
 public:
  MpiWin(MpiCommunicator* owner, void* base, size_t count, DType type)
      : owner_(owner), type_(type), count_(count) {
    if (!base && count) throw std::invalid_argument("create_window: null base with a non-zero count");
    mpi_check(MPI_Comm_dup(owner->comm_, &comm_), "MPI_Comm_dup");
    try {
      mpi_check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
      uint64_t mine = (uint64_t)count * dtype_size(type);
      window_bytes_.resize(owner->size_);
      mpi_check(MPI_Allgather(&mine, 1, MPI_UINT64_T, window_bytes_.data(), 1, MPI_UINT64_T, comm_),
                "MPI_Allgather");
      mpi_check(MPI_Win_create(base, (MPI_Aint)mine, 1, MPI_INFO_NULL, comm_, &win_), "MPI_Win_create");
      mpi_check(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
      mpi_check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
    } catch (...) {
      if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
      MPI_Comm_free(&comm_);
      throw;
    }
  }

  ~MpiWin() override {
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) return;
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
    MPI_Comm_free(&comm_);
  }

  void get(void* dst, size_t count, int target, size_t off) override {
    check("get", count, target, off);
    for_pieces(count, [&](size_t done, int n) {
      mpi_check(MPI_Get(static_cast<char*>(dst) + done * es(), n, t(), target,
                        (MPI_Aint)(off + done * es()), n, t(), win_),
                "MPI_Get");
    });
    owner_->count_send(target, count * es());  // pull traffic: target -> us, on our meter
  }

  void put(const void* src, size_t count, int target, size_t off) override {
    check("put", count, target, off);
    for_pieces(count, [&](size_t done, int n) {
      mpi_check(MPI_Put(static_cast<const char*>(src) + done * es(), n, t(), target,
                        (MPI_Aint)(off + done * es()), n, t(), win_),
                "MPI_Put");
    });
    owner_->count_send(target, count * es());
  }

  void accumulate(const void* src, size_t count, int target, size_t off, ReduceOp op) override {
    check("accumulate", count, target, off);
    for_pieces(count, [&](size_t done, int n) {
      mpi_check(MPI_Accumulate(static_cast<const char*>(src) + done * es(), n, t(), target,
                               (MPI_Aint)(off + done * es()), n, t(), detail::mpi_op(op), win_),
                "MPI_Accumulate");
    });
    owner_->count_send(target, count * es());
  }

  void flush(int target) override {
    detail::check_peer("Window::flush", target, (int)window_bytes_.size());
    mpi_check(MPI_Win_flush(target, win_), "MPI_Win_flush");
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
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<uint64_t> window_bytes_;  // every rank's window size
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
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) return;
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

std::unique_ptr<Window> MpiCommunicator::create_window(void* base, size_t count, DType type) {
  return std::make_unique<MpiWin>(this, base, count, type);
}

std::unique_ptr<SharedWindow> MpiCommunicator::create_shared_window(size_t bytes) {
  return std::make_unique<MpiSharedWin>(this, bytes);
}

}  // namespace moebench
