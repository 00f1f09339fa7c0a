// Served windows (dist/served_window.h): request/response over a host communicator for the ranks
// the data communicator's windows do not reach.
#include "moebench/dist/served_window.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "moebench/dist/traffic_meter.h"

namespace moebench {
namespace {

class HostStaging final : public WindowStaging {
 public:
  HostStaging(Window& inner, void* base, int me) : inner_(inner), base_(static_cast<char*>(base)), me_(me) {}
  void* alloc_host(size_t bytes) override { return ::operator new(std::max<size_t>(bytes, 1)); }
  void free_host(void* p) noexcept override { ::operator delete(p); }
  void to_host(void* host, const void* src, size_t bytes) override { std::memcpy(host, src, bytes); }
  void from_host(void* dst, const void* host, size_t bytes) override { std::memcpy(dst, host, bytes); }
  void read(void* host, size_t off, size_t bytes) override { std::memcpy(host, base_ + off, bytes); }
  void write(size_t off, const void* host, size_t bytes) override { std::memcpy(base_ + off, host, bytes); }
  void add(size_t off, const float* host, size_t count) override {
    inner_.accumulate(host, count, me_, off, ReduceOp::sum);
    inner_.flush(me_);
  }

 private:
  Window& inner_;
  char* base_;
  int me_;
};

enum Op : int32_t { kGet = 1, kPut = 2, kAccumulate = 3, kClose = 4 };
// Tags of the window's own host communicator.
enum Tag : int { kRequest = 1, kData = 2, kPayload = 3, kAck = 4 };

struct Header {
  int32_t op = 0;
  int32_t pad = 0;
  int64_t epoch = 0;   // barriers the requester had returned from
  uint64_t offset = 0; // bytes
  uint64_t bytes = 0;
};

// Polling with a growing pause: the server and the waits never spin a core.
class Backoff {
 public:
  void reset() { us_ = 5; }
  void pause() {
    std::this_thread::sleep_for(std::chrono::microseconds(us_));
    us_ = std::min(us_ * 2, 1000);
  }

 private:
  int us_ = 5;
};

class ServedWindow final : public Window {
 public:
  ServedWindow(Communicator& data, Communicator& host, std::vector<int> reach, void* base, size_t count, DType type)
      : type_(type), count_(count), me_(data.rank()), reach_(std::move(reach)), data_(data) {
    if (host.size() != data.size() || host.rank() != data.rank())
      throw std::logic_error("served window: the host communicator does not hold the data communicator's ranks");
    inner_ = data.create_window(base, count, type);
    staging_ = data.window_staging(*inner_, base);
    host_ = host.dup();
    host_->set_traffic_meter(nullptr);  // counted on the data communicator's meter (header)
    const int P = data.size();
    const int64_t mine = (int64_t)(count * dtype_size(type));
    bytes_.assign((size_t)P, 0);
    host_->all_gather(&mine, bytes_.data(), 1, DType::i64);
    served_.assign((size_t)P, 0);
    for (int r = 0; r < P; ++r) served_[(size_t)r] = reach_[(size_t)r] != reach_[(size_t)me_];
    if (std::count(served_.begin(), served_.end(), 1) > 0) server_ = std::thread([this] { serve(); });
  }

  ~ServedWindow() override {
    bool collective = std::uncaught_exceptions() == 0;
    if (collective) {
      try {
        flush_served();
        Header close;
        close.op = kClose;
        for (int r = 0; r < (int)served_.size(); ++r)
          if (served_[(size_t)r]) {
            RequestPtr s = post([&] { return host_->isend(&close, sizeof close, DType::u8, r, kRequest); });
            wait(s);
          }
      } catch (...) {
        collective = false;
      }
    }
    if (!collective) abort_ = true;
    if (server_.joinable()) server_.join();
    if (!collective) {  // the rank is ending: no wait on a peer that may be gone, and the
      for (Pending& p : pending_) release(p);  // messages' memory stays where MPI may still write
      (void)new std::list<Pending>(std::move(pending_));
    }
  }

