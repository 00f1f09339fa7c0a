#include "moebench/runtime/task_graph.h"

#include <algorithm>
#include <atomic>
#include <queue>
#include <stdexcept>

namespace moebench {
namespace {
std::atomic<uint64_t> next_serial{1};
}

uint64_t TaskCost::bytes_sent() const {
  uint64_t total = 0;
  for (const auto& [peer, bytes] : bytes_to_peer) total += bytes;
  return total;
}

TaskGraph::TaskGraph() : serial_(next_serial++) {}

void TaskGraph::check_own(TaskId id, const char* what) const {
  if (id.graph != serial_)
    throw std::logic_error(std::string("task graph: ") + what + " is a task of another graph");
  if (id.index < 0 || (size_t)id.index >= tasks_.size())
    throw std::logic_error(std::string("task graph: ") + what + " index " + std::to_string(id.index) +
                           " is out of range");
}

TaskId TaskGraph::add(GraphTask t, const std::vector<TaskId>& deps) {
  const int index = (int)tasks_.size();
  for (int d : t.deps)
    if (d < 0 || d >= index)
      throw std::logic_error("task graph: task '" + t.name + "' depends on index " + std::to_string(d) +
                             ", not an earlier task");
  for (const TaskId& d : deps) {
    if (!d.valid()) continue;
    check_own(d, ("dependency of '" + t.name + "'").c_str());
    t.deps.push_back(d.index);
  }
  std::sort(t.deps.begin(), t.deps.end());
  t.deps.erase(std::unique(t.deps.begin(), t.deps.end()), t.deps.end());
  tasks_.push_back(std::move(t));
  return {serial_, index};
}

void TaskGraph::add_dep(TaskId task, TaskId dep) {
  check_own(task, "task");
  check_own(dep, "dependency");
  GraphTask& t = tasks_[(size_t)task.index];
  if (task.index == dep.index) throw std::logic_error("task graph: task '" + t.name + "' depends on itself");
  if (task.index < submitted_)
    throw std::logic_error("task graph: task '" + t.name + "' was already submitted; its dependencies are fixed");
  if (std::find(t.deps.begin(), t.deps.end(), dep.index) == t.deps.end()) t.deps.push_back(dep.index);
}

void TaskGraph::set_priority(int index, bool priority) {
  GraphTask& t = tasks_.at((size_t)index);
  if (index < submitted_)
    throw std::logic_error("task graph: task '" + t.name + "' was already submitted; its lane is fixed");
  t.priority = priority;
}

const GraphTask& TaskGraph::operator[](TaskId id) const {
  check_own(id, "task");
  return tasks_[(size_t)id.index];
}

std::vector<int> TaskGraph::topological_order(int from) const {
  const int n = (int)tasks_.size();
  from = std::clamp(from, 0, n);
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = from; i < n; ++i)
    for (int d : tasks_[(size_t)i].deps) {
      if (d < 0 || d >= n)
        throw std::logic_error("task graph: task '" + tasks_[(size_t)i].name + "' depends on index " +
                               std::to_string(d) + ", outside the graph");
      if (d == i) throw std::logic_error("task graph: task '" + tasks_[(size_t)i].name + "' depends on itself");
      if (d >= from) ++pending[i], users[d].push_back(i);
    }
  // Kahn's algorithm, smallest index first: insertion order whenever it is valid.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = from; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(n - from);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if ((int)order.size() != n - from) {
    std::string names;
    int listed = 0;
    for (int i = from; i < n && listed < 8; ++i)
      if (pending[i] > 0) names += (listed++ ? ", '" : "'") + tasks_[(size_t)i].name + "'";
    throw std::logic_error("task graph: the dependencies form a cycle through " + names);
  }
  return order;
}

bool TaskGraph::same_schedule(const TaskGraph& other, bool with_actions) const {
  if (tasks_.size() != other.tasks_.size()) return false;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const GraphTask& a = tasks_[i];
    const GraphTask& b = other.tasks_[i];
    if (a.name != b.name || a.category != b.category || a.role != b.role || a.priority != b.priority || a.deps != b.deps ||
        !(a.cost == b.cost) || a.layer != b.layer || a.expert != b.expert || a.chunk != b.chunk || a.peer != b.peer)
      return false;
    if (with_actions && (bool)a.action != (bool)b.action) return false;
  }
  return true;
}

}  // namespace moebench
