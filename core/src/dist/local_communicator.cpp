// LocalCommunicator: one rank, no MPI. See local_communicator.h.
#include "moebench/dist/local_communicator.h"

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm_detail.h"

namespace moebench {

namespace {

void check_rank(const char* what, int r) {
  if (r != 0)
    throw std::out_of_range(std::string(what) + ": rank " + std::to_string(r) +
                            " does not exist in a local communicator (size 1)");
}

class DoneRequest final : public Request {
 public:
  void wait() override {}
  bool test() override { return true; }
};

RequestPtr done() { return std::make_unique<DoneRequest>(); }

}  // namespace

// Messages sent to self, by tag, and receives posted before their send arrived.
struct LocalCommunicator::Mailbox {
  struct PendingRecv {
    void* buf;
    size_t bytes;
    bool done = false;
    std::string error;  // set instead of done=true when the matching send did not fit
  };
  std::map<int, std::deque<std::vector<uint8_t>>> messages;
  std::map<int, std::deque<PendingRecv*>> pending;

  static void deliver(PendingRecv& r, const void* data, size_t bytes, int tag) {
    if (bytes != r.bytes) {
      r.error = "local recv (tag " + std::to_string(tag) + "): expected " + std::to_string(r.bytes) +
                " bytes, the matching send has " + std::to_string(bytes);
      return;
    }
    if (bytes) std::memcpy(r.buf, data, bytes);
    r.done = true;
  }

  void post_send(const void* buf, size_t bytes, int tag) {
    auto it = pending.find(tag);
    if (it != pending.end() && !it->second.empty()) {
      PendingRecv* r = it->second.front();
      it->second.pop_front();
      deliver(*r, buf, bytes, tag);
      return;
    }
    const auto* p = static_cast<const uint8_t*>(buf);
    messages[tag].emplace_back(p, p + bytes);
  }

  // Matches a queued message at once when there is one; otherwise queues the receive.
  void post_recv(PendingRecv& r, int tag) {
    auto it = messages.find(tag);
    if (it != messages.end() && !it->second.empty()) {
      std::vector<uint8_t> msg = std::move(it->second.front());
      it->second.pop_front();
      deliver(r, msg.data(), msg.size(), tag);
      return;
    }
    pending[tag].push_back(&r);
  }

  void cancel(PendingRecv* r) {
    for (auto& [tag, q] : pending)
      for (auto it = q.begin(); it != q.end(); ++it)
        if (*it == r) {
          q.erase(it);
          return;
        }
  }
};

namespace {

class LocalRecvRequest final : public Request {
 public:
  LocalRecvRequest(std::shared_ptr<LocalCommunicator::Mailbox> box, void* buf, size_t bytes, int tag)
      : box_(std::move(box)), tag_(tag) {
    r_.buf = buf;
    r_.bytes = bytes;
    box_->post_recv(r_, tag);
  }
  ~LocalRecvRequest() override {
    if (!r_.done && r_.error.empty()) box_->cancel(&r_);
  }
  void wait() override {
    if (!r_.error.empty()) throw std::runtime_error(r_.error);
    if (!r_.done)
      throw std::runtime_error("local recv (tag " + std::to_string(tag_) +
                               "): no matching send was posted; waiting would block forever");
  }
  bool test() override { return r_.done || !r_.error.empty(); }

 private:
  std::shared_ptr<LocalCommunicator::Mailbox> box_;
  LocalCommunicator::Mailbox::PendingRecv r_;
  int tag_;
};

class LocalWindow final : public Window {
 public:
  LocalWindow(void* base, size_t count, DType type)
      : base_(static_cast<uint8_t*>(base)), count_(count), type_(type) {
    if (!base && count) throw std::invalid_argument("create_window: null base with a non-zero count");
  }
  void get(void* dst, size_t count, int target, size_t off) override {
    size_t n = range("get", count, target, off);
    if (n) std::memcpy(dst, base_ + off, n);
  }
  void put(const void* src, size_t count, int target, size_t off) override {
    size_t n = range("put", count, target, off);
    if (n) std::memmove(base_ + off, src, n);
  }
  void accumulate(const void* src, size_t count, int target, size_t off, ReduceOp op) override {
    range("accumulate", count, target, off);
    detail::reduce_elements(base_ + off, base_ + off, src, count, type_, op);
  }
  void flush(int target) override { check_rank("Window::flush", target); }
  void flush_all() override {}
  void barrier() override {}
  DType dtype() const override { return type_; }
  size_t local_count() const override { return count_; }