  void get(void* dst, size_t count, int target, size_t off) override {
    if (!is_served(target)) return inner_->get(dst, count, target, off);
    Pending& p = issue(kGet, count, target, off, "get");
    p.dst = dst;
    p.reply = post([&] { return host_->irecv(p.staging, p.header.bytes, DType::u8, target, kData); });
    p.request = post([&] { return host_->isend(&p.header, sizeof p.header, DType::u8, target, kRequest); });
    count_bytes(target, p.header.bytes);
  }
  void put(const void* src, size_t count, int target, size_t off) override {
    if (!is_served(target)) return inner_->put(src, count, target, off);
    send_data(kPut, src, count, target, off, "put");
  }
  void accumulate(const void* src, size_t count, int target, size_t off, ReduceOp op) override {
    if (!is_served(target)) return inner_->accumulate(src, count, target, off, op);
    if (type_ != DType::f32 || op != ReduceOp::sum)
      throw std::invalid_argument("window accumulate to a rank on another machine: float sums only");
    send_data(kAccumulate, src, count, target, off, "accumulate");
  }
  void flush(int target) override {
    if (!is_served(target)) return inner_->flush(target);
    complete([target](const Pending& p) { return p.target == target; });
  }
  void flush_all() override {
    flush_served();
    inner_->flush_all();
  }
  void barrier() override {
    flush_served();
    inner_->barrier();
    epoch_.fetch_add(1);
  }
  DType dtype() const override { return type_; }
  size_t local_count() const override { return count_; }

 private:
  struct Pending {  // one operation on a served rank, in issue order
    int32_t op = 0;
    int target = 0;
    void* dst = nullptr;      // get: where the data goes
    void* staging = nullptr;  // host staging of the data
    Header header;
    int32_t ack = 0;
    RequestPtr request, payload, reply;  // the header, the data (put, accumulate), the data or the ack
  };

  bool is_served(int target) const {
    if (target < 0 || target >= (int)served_.size())
      throw std::out_of_range("window: no rank " + std::to_string(target));
    return served_[(size_t)target];
  }
  Pending& issue(int32_t op, size_t count, int target, size_t off, const char* what) {
    const size_t bytes = count * dtype_size(type_);
    const size_t total = (size_t)bytes_[(size_t)target];
    if (off > total || bytes > total - off)
      throw std::out_of_range(std::string("Window::") + what + ": bytes [" + std::to_string(off) + ", " +
                              std::to_string(off + bytes) + ") outside rank " + std::to_string(target) +
                              "'s window of " + std::to_string(total) + " bytes");
    Pending& p = pending_.emplace_back();
    p.op = op;
    p.target = target;
    p.header.op = op;
    p.header.epoch = epoch_.load();
    p.header.offset = off;
    p.header.bytes = bytes;
    p.staging = staging_->alloc_host(bytes);
    return p;
  }
  void send_data(int32_t op, const void* src, size_t count, int target, size_t off, const char* what) {
    Pending& p = issue(op, count, target, off, what);
    staging_->to_host(p.staging, src, p.header.bytes);
    p.reply = post([&] { return host_->irecv(&p.ack, 1, DType::i32, target, kAck); });
    p.request = post([&] { return host_->isend(&p.header, sizeof p.header, DType::u8, target, kRequest); });
    p.payload = post([&] { return host_->isend(p.staging, p.header.bytes, DType::u8, target, kPayload); });
    count_bytes(target, p.header.bytes);
  }
  void count_bytes(int target, size_t bytes) {
    if (TrafficMeter* m = data_.traffic_meter()) m->add(data_.world_rank(target), bytes);
  }
  // Completes the pending operations `which` selects, in issue order.
  template <class Which>
  void complete(Which which) {
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (!which(*it)) {
        ++it;
        continue;
      }
      Pending& p = *it;
      wait(p.request);
      wait(p.payload);
      wait(p.reply);
      if (p.op == kGet) staging_->from_host(p.dst, p.staging, p.header.bytes);
      staging_->free_host(p.staging);
      it = pending_.erase(it);
    }
  }
  void flush_served() {
    complete([](const Pending&) { return true; });
  }

  // Host communicator calls, one thread at a time (the requester's and the server's).
  template <class F>
  RequestPtr post(F f) {
    std::lock_guard lock(host_mutex_);
    return f();
  }
  bool test(RequestPtr& r) {
    if (!r) return true;
    std::lock_guard lock(host_mutex_);
    return r->test();
  }
  void wait(RequestPtr& r) {
    Backoff b;
    while (!test(r)) b.pause();
    r.reset();
  }
  static void release(Pending& p) {
    (void)p.request.release();
    (void)p.payload.release();
    (void)p.reply.release();
  }

