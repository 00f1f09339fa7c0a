#pragma once
// A DeviceQueue without a device (runtime/device_queue.h), for the tests of the GPU path's
// wiring: streams are FIFO lists of operations (work, event records, event waits) that run only
// when the host synchronizes, one operation at a time in a random order among the streams whose
// next operation may run, on a virtual clock (each work item takes its duration on its stream).
// So a schedule that forgot a dependency shows up as a wrong order in some interleaving, and a
// wait that can never be met as a deadlock (std::logic_error). Every wait and host sync is
// counted.
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "moebench/runtime/device_queue.h"

namespace moebench::test {

class FakeDeviceQueue : public DeviceQueue {
 public:
  explicit FakeDeviceQueue(uint64_t seed = 1) : rng_(seed) {}

  Stream create_stream(bool high_priority) override {
    streams_.emplace_back();
    high_priority_.push_back(high_priority);
    return (Stream)streams_.size() - 1;
  }
  Event record(Stream s) override {
    const Event e = next_event_++;
    at(s).push_back({Op::record, {}, e, 0.0});
    return e;
  }
  void wait(Stream s, Event e) override {
    at(s).push_back({Op::wait, {}, e, 0.0});
    waits.emplace_back(s, e);
  }
  void synchronize(Event e) override {
    ++host_syncs;
    while (!done_.count(e)) step(e);
  }
  double seconds_between(Event a, Event b) override { return done_.at(b) - done_.at(a); }
  void retire_events() override {
    for (const auto& s : streams_)
      if (!s.empty()) throw std::logic_error("FakeDeviceQueue::retire_events with work still queued");
    if ((Event)done_.size() != next_event_) throw std::logic_error("FakeDeviceQueue::retire_events before every event completed");
    done_.clear();
    next_event_ = 0;
    ++retired;
  }

  // An action's device work: fn runs when the stream reaches it, taking `seconds` of the clock.
  void launch(std::function<void()> fn, double seconds = 1.0) {
    if (current_stream() < 0) throw std::logic_error("FakeDeviceQueue::launch outside an action");
    at(current_stream()).push_back({Op::work, std::move(fn), -1, seconds});
  }

  bool high_priority(Stream s) const { return high_priority_.at((size_t)s); }
  int streams() const { return (int)streams_.size(); }
  std::vector<std::pair<Stream, Event>> waits;  // every wait(s, e), in call order
  int host_syncs = 0;
  int retired = 0;  // retire_events() calls

 private:
  struct Op {
    enum Kind { work, record, wait } kind;
    std::function<void()> fn;
    Event event;
    double seconds;
  };
  std::deque<Op>& at(Stream s) {
    if (s < 0 || s >= (Stream)streams_.size()) throw std::logic_error("FakeDeviceQueue: no stream " + std::to_string(s));
    return streams_[(size_t)s];
  }
  // Runs one operation of a stream that may go on; throws when none may (before `target`).
  void step(Event target) {
    std::vector<size_t> ready;
    for (size_t s = 0; s < streams_.size(); ++s)
      if (!streams_[s].empty() && (streams_[s].front().kind != Op::wait || done_.count(streams_[s].front().event)))
        ready.push_back(s);
    if (ready.empty())
      throw std::logic_error("FakeDeviceQueue: event " + std::to_string(target) + " can never complete (deadlock)");
    const size_t s = ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng_)];
    Op op = std::move(streams_[s].front());
    streams_[s].pop_front();
    double& now = clock_[s];
    if (op.kind == Op::wait) now = std::max(now, done_.at(op.event));
    if (op.kind == Op::record) done_[op.event] = now;
    if (op.kind == Op::work) {
      now += op.seconds;
      op.fn();  // a failing "kernel": the error reaches the synchronizing host
    }
  }

  std::mt19937_64 rng_;
  std::vector<std::deque<Op>> streams_;
  std::vector<bool> high_priority_;
  std::map<size_t, double> clock_;  // per stream: the time its last operation ended
  std::map<Event, double> done_;    // completed events: when
  Event next_event_ = 0;
};

}  // namespace moebench::test
