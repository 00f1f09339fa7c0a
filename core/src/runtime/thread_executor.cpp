// ThreadExecutor: one worker thread per stream role (FIFO), completion states with error
// propagation, span recording.
#include "moebench/runtime/thread_executor.h"

#include <omp.h>

#include <stdexcept>
#include <utility>

namespace moebench {

struct ThreadExecutor::State {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;

  void fire(std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> lock(m);
      done = true;
      error = std::move(e);
    }
    cv.notify_all();
  }
  // Waits until done; returns the task's error (null when it succeeded).
  std::exception_ptr wait() {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [this] { return done; });
    return error;
  }
};

struct ThreadExecutor::Item {
  Span span;  // everything but the times
  std::function<void()> action;
  std::vector<std::shared_ptr<State>> deps;
  std::shared_ptr<State> state;
};

class ThreadExecutor::Worker {
 public:
  // The worker's OpenMP regions use the thread count of the thread that made it (the rank's
  // main thread, which set its share of the cores: tensor/matmul.h set_num_threads). A new
  // thread would otherwise start from the process default (every core) and a machine running
  // several ranks would run cores x ranks OpenMP threads.
  explicit Worker(ThreadExecutor& owner) : owner_(owner), threads_(omp_get_max_threads()), thread_([this] { run(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void enqueue(Item item) {
    {
      std::lock_guard<std::mutex> lock(m_);
      queue_.push_back(std::move(item));
    }
    cv_.notify_all();
  }

 private:
  void run() {
    omp_set_num_threads(threads_);
    for (;;) {
      Item item;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopped and drained
        item = std::move(queue_.front());
        queue_.pop_front();
      }
      std::exception_ptr error;
      for (const auto& dep : item.deps)
        if (std::exception_ptr e = dep->wait(); e && !error) error = e;
      if (!error) {  // a task whose dependency failed is skipped: no action, no span
        Span span = std::move(item.span);
        span.start = owner_.now();
        try {
          if (item.action) item.action();
        } catch (...) {
          error = std::current_exception();
        }
        span.end = owner_.now();
        if (!span.name.empty()) owner_.record(std::move(span));
      }
      std::shared_ptr<State> state = std::move(item.state);
      item = Item{};  // release the action's captures before signalling
      state->fire(error);
    }
  }

  ThreadExecutor& owner_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stop_ = false;
  int threads_;
  std::thread thread_;
};

ThreadExecutor::ThreadExecutor(int rank) : rank_(rank), epoch_(std::chrono::steady_clock::now()) {}

ThreadExecutor::~ThreadExecutor() {
  for (auto& w : workers_) w.reset();  // drain and join while spans and states are alive
}

ThreadExecutor::Worker& ThreadExecutor::worker(StreamRole role, bool priority) {
  std::lock_guard<std::mutex> lock(m_);
  auto& w = workers_[(int)role + (priority ? kStreamRoles : 0)];
  if (!w) w = std::make_unique<Worker>(*this);
  return *w;
}

void ThreadExecutor::submit(TaskGraph& g) {
  if (g.executor_ && g.executor_ != this)
    throw std::logic_error("Executor::submit: the graph was submitted to another executor");
  const std::vector<int> order = g.topological_order(g.submitted_);
  std::vector<std::shared_ptr<State>>* states;
  {
    std::lock_guard<std::mutex> lock(m_);
    states = &states_[g.serial_];
  }
  states->resize(g.tasks_.size());
  for (int i = g.submitted_; i < (int)g.tasks_.size(); ++i) (*states)[(size_t)i] = std::make_shared<State>();
  const long step = step_.load();
  for (int i : order) {
    GraphTask& t = g.tasks_[(size_t)i];
    Item item;
    item.span.rank = rank_;
    item.span.role = t.role;
    item.span.name = t.name;
    item.span.category = t.category;
    item.span.flops = t.cost.flops;
    item.span.bytes = t.cost.bytes_sent();
    item.span.peer = t.peer;
    if (t.peer < 0 && !t.cost.bytes_to_peer.empty()) {
      const int first = t.cost.bytes_to_peer.front().first;
      bool single = true;
      for (const auto& [peer, bytes] : t.cost.bytes_to_peer) single = single && peer == first;
      if (single) item.span.peer = first;
    }
    item.span.layer = t.layer;
    item.span.expert = t.expert;
    item.span.chunk = t.chunk;
    item.span.step = step;
    item.action = std::move(t.action);  // the graph keeps the schedule; the worker owns the action
    for (int d : t.deps) item.deps.push_back((*states)[(size_t)d]);
    item.state = (*states)[(size_t)i];
    const bool chain = serial_ || t.role == StreamRole::host;  // host: the rank's chain, on the compute worker
    worker(chain ? StreamRole::compute : t.role, !chain && t.priority).enqueue(std::move(item));
  }
  g.submitted_ = (int)g.tasks_.size();
  g.executor_ = this;
}

void ThreadExecutor::wait(const TaskGraph& g, TaskId id) {
  if (id.graph != g.serial_ || id.index < 0 || id.index >= g.submitted_)
    throw std::logic_error("ThreadExecutor::wait: not a submitted task of this graph");
  std::shared_ptr<State> state;
  {
    std::lock_guard<std::mutex> lock(m_);
    auto it = states_.find(g.serial_);
    if (it == states_.end()) throw std::logic_error("ThreadExecutor::wait: the graph's tasks were already synchronized");
    state = it->second[(size_t)id.index];
  }
  if (std::exception_ptr e = state->wait()) std::rethrow_exception(e);
}

void ThreadExecutor::release(const TaskGraph& g) {
  std::vector<std::shared_ptr<State>> states;
  {
    std::lock_guard<std::mutex> lock(m_);
    auto it = states_.find(g.serial_);
    if (it == states_.end()) return;
    states.swap(it->second);
    states_.erase(it);
  }
  std::exception_ptr first;
  for (auto& s : states)
    if (s)
      if (std::exception_ptr e = s->wait(); e && !first) first = e;
  if (first) std::rethrow_exception(first);
}

void ThreadExecutor::synchronize() {
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<State>>> states;
  {
    std::lock_guard<std::mutex> lock(m_);
    states.swap(states_);
  }
  // Every task ends (run or skipped) before this returns, even after an error; the first
  // error in submission order of the earliest graph is the root cause (later ones are its
  // skipped dependants or consequences).
  std::exception_ptr first;
  uint64_t first_graph = 0;
  for (auto& [serial, list] : states)
    for (auto& s : list)
      if (s)
        if (std::exception_ptr e = s->wait(); e && (!first || serial < first_graph)) first = e, first_graph = serial;
  if (first) std::rethrow_exception(first);
}

void ThreadExecutor::run_inline(const std::string& name, StreamRole role, TaskCategory category,
                          const std::function<void()>& fn, int layer, double flops, uint64_t bytes) {
  Span span;
  span.rank = rank_;
  span.role = role;
  span.name = name;
  span.category = category;
  span.layer = layer;
  span.flops = flops;
  span.bytes = bytes;
  span.step = step_.load();
  span.start = now();
  std::exception_ptr error;
  try {
    fn();
  } catch (...) {
    error = std::current_exception();
  }
  span.end = now();
  record(std::move(span));
  if (error) std::rethrow_exception(error);
}

std::vector<Span> ThreadExecutor::take_spans() {
  std::lock_guard<std::mutex> lock(m_);
  std::vector<Span> out;
  out.swap(spans_);
  return out;
}

void ThreadExecutor::add_span(Span span) {
  span.rank = rank_;
  span.step = step_.load();
  record(std::move(span));
}

double ThreadExecutor::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
}

void ThreadExecutor::record(Span span) {
  std::lock_guard<std::mutex> lock(m_);
  spans_.push_back(std::move(span));
}

}  // namespace moebench
