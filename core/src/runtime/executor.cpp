// Executor: one worker thread per stream (FIFO), events with error propagation, span recording.
#include "moebench/runtime/executor.h"

#include <stdexcept>
#include <utility>

namespace moebench {

namespace {

// The span for a task, minus its times.
Span make_span(int rank, const std::string& stream, const Task& task, long step) {
  Span s;
  s.rank = rank;
  s.stream = stream;
  s.name = task.name;
  s.category = task.category;
  for (const auto& [peer, bytes] : task.cost.bytes_to_peer) s.bytes += bytes;
  if (task.peer >= 0) {
    s.peer = task.peer;
  } else if (!task.cost.bytes_to_peer.empty()) {
    const int first = task.cost.bytes_to_peer.front().first;
    bool single = true;
    for (const auto& entry : task.cost.bytes_to_peer)
      if (entry.first != first) { single = false; break; }
    if (single) s.peer = first;
  }
  s.layer = task.layer;
  s.expert = task.expert;
  s.step = step;
  return s;
}

// Waits for every dependency; returns the first failed dependency's error (null when all ok).
std::exception_ptr wait_deps(const std::vector<Event*>& deps) {
  std::exception_ptr failed;
  for (Event* dep : deps) {
    if (!dep) continue;
    try {
      dep->wait();
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  }
  return failed;
}

}  // namespace

// ---------------------------------------------------------------------------------- Event

void Event::wait() {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [this] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

bool Event::done() const {
  std::lock_guard<std::mutex> lock(m_);
  return done_;
}

void Event::fire(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (done_) return;  // fires once
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

std::exception_ptr Event::error() const {
  std::lock_guard<std::mutex> lock(m_);
  return error_;
}

// --------------------------------------------------------------------------------- Stream

Stream::Stream(std::string name, Executor& owner) : name_(std::move(name)), owner_(owner) {
  worker_ = std::thread([this] { run(); });
}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Stream::enqueue(Item item) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (stop_) throw std::logic_error("Stream '" + name_ + "': submit after shutdown");
    queue_.push_back(std::move(item));
    ++submitted_;
  }
  cv_.notify_all();
}

void Stream::run() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      item = std::move(queue_.front());
      queue_.pop_front();
    }

    std::exception_ptr error = wait_deps(item.task.deps);
    if (!error) {  // a task whose dependency failed is skipped: no action, no span
      Span span = make_span(owner_.rank(), name_, item.task, item.step);
      span.start = owner_.now();
      try {
        if (item.task.action) item.task.action();
      } catch (...) {
        error = std::current_exception();
      }
      span.end = owner_.now();
      try {
        owner_.record(std::move(span));
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }

    std::shared_ptr<Event> event = std::move(item.event);
    item = Item{};  // release the action's captures and the kept deps before signalling
    uint64_t seq = 0;
    if (error) seq = ++owner_.error_seq_;
    if (event) event->fire(error);
    {
      std::lock_guard<std::mutex> lock(m_);
      if (error && (!first_error_ || seq < first_error_seq_)) {
        first_error_ = error;
        first_error_seq_ = seq;
      }
      ++finished_;
    }
    cv_.notify_all();
  }
}

std::exception_ptr Stream::wait_and_take_error(uint64_t* seq) {
  std::unique_lock<std::mutex> lock(m_);
  const size_t target = submitted_;
  cv_.wait(lock, [this, target] { return finished_ >= target; });
  std::exception_ptr error = std::move(first_error_);
  first_error_ = nullptr;
  if (seq) *seq = first_error_seq_;
  first_error_seq_ = 0;
  return error;
}

void Stream::synchronize() {
  if (std::exception_ptr error = wait_and_take_error(nullptr)) std::rethrow_exception(error);
}

// ------------------------------------------------------------------------------- Executor

Executor::Executor(int rank) : rank_(rank), epoch_(std::chrono::steady_clock::now()) {}

Executor::~Executor() {
  // Drain and join every stream while the rest of the executor (spans, events) is alive.
  // Streams are moved out under the lock and destroyed outside it, since their workers
  // take the lock to record spans.
  for (;;) {
    std::map<std::string, std::unique_ptr<Stream>> streams;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (streams_.empty()) break;
      streams.swap(streams_);
    }
    streams.clear();
  }
}

Stream& Executor::stream(const std::string& name) {
  std::lock_guard<std::mutex> lock(m_);
  auto it = streams_.find(name);
  if (it == streams_.end()) it = streams_.emplace(name, std::make_unique<Stream>(name, *this)).first;
  return *it->second;
}

Event* Executor::submit(Task task) {
  if (!task.stream) throw std::invalid_argument("Executor::submit: task '" + task.name + "' has no stream");
  if (&task.stream->owner_ != this)
    throw std::invalid_argument("Executor::submit: task '" + task.name +
                                "' targets a stream of another executor");
  Stream* stream = task.stream;
  Stream::Item item;
  item.event = std::make_shared<Event>();
  item.step = step_.load();
  Event* raw = item.event.get();
  {
    std::lock_guard<std::mutex> lock(m_);
    for (Event* dep : task.deps) {
      auto it = dep ? event_index_.find(dep) : event_index_.end();
      if (it != event_index_.end()) item.keep_deps.push_back(events_[it->second]);
    }
    event_index_.emplace(raw, events_.size());
    events_.push_back(item.event);
  }
  item.task = std::move(task);
  stream->enqueue(std::move(item));
  return raw;
}

void Executor::run_inline(const Task& task, const std::string& stream_name) {
  if (std::exception_ptr failed = wait_deps(task.deps)) std::rethrow_exception(failed);
  Span span = make_span(rank_, stream_name, task, step_.load());
  span.start = now();
  std::exception_ptr error;
  try {
    if (task.action) task.action();
  } catch (...) {
    error = std::current_exception();
  }
  span.end = now();
  record(std::move(span));
  if (error) std::rethrow_exception(error);
}

void Executor::synchronize() {
  std::vector<Stream*> streams;
  {
    std::lock_guard<std::mutex> lock(m_);
    streams.reserve(streams_.size());
    for (auto& [name, s] : streams_) streams.push_back(s.get());
  }
  // Wait for all streams (even after an error), then rethrow the earliest error.
  std::exception_ptr first;
  uint64_t first_seq = 0;
  for (Stream* s : streams) {
    uint64_t seq = 0;
    std::exception_ptr error = s->wait_and_take_error(&seq);
    if (error && (!first || seq < first_seq)) {
      first = error;
      first_seq = seq;
    }
  }
  if (first) std::rethrow_exception(first);
}

void Executor::clear_events() {
  std::lock_guard<std::mutex> lock(m_);
  events_.clear();
  event_index_.clear();
}

std::vector<Span> Executor::take_spans() {
  std::lock_guard<std::mutex> lock(m_);
  std::vector<Span> out;
  out.swap(spans_);
  return out;
}

double Executor::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
}

void Executor::record(Span span) {
  std::lock_guard<std::mutex> lock(m_);
  spans_.push_back(std::move(span));
}

}  // namespace moebench

namespace moebench {

void Executor::add_span(Span span) {
  span.rank = rank_;
  span.step = step_.load();
  record(std::move(span));
}

}  // namespace moebench
