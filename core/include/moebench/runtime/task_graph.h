#pragma once
// TaskGraph: the schedule of some work on one rank — tasks with a stream role, a category,
// dependencies, a cost and (when built with buffers) an action. Strategies build their MoE
// blocks' graphs with it (moe/moe_strategy.h), the trainer its step; the executor runs a
// graph for real (runtime/executor.h) and the simulator replays the same graph built without
// buffers (no actions), so the two engines cannot drift.
//
// Tasks are added in an order that is a valid schedule for every role: dependencies are
// given when a task is added (or later with add_dep) and must belong to the same graph; a
// dependency on a task of another graph, on itself, or a cycle is a programming error
// (std::logic_error from add / add_dep / topological_order, never a hang at run time).
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "moebench/runtime/stream_role.h"

namespace moebench {

// How a comm task's bytes_to_peer travel (what the simulator replays; the TrafficMeter counts
// every kind on this rank with the peer listed):
//   send  two-sided: the peer runs the matching task (same name, layer, expert, chunk and
//         occurrence among those) and receives them; a transfer starts once both tasks have
//         started, and a task ends when its sends and the transfers to it have arrived. Zero
//         bytes to every other member of a group is a barrier over that group.
//   get   one-sided pull: the bytes travel from the peer to this rank; no task on the peer.
//   put   one-sided put / accumulate: to the peer; no task on the peer.
enum class Transfer { send, get, put };

struct TaskCost {
  double flops = 0.0;                                   // floating-point operations
  std::vector<std::pair<int, uint64_t>> bytes_to_peer;  // (world rank, bytes) this task sends
  uint64_t copy_bytes = 0;                              // bytes a copy task moves locally
  bool device_copy = false;  // those bytes stay in device memory (else they cross to or from the host)
  Transfer transfer = Transfer::send;
  int messages = 1;  // sequential messages each transfer takes (a ring all-reduce: 2 (P-1))
  uint64_t bytes_sent() const;
  bool operator==(const TaskCost&) const = default;
};

struct GraphTask {
  std::string name;
  TaskCategory category = TaskCategory::compute;
  StreamRole role = StreamRole::compute;
  std::vector<int> deps;  // indices of earlier-added (or add_dep'ed) tasks of the same graph
  TaskCost cost;
  int layer = -1, expert = -1, chunk = -1;
  int peer = -1;          // world rank when the task talks to one peer, else -1
  // Runs on its role's priority lane: a worker (a simulated queue) of its own, so it never
  // waits behind the role's other tasks (MoNTA's EP priority, [strategy.monta] ep_priority).
  // Every task of a communicator must be on the same lane (their collectives keep one order).
  bool priority = false;
  std::function<void()> action;  // empty in a graph built without buffers
};

// A task of one graph: a graph's ids cannot be used with another graph.
struct TaskId {
  uint64_t graph = 0;
  int index = -1;
  bool valid() const { return index >= 0; }
};

class TaskGraph {
 public:
  TaskGraph();
  TaskGraph(TaskGraph&&) noexcept = default;
  TaskGraph& operator=(TaskGraph&&) noexcept = default;
  TaskGraph(const TaskGraph&) = delete;
  TaskGraph& operator=(const TaskGraph&) = delete;

  // Adds a task depending on `deps` (tasks of this graph; invalid ids are ignored), plus any
  // indices already in t.deps. Returns its id.
  TaskId add(GraphTask t, const std::vector<TaskId>& deps = {});
  // `task` waits for `dep` too. Both must be tasks of this graph; task must not have been
  // submitted to an executor yet.
  void add_dep(TaskId task, TaskId dep);
  // Moves task `index` to (or off) its role's priority lane; it must not be submitted yet.
  void set_priority(int index, bool priority);

  size_t size() const { return tasks_.size(); }
  const GraphTask& task(int index) const { return tasks_.at((size_t)index); }
  const GraphTask& operator[](TaskId id) const;
  const std::vector<GraphTask>& tasks() const { return tasks_; }
  TaskId id(int index) const { return {serial_, index}; }
  uint64_t serial() const { return serial_; }

  // Indices [from, size()) in an order where every task comes after those of its dependencies
  // that are in [from, size()) (insertion order where possible). Throws std::logic_error
  // naming the tasks of a cycle, or a dependency index outside [0, size()).
  std::vector<int> topological_order(int from = 0) const;

  // Tasks, roles, categories, dependencies, costs and labels equal; actions are not
  // compared, only whether each task has one when with_actions is true.
  bool same_schedule(const TaskGraph& other, bool with_actions = false) const;

  // Tasks handed to an executor so far (Executor::submit submits [submitted(), size())).
  int submitted() const { return submitted_; }

 private:
  friend class ThreadExecutor;
  friend class StreamExecutor;
  void check_own(TaskId id, const char* what) const;
  uint64_t serial_;
  std::vector<GraphTask> tasks_;
  int submitted_ = 0;
  const void* executor_ = nullptr;  // the executor it was submitted to
};

}  // namespace moebench
