#pragma once
// Executor: runs tasks on named streams and records a Span per task.
//   Stream  CPU: a worker thread executing its tasks in submission order (a cudaStream on the
//           GPU path). Tasks on different streams run concurrently: overlap is real.
//   Event   fires when the task it belongs to finishes; other tasks (on any stream) or the
//           host may wait on it.
// An exception thrown by a task is captured; the task's event fires as failed, later tasks
// that depend on it are skipped, and the exception is rethrown from Event::wait() /
// Executor::synchronize() on the host thread (so a failing rank reports it, never hangs).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "moebench/runtime/task.h"

namespace moebench {

class Event {
 public:
  void wait();            // blocks until fired; rethrows the task's exception
  bool done() const;
  // internal: called by the stream
  void fire(std::exception_ptr error);
  std::exception_ptr error() const;

 private:
  mutable std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

class Executor;

class Stream {
 public:
  Stream(std::string name, Executor& owner);
  ~Stream();  // drains and joins the worker
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  const std::string& name() const { return name_; }
  void synchronize();  // waits until every task submitted so far has finished (rethrows)

 private:
  friend class Executor;
  struct Item {
    Task task;
    std::shared_ptr<Event> event;
    long step = -1;                                  // executor step at submission
    std::vector<std::shared_ptr<Event>> keep_deps;   // keeps deps alive across clear_events()
  };
  void enqueue(Item item);
  void run();
  // Waits for every task submitted so far; returns (and clears) the first error, with its
  // executor-wide sequence number in *seq (for picking the earliest error across streams).
  std::exception_ptr wait_and_take_error(uint64_t* seq);

  std::string name_;
  Executor& owner_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  size_t submitted_ = 0, finished_ = 0;
  std::exception_ptr first_error_;
  uint64_t first_error_seq_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

class Executor {
 public:
  explicit Executor(int rank);
  ~Executor();
  // The stream with this name, created on first use ("compute", "comm", ...).
  Stream& stream(const std::string& name);
  // Queues a task on task.stream; returns the event that fires when it finishes. The event is
  // owned by the executor until clear_events() (call at step boundaries).
  Event* submit(Task task);
  // Runs a task on the calling thread (no stream), recording its span under `stream_name`.
  void run_inline(const Task& task, const std::string& stream_name = "host");
  // Waits for every stream; rethrows the first task error.
  void synchronize();
  void clear_events();

  // Spans recorded since the last take_spans(), in completion order.
  std::vector<Span> take_spans();
  // Records a span measured by the caller (start/end from now()); rank and step are filled in.
  void add_span(Span span);
  void set_step(long step) { step_ = step; }
  double now() const;  // seconds since the executor's epoch
  int rank() const { return rank_; }

 private:
  friend class Stream;
  void record(Span span);

  int rank_;
  std::atomic<long> step_{-1};
  std::atomic<uint64_t> error_seq_{0};
  std::chrono::steady_clock::time_point epoch_;
  std::mutex m_;
  std::map<std::string, std::unique_ptr<Stream>> streams_;
  std::vector<std::shared_ptr<Event>> events_;
  std::unordered_map<const Event*, size_t> event_index_;  // Event* -> index in events_
  std::vector<Span> spans_;
};

}  // namespace moebench
