// LinkEmulator (the links' shared state in POSIX shared memory) and EmulatedCommunicator (the
// pacing decorator); the model and its trade-offs are in link_emulator.h.
#include "moebench/perf/link_emulator.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <deque>
#include <exception>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>

namespace moebench {

// ---------------------------------------------------------------------------------------------
// Shared state

namespace {

constexpr size_t kNameBytes = 256;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

struct LinkEmulator::Shared {
  pthread_mutex_t mutex;  // process-shared, robust: guards epoch_ns and the free_at array
  int64_t epoch_ns = 0;   // CLOCK_MONOTONIC at creation: emulated time 0
  int64_t links = 0;
  double* free_at() { return reinterpret_cast<double*>(reinterpret_cast<char*>(this) + sizeof(Shared)); }
};

namespace {

// The shared mutex, held. A rank that died holding it leaves the state as it was (every update
// is one reserve of plain doubles): mark it consistent and go on.
class SharedLock {
 public:
  explicit SharedLock(pthread_mutex_t* m) : m_(m) {
    const int rc = pthread_mutex_lock(m_);
    if (rc == EOWNERDEAD) pthread_mutex_consistent(m_);
    else if (rc != 0) throw std::runtime_error(std::string("link emulator: locking the shared links failed: ") + std::strerror(rc));
  }
  ~SharedLock() { pthread_mutex_unlock(m_); }
  SharedLock(const SharedLock&) = delete;
  SharedLock& operator=(const SharedLock&) = delete;

 private:
  pthread_mutex_t* m_;
};

std::string job_unique_name() {
  std::random_device rd;
  char buf[96];
  std::snprintf(buf, sizeof buf, "/moebench-emu-%ld-%08x%08x", (long)getpid(), rd(), rd());
  return buf;
}

std::vector<std::string> hostnames(Communicator& world) {
  char mine[kNameBytes] = {};
  gethostname(mine, kNameBytes - 1);
  std::vector<char> all(kNameBytes * (size_t)world.size());
  world.all_gather(mine, all.data(), kNameBytes, DType::u8);
  std::vector<std::string> out;
  for (int r = 0; r < world.size(); ++r) out.emplace_back(all.data() + (size_t)r * kNameBytes);
  return out;
}

}  // namespace

ClusterModel scaled_cluster(const ClusterModel& cluster, double scale) {
  if (!(scale > 0)) throw std::invalid_argument("link emulator: the time scale must be > 0, got " + std::to_string(scale));
  ClusterSpec s = cluster.spec();
  for (LinkSpec* l : {&s.intra, &s.pcie_pair, &s.inter, &s.spine}) {
    l->bandwidth /= scale;
    l->latency *= scale;
  }
  return ClusterModel(s);
}

LinkEmulator::LinkEmulator(Communicator& world, const ClusterModel& cluster, double time_scale)
    : cluster_(cluster), scale_(time_scale), network_(scaled_cluster(cluster, time_scale)) {
  if (world.size() != cluster.world_size())
    throw std::invalid_argument("link emulator: the cluster " + cluster.spec().name + " has " +
                                std::to_string(cluster.world_size()) + " devices, the job " +
                                std::to_string(world.size()) + " ranks (one rank per device)");
  const std::vector<std::string> hosts = hostnames(world);
  for (const std::string& h : hosts)
    if (h != hosts[0])
      throw std::runtime_error("link emulator: every rank must run on one machine (the links live in its shared "
                               "memory); ranks run on " + hosts[0] + " and " + h);
  mapped_bytes_ = sizeof(Shared) + sizeof(double) * (size_t)network_.link_count();
  // Rank 0 creates the segment and says its name (or why it failed) to the others.
  std::string error;
  char msg[kNameBytes] = {};
  std::string name;
  int fd = -1;
  if (world.rank() == 0) {
    name = job_unique_name();
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)mapped_bytes_) != 0) error = "creating shared memory " + name + " failed: " + errno_text();
    msg[0] = error.empty() ? 1 : 0;
    std::snprintf(msg + 1, kNameBytes - 1, "%s", error.empty() ? name.c_str() : error.c_str());
  }
  world.broadcast(msg, kNameBytes, DType::u8, 0);
  if (world.rank() != 0) {
    if (msg[0] != 1) {
      error = std::string("rank 0: ") + (msg + 1);
    } else {
      name = msg + 1;
      fd = shm_open(name.c_str(), O_RDWR, 0600);
      if (fd < 0) error = "opening shared memory " + name + " failed: " + errno_text();
    }
  }
  if (error.empty()) {
    void* p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) error = "mapping shared memory " + name + " failed: " + errno_text();
    else shared_ = static_cast<Shared*>(p);
  }
  if (fd >= 0) close(fd);
  if (world.rank() == 0 && shared_) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&shared_->mutex, &attr);
    pthread_mutexattr_destroy(&attr);
    shared_->links = network_.link_count();
    std::fill_n(shared_->free_at(), network_.link_count(), 0.0);
    shared_->epoch_ns = monotonic_ns();
  }
  int ok = error.empty() ? 1 : 0;
  world.all_reduce(&ok, 1, DType::i32, ReduceOp::min);  // every rank has mapped it (or failed)
  if (world.rank() == 0 && !name.empty() && fd >= 0) shm_unlink(name.c_str());  // the mappings stay
  if (!ok) {
    if (shared_) munmap(shared_, mapped_bytes_);
    shared_ = nullptr;
    throw std::runtime_error("link emulator: " + (error.empty() ? std::string("another rank could not map the shared links") : error));
  }
}