 private:
  size_t range(const char* what, size_t count, int target, size_t off) const {
    check_rank(what, target);
    size_t bytes = count * dtype_size(type_);
    size_t total = count_ * dtype_size(type_);
    if (off > total || bytes > total - off)
      throw std::out_of_range(std::string("Window::") + what + ": bytes [" + std::to_string(off) +
                              ", " + std::to_string(off + bytes) + ") outside the window of " +
                              std::to_string(total) + " bytes");
    return bytes;
  }
  uint8_t* base_;
  size_t count_;
  DType type_;
};

class LocalSharedWindow final : public SharedWindow {
 public:
  explicit LocalSharedWindow(size_t bytes) : mem_(bytes ? bytes : 1, 0), bytes_(bytes) {}
  void* segment(int local_rank) override {
    check_rank("SharedWindow::segment", local_rank);
    return mem_.data();
  }
  size_t segment_bytes(int local_rank) const override {
    check_rank("SharedWindow::segment_bytes", local_rank);
    return bytes_;
  }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  void sync() override {}

 private:
  std::vector<uint8_t> mem_;
  size_t bytes_;
};

}  // namespace

LocalCommunicator::LocalCommunicator() : mailbox_(std::make_shared<Mailbox>()) {}
LocalCommunicator::~LocalCommunicator() = default;

int LocalCommunicator::world_rank(int group_rank) const {
  check_rank("world_rank", group_rank);
  return 0;
}

void LocalCommunicator::send(const void* buf, size_t count, DType type, int peer, int tag) {
  check_rank("send", peer);
  detail::check_user_tag("send", tag);
  mailbox_->post_send(buf, count * dtype_size(type), tag);
  count_send(peer, count * dtype_size(type));  // a self-send: never counted
}

void LocalCommunicator::recv(void* buf, size_t count, DType type, int peer, int tag) {
  irecv(buf, count, type, peer, tag)->wait();
}

RequestPtr LocalCommunicator::isend(const void* buf, size_t count, DType type, int peer, int tag) {
  send(buf, count, type, peer, tag);
  return done();
}

RequestPtr LocalCommunicator::irecv(void* buf, size_t count, DType type, int peer, int tag) {
  check_rank("recv", peer);
  detail::check_user_tag("recv", tag);
  return std::make_unique<LocalRecvRequest>(mailbox_, buf, count * dtype_size(type), tag);
}

void LocalCommunicator::all_reduce(void*, size_t, DType, ReduceOp) {}

void LocalCommunicator::all_gather(const void* send, void* recv, size_t count, DType type) {
  size_t n = count * dtype_size(type);
  if (n && send != recv) std::memmove(recv, send, n);
}

void LocalCommunicator::reduce_scatter(const void* send, void* recv, size_t count, DType type,
                                       ReduceOp) {
  all_gather(send, recv, count, type);
}

void LocalCommunicator::all_to_all_v(const void* send, const size_t* send_counts,
                                     const size_t* send_displs, void* recv,
                                     const size_t* recv_counts, const size_t* recv_displs,
                                     DType type) {
  if (send_counts[0] != recv_counts[0])
    throw std::invalid_argument("all_to_all_v: rank 0 sends " + std::to_string(send_counts[0]) +
                                " elements to itself but expects " + std::to_string(recv_counts[0]));
  size_t es = dtype_size(type);
  if (send_counts[0])
    std::memmove(static_cast<uint8_t*>(recv) + recv_displs[0] * es,
                 static_cast<const uint8_t*>(send) + send_displs[0] * es, send_counts[0] * es);
}

void LocalCommunicator::broadcast(void*, size_t, DType, int root) { check_rank("broadcast", root); }

void LocalCommunicator::reduce(void*, size_t, DType, int root, ReduceOp) { check_rank("reduce", root); }

RequestPtr LocalCommunicator::iall_reduce(void* data, size_t count, DType type, ReduceOp op) {
  all_reduce(data, count, type, op);
  return done();
}

RequestPtr LocalCommunicator::iall_gather(const void* send, void* recv, size_t count, DType type) {
  all_gather(send, recv, count, type);
  return done();
}

RequestPtr LocalCommunicator::iall_to_all_v(const void* send, const size_t* send_counts,
                                            const size_t* send_displs, void* recv,
                                            const size_t* recv_counts, const size_t* recv_displs,
                                            DType type) {
  all_to_all_v(send, send_counts, send_displs, recv, recv_counts, recv_displs, type);
  return done();
}

RequestPtr LocalCommunicator::ibroadcast(void* data, size_t count, DType type, int root) {
  broadcast(data, count, type, root);
  return done();
}

std::unique_ptr<Communicator> LocalCommunicator::split(int color, int) {
  if (color < 0) return nullptr;
  return dup();
}

std::unique_ptr<Communicator> LocalCommunicator::dup() {
  auto c = std::make_unique<LocalCommunicator>();
  c->set_traffic_meter(traffic_meter());
  return c;
}

std::unique_ptr<Window> LocalCommunicator::create_window(void* base, size_t count, DType type) {
  return std::make_unique<LocalWindow>(base, count, type);
}

std::unique_ptr<SharedWindow> LocalCommunicator::create_shared_window(size_t bytes) {
  return std::make_unique<LocalSharedWindow>(bytes);
}

}  // namespace moebench
