#include "moebench/runtime/stream_executor.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

namespace moebench {

StreamExecutor::StreamExecutor(DeviceQueue& queue, int rank, std::function<double()> now)
    : q_(queue), rank_(rank), now_(std::move(now)) {
  if (!now_) {
    const auto t0 = std::chrono::steady_clock::now();
    now_ = [t0] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  }
  q_.set_current_stream(stream_of(StreamRole::compute, false));
}

StreamExecutor::~StreamExecutor() { q_.set_current_stream(-1); }

DeviceQueue::Stream StreamExecutor::stream_of(StreamRole role, bool priority) {
  if (role == StreamRole::host) role = StreamRole::compute;  // the rank's chain: in order with compute
  const auto key = std::make_pair((int)role, priority);
  auto it = streams_.find(key);
  if (it == streams_.end()) it = streams_.emplace(key, q_.create_stream(priority)).first;
  return it->second;
}

StreamExecutor::Done& StreamExecutor::done(const TaskGraph& g, int index) {
  auto it = graphs_.find(g.serial());
  if (it == graphs_.end() || index < 0 || index >= (int)it->second.size() || it->second[(size_t)index].end < 0)
    throw std::logic_error("StreamExecutor: task " + std::to_string(index) + " of this graph was not submitted");
  return it->second[(size_t)index];
}

void StreamExecutor::submit(TaskGraph& g) {
  if (g.executor_ && g.executor_ != this) throw std::logic_error("StreamExecutor: the graph was submitted elsewhere");
  g.executor_ = this;
  std::vector<Done>& tasks = graphs_[g.serial()];
  tasks.resize(g.size());
  for (const int i : g.topological_order(g.submitted_)) {
    const GraphTask& t = g.task(i);
    Done& d = tasks[(size_t)i];
    d.stream = serial_ ? stream_of(StreamRole::compute, false) : stream_of(t.role, t.priority);
    // One wait per producer stream: its latest event this task needs, unless already waited for.
    std::map<DeviceQueue::Stream, DeviceQueue::Event> needs;
    for (const int dep : t.deps) {
      const Done& p = tasks.at((size_t)dep);
      if (p.end < 0 || p.stream == d.stream) continue;  // completed by the last synchronize(); stream order
      auto [e, fresh] = needs.try_emplace(p.stream, p.end);
      if (!fresh) e->second = std::max(e->second, p.end);
    }
    std::map<DeviceQueue::Stream, DeviceQueue::Event>& seen = waited_[d.stream];
    for (const auto& [producer, event] : needs) {
      if (auto w = seen.find(producer); w != seen.end() && w->second >= event) continue;
      q_.wait(d.stream, event);
      seen[producer] = event;
    }
    if (epoch_ < 0) {
      epoch_ = q_.record(d.stream);
      anchor_ = now_();
    }
    d.start = q_.record(d.stream);
    if (t.action) {
      const DeviceQueue::Stream outside = q_.current_stream();
      q_.set_current_stream(d.stream);
      try {
        t.action();
      } catch (const std::exception& e) {
        q_.set_current_stream(outside);
        throw std::runtime_error("task " + t.name + ": " + e.what());
      }
      q_.set_current_stream(outside);
    }
    d.end = q_.record(d.stream);
    d.span = Span{rank_, t.role, t.name, t.category, 0.0, 0.0, t.cost.flops, t.cost.bytes_sent(), t.peer,
                  t.layer, t.expert, t.chunk, step_};
  }
  g.submitted_ = (int)g.size();
}

void StreamExecutor::wait(const TaskGraph& g, TaskId id) {
  if (id.graph != g.serial()) throw std::logic_error("StreamExecutor::wait: a task of another graph");
  q_.synchronize(done(g, id.index).end);
}

void StreamExecutor::complete(const std::vector<Done>& tasks) {
  std::map<DeviceQueue::Stream, DeviceQueue::Event> last;  // per stream: its last task's end
  for (const Done& d : tasks)
    if (d.end >= 0) last[d.stream] = std::max(last[d.stream], d.end);
  for (const auto& [stream, event] : last) q_.synchronize(event);
  for (const Done& d : tasks) {
    if (d.end < 0 || d.span.name.empty()) continue;  // not submitted; a join point
    Span s = d.span;
    s.start = anchor_ + q_.seconds_between(epoch_, d.start);
    s.end = anchor_ + q_.seconds_between(epoch_, d.end);
    spans_.push_back(std::move(s));
  }
}

void StreamExecutor::release(const TaskGraph& g) {
  auto it = graphs_.find(g.serial());
  if (it == graphs_.end()) return;
  complete(it->second);
  graphs_.erase(it);  // its events stay valid until synchronize() retires them
}

void StreamExecutor::synchronize() {
  for (const auto& [serial, tasks] : graphs_) complete(tasks);
  // Work enqueued outside the tasks (on the compute stream) is complete too.
  q_.synchronize(q_.record(stream_of(StreamRole::compute, false)));
  graphs_.clear();
  waited_.clear();  // every event has completed: no stream waits for an older one
  epoch_ = -1;
  q_.retire_events();
}

void StreamExecutor::run_inline(const std::string& name, StreamRole role, TaskCategory category,
                                const std::function<void()>& fn, int layer, double flops, uint64_t bytes) {
  Span s{rank_, role, name, category, now_(), 0.0, flops, bytes, -1, layer, -1, -1, step_};
  fn();
  s.end = now_();
  spans_.push_back(std::move(s));
}

void StreamExecutor::add_span(Span span) {
  span.rank = rank_;
  span.step = step_;
  spans_.push_back(std::move(span));
}

std::vector<Span> StreamExecutor::take_spans() { return std::exchange(spans_, {}); }

}  // namespace moebench
