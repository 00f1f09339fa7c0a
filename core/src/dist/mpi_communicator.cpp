// MpiCommunicator: construction, point-to-point, sub-communicators and the worker thread that
// runs the non-blocking collectives (see mpi_communicator.h).
#include "moebench/dist/mpi_communicator.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "comm_detail.h"
#include "mpi_detail.h"

namespace moebench {

namespace {

// isend / irecv: the posted pieces of one message.
class MpiRequest final : public Request {
 public:
  explicit MpiRequest(const char* what) : what_(what) {}
  detail::PendingMessages& msgs() { return msgs_; }
  void wait() override { msgs_.wait(what_); }
  bool test() override { return msgs_.test(what_); }

 private:
  const char* what_;
  detail::PendingMessages msgs_;  // its destructor waits
};

struct AsyncState {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
};

class AsyncRequest final : public Request {
 public:
  explicit AsyncRequest(std::shared_ptr<AsyncState> st) : st_(std::move(st)) {}
  ~AsyncRequest() override {
    std::unique_lock lock(st_->mu);
    st_->cv.wait(lock, [&] { return st_->done; });
  }
  void wait() override {
    std::unique_lock lock(st_->mu);
    st_->cv.wait(lock, [&] { return st_->done; });
    if (st_->error) {
      auto e = st_->error;
      st_->error = nullptr;  // reported once
      std::rethrow_exception(e);
    }
  }
  bool test() override {
    std::lock_guard lock(st_->mu);
    return st_->done;
  }

 private:
  std::shared_ptr<AsyncState> st_;
};

}  // namespace

// One thread, started on first use, running jobs in submission order.
struct MpiCommunicator::AsyncWorker {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs;
  bool stop = false;
  std::thread thread;