LinkEmulator::~LinkEmulator() {
  if (shared_) munmap(shared_, mapped_bytes_);
}

double LinkEmulator::now() const { return (double)(monotonic_ns() - shared_->epoch_ns) * 1e-9; }

double LinkEmulator::reserve(int from, const std::vector<EmulatedFlow>& flows, double ready) const {
  if (ready < 0) ready = now();
  double last = ready;
  bool any = false;
  for (const EmulatedFlow& f : flows) any = any || (f.to != from && f.bytes > 0);
  if (!any) return last;
  SharedLock lock(&shared_->mutex);
  for (const EmulatedFlow& f : flows) {
    if (f.to == from || f.bytes <= 0) continue;
    const TransferTiming t = network_.reserve(shared_->free_at(), from, f.to, f.bytes, ready, std::max(1, f.messages));
    last = std::max(last, t.arrival);
  }
  return last;
}

void LinkEmulator::sleep_until(double t) const {
  // Saturated, not overflowed: an arrival past the clock's range (or NaN) is a wait without end,
  // never no wait at all (the config's bounds keep real runs far below it).
  constexpr double kMaxWaitNs = 4e18;  // ~127 years, within int64 beside the epoch
  const double wait_ns = t * 1e9;
  const int64_t target = shared_->epoch_ns + (wait_ns < kMaxWaitNs ? (int64_t)std::max(0.0, wait_ns) : (int64_t)kMaxWaitNs);
  timespec ts{};
  ts.tv_sec = target / 1000000000LL;
  ts.tv_nsec = target % 1000000000LL;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// ---------------------------------------------------------------------------------------------
// Deferred non-blocking collectives: started in call order once their flows arrived.

struct EmulatedCommunicator::PendingQueue {
  struct Entry {
    double arrival = 0;
    std::function<RequestPtr()> start;
    RequestPtr inner;
    std::exception_ptr error;
    bool started = false;
  };
  std::shared_ptr<const LinkEmulator> emu;
  std::mutex mutex;
  std::deque<std::shared_ptr<Entry>> queue;  // not started yet, in call order

  // Starts the entries up to `e` in order (sleeping until each one's arrival); with `block`
  // false it stops at the first one not due yet and returns false.
  bool start_through(const Entry& e, bool block) {
    std::lock_guard<std::mutex> lock(mutex);
    while (!e.started && !queue.empty()) {
      const std::shared_ptr<Entry> front = queue.front();
      if (!block && emu->now() < front->arrival) return false;
      emu->sleep_until(front->arrival);
      queue.pop_front();
      front->started = true;
      try {
        front->inner = front->start();
      } catch (...) {
        front->error = std::current_exception();
      }
      front->start = nullptr;
    }
    return e.started;
  }
};

class EmulatedCommunicator::Deferred : public Request {
 public:
  Deferred(std::shared_ptr<PendingQueue> q, std::shared_ptr<PendingQueue::Entry> e) : q_(std::move(q)), e_(std::move(e)) {}
  ~Deferred() override {
    try {
      wait();
    } catch (...) {
    }
  }
  void wait() override {
    if (done_) return;
    q_->start_through(*e_, true);
    done_ = true;
    if (e_->error) std::rethrow_exception(e_->error);
    e_->inner->wait();
  }
  bool test() override {
    if (done_) return true;
    if (!q_->start_through(*e_, false)) return false;
    if (e_->error || e_->inner->test()) wait();
    return done_;
  }

 private:
  std::shared_ptr<PendingQueue> q_;
  std::shared_ptr<PendingQueue::Entry> e_;
  bool done_ = false;
};

RequestPtr EmulatedCommunicator::defer(double arrival, std::function<RequestPtr()> start) {
  auto e = std::make_shared<PendingQueue::Entry>();
  e->arrival = arrival;
  e->start = std::move(start);
  {
    std::lock_guard<std::mutex> lock(pending_->mutex);
    pending_->queue.push_back(e);
  }
  return std::make_unique<Deferred>(pending_, std::move(e));
}

// ---------------------------------------------------------------------------------------------
// Windows

class EmulatedCommunicator::EmuWindow : public Window {
 public:
  EmuWindow(EmulatedCommunicator& owner, std::unique_ptr<Window> inner) : owner_(owner), inner_(std::move(inner)) {}
  void get(void* dst, size_t count, int target, size_t target_offset) override {
    owner_.sync_meter();  // the data flows from the target to this rank
    if (owner_.valid(target)) owner_.emu_->pace(owner_.world_rank(target), {{owner_.me(), bytes(count)}});
    inner_->get(dst, count, target, target_offset);
  }
  void put(const void* src, size_t count, int target, size_t target_offset) override {
    owner_.sync_meter();
    if (owner_.valid(target)) owner_.emu_->pace(owner_.me(), {{owner_.world_rank(target), bytes(count)}});
    inner_->put(src, count, target, target_offset);
  }
  void accumulate(const void* src, size_t count, int target, size_t target_offset, ReduceOp op) override {
    owner_.sync_meter();
    if (owner_.valid(target)) owner_.emu_->pace(owner_.me(), {{owner_.world_rank(target), bytes(count)}});
    inner_->accumulate(src, count, target, target_offset, op);
  }
  void flush(int target) override { inner_->flush(target); }
  void flush_all() override { inner_->flush_all(); }
  void barrier() override { inner_->barrier(); }
  DType dtype() const override { return inner_->dtype(); }
  size_t local_count() const override { return inner_->local_count(); }

 private:
  double bytes(size_t count) const { return (double)(count * dtype_size(inner_->dtype())); }
  EmulatedCommunicator& owner_;
  std::unique_ptr<Window> inner_;
};

// ---------------------------------------------------------------------------------------------
// The decorator

EmulatedCommunicator::EmulatedCommunicator(std::shared_ptr<const LinkEmulator> emulator, Communicator& inner)
    : emu_(std::move(emulator)), inner_(&inner), pending_(std::make_shared<PendingQueue>()) {
  if (!emu_) throw std::invalid_argument("EmulatedCommunicator: no link emulator");
  pending_->emu = emu_;
  set_traffic_meter(inner.traffic_meter());
}

EmulatedCommunicator::EmulatedCommunicator(std::shared_ptr<const LinkEmulator> emulator, std::unique_ptr<Communicator> inner)
    : EmulatedCommunicator(std::move(emulator), *inner) {
  owned_ = std::move(inner);
}

EmulatedCommunicator::~EmulatedCommunicator() {
  if (!owned_) inner_->set_traffic_meter(traffic_meter());  // leave the borrowed one with no stale meter
}

void EmulatedCommunicator::sync_meter() {
  if (inner_->traffic_meter() != traffic_meter()) inner_->set_traffic_meter(traffic_meter());
}

std::vector<EmulatedFlow> EmulatedCommunicator::all_reduce_flows(size_t bytes) const {
  const int P = size();
  if (P < 2) return {};
  return {{world_rank((rank() + 1) % P), 2.0 * (P - 1) * (double)bytes / P, 2 * (P - 1)}};
}

std::vector<EmulatedFlow> EmulatedCommunicator::ring_flows(size_t bytes_per_rank) const {
  const int P = size();
  if (P < 2) return {};
  return {{world_rank((rank() + 1) % P), (double)(P - 1) * (double)bytes_per_rank, P - 1}};
}

std::vector<EmulatedFlow> EmulatedCommunicator::all_to_all_flows(const size_t* send_counts, size_t elem_bytes) const {
  const int P = size(), r = rank();
  std::vector<EmulatedFlow> flows;
  for (int i = 1; i < P; ++i) {  // pairwise order: rank+1, rank+2, ... (no peer hit by all at once)
    const int p = (r + i) % P;
    if (send_counts[p] > 0) flows.push_back({world_rank(p), (double)(send_counts[p] * elem_bytes), 1});
  }
  return flows;
}

std::vector<EmulatedFlow> EmulatedCommunicator::broadcast_flows(size_t bytes, int root, double* ready) const {
  const int P = size();
  auto real = [&](int v) { return world_rank((v + root) % P); };
  const int vr = (rank() - root + P) % P;
  // When the data can reach this rank: the hops from the root down the binomial tree (parent of
  // v = v without its lowest set bit), each alone on its route.
  double hops = 0;
  for (int v = vr; v != 0;) {
    const int parent = v & (v - 1);
    hops += emu_->network().cluster().transfer_seconds(real(parent), real(v), (double)bytes);
    v = parent;
  }
  *ready = emu_->now() + hops;
  int mask = 1;
  while (mask < P && !(vr & mask)) mask <<= 1;
  mask >>= 1;
  std::vector<EmulatedFlow> flows;
  for (; mask > 0; mask >>= 1)
    if (vr + mask < P) flows.push_back({real(vr + mask), (double)bytes, 1});
  return flows;
}

void EmulatedCommunicator::send(const void* buf, size_t count, DType type, int peer, int tag) {
  sync_meter();
  if (valid(peer)) emu_->pace(me(), {{world_rank(peer), (double)(count * dtype_size(type))}});
  inner_->send(buf, count, type, peer, tag);
}

void EmulatedCommunicator::recv(void* buf, size_t count, DType type, int peer, int tag) {
  sync_meter();
  inner_->recv(buf, count, type, peer, tag);
}

RequestPtr EmulatedCommunicator::isend(const void* buf, size_t count, DType type, int peer, int tag) {
  sync_meter();
  if (valid(peer)) emu_->pace(me(), {{world_rank(peer), (double)(count * dtype_size(type))}});
  return inner_->isend(buf, count, type, peer, tag);
}

RequestPtr EmulatedCommunicator::irecv(void* buf, size_t count, DType type, int peer, int tag) {
  sync_meter();
  return inner_->irecv(buf, count, type, peer, tag);
}

void EmulatedCommunicator::all_reduce(void* data, size_t count, DType type, ReduceOp op) {
  sync_meter();
  emu_->pace(me(), all_reduce_flows(count * dtype_size(type)));
  inner_->all_reduce(data, count, type, op);
}

void EmulatedCommunicator::all_gather(const void* send, void* recv, size_t count, DType type) {
  sync_meter();
  emu_->pace(me(), ring_flows(count * dtype_size(type)));
  inner_->all_gather(send, recv, count, type);
}

void EmulatedCommunicator::reduce_scatter(const void* send, void* recv, size_t count, DType type, ReduceOp op) {
  sync_meter();
  emu_->pace(me(), ring_flows(count * dtype_size(type)));
  inner_->reduce_scatter(send, recv, count, type, op);
}

void EmulatedCommunicator::all_to_all_v(const void* send, const size_t* send_counts, const size_t* send_displs,
                                        void* recv, const size_t* recv_counts, const size_t* recv_displs, DType type) {
  sync_meter();
  emu_->pace(me(), all_to_all_flows(send_counts, dtype_size(type)));
  inner_->all_to_all_v(send, send_counts, send_displs, recv, recv_counts, recv_displs, type);
}

void EmulatedCommunicator::broadcast(void* data, size_t count, DType type, int root) {
  sync_meter();
  double ready = 0;
  const std::vector<EmulatedFlow> flows =
      valid(root) ? broadcast_flows(count * dtype_size(type), root, &ready) : std::vector<EmulatedFlow>();
  if (!flows.empty()) emu_->sleep_until(emu_->reserve(me(), flows, ready));
  inner_->broadcast(data, count, type, root);
}

void EmulatedCommunicator::reduce(void* data, size_t count, DType type, int root, ReduceOp op) {
  sync_meter();
  if (valid(root) && rank() != root) {
    const int P = size(), vr = (rank() - root + P) % P;
    const int parent = ((vr & (vr - 1)) + root) % P;  // vr without its lowest set bit
    emu_->pace(me(), {{world_rank(parent), (double)(count * dtype_size(type))}});
  }
  inner_->reduce(data, count, type, root, op);
}

void EmulatedCommunicator::barrier() {
  sync_meter();
  inner_->barrier();
}

RequestPtr EmulatedCommunicator::iall_reduce(void* data, size_t count, DType type, ReduceOp op) {
  sync_meter();
  const double arrival = emu_->reserve(me(), all_reduce_flows(count * dtype_size(type)));
  Communicator* in = inner_;
  return defer(arrival, [in, data, count, type, op] { return in->iall_reduce(data, count, type, op); });
}

RequestPtr EmulatedCommunicator::iall_gather(const void* send, void* recv, size_t count, DType type) {
  sync_meter();
  const double arrival = emu_->reserve(me(), ring_flows(count * dtype_size(type)));
  Communicator* in = inner_;
  return defer(arrival, [in, send, recv, count, type] { return in->iall_gather(send, recv, count, type); });
}

RequestPtr EmulatedCommunicator::iall_to_all_v(const void* send, const size_t* send_counts, const size_t* send_displs,
                                               void* recv, const size_t* recv_counts, const size_t* recv_displs,
                                               DType type) {
  sync_meter();
  const double arrival = emu_->reserve(me(), all_to_all_flows(send_counts, dtype_size(type)));
  // The count arrays need not outlive this call: the deferred start uses copies.
  const size_t P = (size_t)size();
  auto arrays = std::make_shared<std::vector<size_t>>();
  for (const size_t* a : {send_counts, send_displs, recv_counts, recv_displs}) arrays->insert(arrays->end(), a, a + P);
  Communicator* in = inner_;
  return defer(arrival, [in, send, recv, type, arrays, P] {
    const size_t* a = arrays->data();
    return in->iall_to_all_v(send, a, a + P, recv, a + 2 * P, a + 3 * P, type);
  });
}

RequestPtr EmulatedCommunicator::ibroadcast(void* data, size_t count, DType type, int root) {
  sync_meter();
  double ready = 0;
  const std::vector<EmulatedFlow> flows =
      valid(root) ? broadcast_flows(count * dtype_size(type), root, &ready) : std::vector<EmulatedFlow>();
  const double arrival = flows.empty() ? 0.0 : emu_->reserve(me(), flows, ready);
  Communicator* in = inner_;
  return defer(arrival, [in, data, count, type, root] { return in->ibroadcast(data, count, type, root); });
}

std::unique_ptr<Communicator> EmulatedCommunicator::split(int color, int key) {
  sync_meter();
  std::unique_ptr<Communicator> sub = inner_->split(color, key);
  if (!sub) return nullptr;
  auto out = std::make_unique<EmulatedCommunicator>(emu_, std::move(sub));
  out->set_traffic_meter(traffic_meter());
  return out;
}

std::unique_ptr<Communicator> EmulatedCommunicator::dup() {
  sync_meter();
  auto out = std::make_unique<EmulatedCommunicator>(emu_, inner_->dup());
  out->set_traffic_meter(traffic_meter());
  return out;
}

std::unique_ptr<Window> EmulatedCommunicator::create_window(void* base, size_t count, DType type) {
  sync_meter();
  return std::make_unique<EmuWindow>(*this, inner_->create_window(base, count, type));
}

std::unique_ptr<SharedWindow> EmulatedCommunicator::create_shared_window(size_t bytes) {
  sync_meter();
  return inner_->create_shared_window(bytes);
}

}  // namespace moebench