  // The server: one posted header receive per served peer; each request in the peer's order,
  // once this rank has reached the request's epoch; until every served peer said it is done.
  void serve() noexcept {
    const int P = (int)served_.size();
    auto headers = std::make_unique<std::vector<Header>>((size_t)P);  // kept past an abort (posted receives)
    std::vector<Header>& header = *headers;
    std::vector<RequestPtr> request((size_t)P);
    std::vector<char> held((size_t)P, 0);
    int open = 0;
    try {
      for (int r = 0; r < P; ++r)
        if (served_[(size_t)r]) {
          request[(size_t)r] = post([&] { return host_->irecv(&header[(size_t)r], sizeof(Header), DType::u8, r, kRequest); });
          ++open;
        }
      Backoff idle;
      while (open > 0 && !abort_) {
        bool progressed = false;
        for (int r = 0; r < P; ++r) {
          if (!request[(size_t)r]) continue;
          if (!held[(size_t)r]) held[(size_t)r] = test(request[(size_t)r]) ? 1 : 0;
          if (!held[(size_t)r]) continue;
          const Header& h = header[(size_t)r];
          if (h.op == kClose) {
            request[(size_t)r].reset();
            --open;
            progressed = true;
            continue;
          }
          if (h.epoch > epoch_.load()) continue;  // this rank has not returned from that barrier yet
          serve_one(r, h);
          held[(size_t)r] = 0;
          request[(size_t)r] = post([&] { return host_->irecv(&header[(size_t)r], sizeof(Header), DType::u8, r, kRequest); });
          progressed = true;
        }
        if (progressed) idle.reset();
        else idle.pause();
      }
      if (abort_) {
        for (RequestPtr& r : request) (void)r.release();
        (void)headers.release();
      }
    } catch (const std::exception& e) {
      // A peer waits for this answer: stop the rank with the reason instead of leaving it hanging.
      std::fprintf(stderr, "moebench: rank %d could not serve a window request: %s\n", data_.world_rank(me_), e.what());
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
  void serve_one(int peer, const Header& h) {
    if (h.offset > (uint64_t)bytes_[(size_t)me_] || h.bytes > (uint64_t)bytes_[(size_t)me_] - h.offset)
      throw std::out_of_range("rank " + std::to_string(peer) + " asked for bytes beyond this rank's window");
    void* buf = staging_->alloc_host(h.bytes);
    try {
      if (h.op == kGet) {
        staging_->read(buf, h.offset, h.bytes);
        RequestPtr s = post([&] { return host_->isend(buf, h.bytes, DType::u8, peer, kData); });
        wait(s);
      } else {
        RequestPtr in = post([&] { return host_->irecv(buf, h.bytes, DType::u8, peer, kPayload); });
        wait(in);
        if (h.op == kPut) staging_->write(h.offset, buf, h.bytes);
        else staging_->add(h.offset, static_cast<const float*>(buf), h.bytes / sizeof(float));
        const int32_t ack = 1;
        RequestPtr s = post([&] { return host_->isend(&ack, 1, DType::i32, peer, kAck); });
        wait(s);
      }
    } catch (...) {
      staging_->free_host(buf);
      throw;
    }
    staging_->free_host(buf);
  }

  DType type_;
  size_t count_;
  int me_;
  std::vector<int> reach_;
  Communicator& data_;
  std::unique_ptr<Window> inner_;
  std::unique_ptr<WindowStaging> staging_;
  std::unique_ptr<Communicator> host_;
  std::mutex host_mutex_;
  std::vector<int64_t> bytes_;  // every rank's window size
  std::vector<char> served_;    // per rank: out of the data communicator's reach
  std::list<Pending> pending_;  // stable: the messages point into the entries
  std::atomic<int64_t> epoch_{0};
  std::atomic<bool> abort_{false};
  std::thread server_;
};

}  // namespace

std::unique_ptr<WindowStaging> host_window_staging(Window& inner, void* base, int me) {
  return std::make_unique<HostStaging>(inner, base, me);
}

std::unique_ptr<Window> create_served_window(Communicator& data, Communicator& host, void* base, size_t count,
                                             DType type) {
  std::vector<int> reach = data.window_reach();
  if (std::all_of(reach.begin(), reach.end(), [&](int g) { return g == reach[0]; }))
    return data.create_window(base, count, type);
  return std::make_unique<ServedWindow>(data, host, std::move(reach), base, count, type);
}

}  // namespace moebench