  void push(std::function<void()> job) {
    std::lock_guard lock(mu);
    jobs.push_back(std::move(job));
    if (!thread.joinable()) thread = std::thread([this] { run(); });
    cv.notify_one();
  }
  void run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stop || !jobs.empty(); });
        if (jobs.empty()) return;  // stop requested and everything submitted has run
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      job();
    }
  }
  ~AsyncWorker() {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
  }
};

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin)
    throw std::runtime_error("MpiCommunicator::world: MPI is not running (create an MpiRuntime first)");
  MPI_Comm c = MPI_COMM_NULL;
  detail::mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &c), "MPI_Comm_dup");
  return std::make_unique<MpiCommunicator>(c, true);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  if (comm == MPI_COMM_NULL) throw std::invalid_argument("MpiCommunicator: MPI_COMM_NULL");
  try {
    detail::mpi_check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    detail::mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    detail::mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    MPI_Group mine, world;
    detail::mpi_check(MPI_Comm_group(comm_, &mine), "MPI_Comm_group");
    detail::mpi_check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
    std::vector<int> ranks(size_);
    for (int i = 0; i < size_; ++i) ranks[i] = i;
    world_ranks_.assign(size_, MPI_UNDEFINED);
    int rc = MPI_Group_translate_ranks(mine, size_, ranks.data(), world, world_ranks_.data());
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    detail::mpi_check(rc, "MPI_Group_translate_ranks");
    detail::mpi_check(MPI_Comm_dup(comm_, &async_comm_), "MPI_Comm_dup");
    detail::mpi_check(MPI_Comm_set_errhandler(async_comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    worker_ = std::make_unique<AsyncWorker>();
  } catch (...) {
    if (async_comm_ != MPI_COMM_NULL) MPI_Comm_free(&async_comm_);
    if (owned_) MPI_Comm_free(&comm_);
    throw;
  }
}

MpiCommunicator::~MpiCommunicator() {
  worker_.reset();  // runs every submitted non-blocking collective to its end
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) return;
  if (async_comm_ != MPI_COMM_NULL) MPI_Comm_free(&async_comm_);
  if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

int MpiCommunicator::world_rank(int group_rank) const {
  detail::check_peer("world_rank", group_rank, size_);
  return world_ranks_[group_rank];
}

// ---- point to point ----

void MpiCommunicator::send(const void* buf, size_t count, DType type, int peer, int tag) {
  isend(buf, count, type, peer, tag)->wait();
}

void MpiCommunicator::recv(void* buf, size_t count, DType type, int peer, int tag) {
  irecv(buf, count, type, peer, tag)->wait();
}

RequestPtr MpiCommunicator::isend(const void* buf, size_t count, DType type, int peer, int tag) {
  detail::check_peer("send", peer, size_);
  detail::check_user_tag("send", tag);
  auto r = std::make_unique<MpiRequest>("send (MPI_Isend)");
  r->msgs().send(buf, count, type, peer, tag, comm_);
  count_send(peer, count * dtype_size(type));
  return r;
}

RequestPtr MpiCommunicator::irecv(void* buf, size_t count, DType type, int peer, int tag) {
  detail::check_peer("recv", peer, size_);
  detail::check_user_tag("recv", tag);
  auto r = std::make_unique<MpiRequest>("recv (MPI_Irecv)");
  r->msgs().recv(buf, count, type, peer, tag, comm_);
  return r;
}

// ---- non-blocking collectives ----

RequestPtr MpiCommunicator::submit_async(const char* what, std::function<void(Ops&)> job) {
  auto st = std::make_shared<AsyncState>();
  worker_->push([this, st, job = std::move(job), what] {
    try {
      Ops ops{this, async_comm_, rank_, size_};
      job(ops);
    } catch (const std::exception& e) {
      st->error = std::make_exception_ptr(std::runtime_error(std::string(what) + ": " + e.what()));
    } catch (...) {
      st->error = std::current_exception();
    }
    {
      std::lock_guard lock(st->mu);
      st->done = true;
    }
    st->cv.notify_all();
  });
  return std::make_unique<AsyncRequest>(std::move(st));
}

RequestPtr MpiCommunicator::iall_reduce(void* data, size_t count, DType type, ReduceOp op) {
  return submit_async("iall_reduce",
                      [=](Ops& o) { o.all_reduce(data, count, type, op); });
}

RequestPtr MpiCommunicator::iall_gather(const void* send, void* recv, size_t count, DType type) {
  return submit_async("iall_gather", [=](Ops& o) { o.all_gather(send, recv, count, type); });
}

RequestPtr MpiCommunicator::iall_to_all_v(const void* send, const size_t* send_counts,
                                          const size_t* send_displs, void* recv,
                                          const size_t* recv_counts, const size_t* recv_displs,
                                          DType type) {
  auto n = (size_t)size_;
  std::vector<size_t> sc(send_counts, send_counts + n), sd(send_displs, send_displs + n),
      rc(recv_counts, recv_counts + n), rd(recv_displs, recv_displs + n);
  return submit_async("iall_to_all_v", [=, sc = std::move(sc), sd = std::move(sd),
                                        rc = std::move(rc), rd = std::move(rd)](Ops& o) {
    o.all_to_all_v(send, sc.data(), sd.data(), recv, rc.data(), rd.data(), type);
  });
}

RequestPtr MpiCommunicator::ibroadcast(void* data, size_t count, DType type, int root) {
  detail::check_peer("ibroadcast root", root, size_);
  return submit_async("ibroadcast", [=](Ops& o) { o.broadcast(data, count, type, root); });
}

// ---- sub-communicators ----

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  MPI_Comm c = MPI_COMM_NULL;
  detail::mpi_check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &c), "MPI_Comm_split");
  if (c == MPI_COMM_NULL) return nullptr;
  auto sub = std::make_unique<MpiCommunicator>(c, true);
  sub->set_traffic_meter(traffic_meter());
  return sub;
}

std::unique_ptr<Communicator> MpiCommunicator::dup() {
  MPI_Comm c = MPI_COMM_NULL;
  detail::mpi_check(MPI_Comm_dup(comm_, &c), "MPI_Comm_dup");
  auto d = std::make_unique<MpiCommunicator>(c, true);
  d->set_traffic_meter(traffic_meter());
  return d;
}

}  // namespace moebench
