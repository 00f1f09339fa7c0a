#pragma once
// Tasks, their cost descriptors and the spans the executor records. The same task list with
// its costs is what the simulator (perf/) replays on a described cluster.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace moebench {

enum class TaskCategory { compute, comm, copy, io };
const char* task_category_name(TaskCategory c);

struct TaskCost {
  double flops = 0.0;
  std::vector<std::pair<int, uint64_t>> bytes_to_peer;  // (world rank, bytes) this task sends
};

// One recorded execution of a task. Times are seconds since the executor's epoch.
struct Span {
  int rank = 0;
  std::string stream;
  std::string name;
  TaskCategory category = TaskCategory::compute;
  double start = 0.0, end = 0.0;
  uint64_t bytes = 0;  // total sent (from the cost)
  int peer = -1;       // single peer when the task talks to one, else -1
  int layer = -1;
  int expert = -1;
  long step = -1;
};

class Event;
class Stream;

struct Task {
  std::string name;
  TaskCategory category = TaskCategory::compute;
  Stream* stream = nullptr;   // where it runs (Executor::submit requires it)
  std::vector<Event*> deps;   // events that must have fired before it starts
  TaskCost cost;
  std::function<void()> action;
  int layer = -1, expert = -1, peer = -1;
};

}  // namespace moebench
