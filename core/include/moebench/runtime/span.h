#pragma once
// Span: one recorded execution of a task, with the task's typed role, category and cost.
// Times are seconds since the executor's epoch. Summaries, the DDL-roofline, traces and the
// step line read these fields (never stream-name conventions).
#include <cstdint>
#include <string>
#include <vector>

#include "moebench/runtime/stream_role.h"

namespace moebench {

struct Span {
  int rank = 0;
  StreamRole role = StreamRole::host;
  std::string name;
  TaskCategory category = TaskCategory::compute;
  double start = 0.0, end = 0.0;
  double flops = 0.0;
  uint64_t bytes = 0;  // sent to peers (from the cost)
  int peer = -1;       // single peer when the task talks to one, else -1
  int layer = -1;
  int expert = -1;
  int chunk = -1;
  long step = -1;
};

// Seconds of [begin, end) in which some comm span runs and no compute span does: the
// communication the schedule did not hide behind computation.
double exposed_comm_seconds(const std::vector<Span>& spans, double begin, double end);

}  // namespace moebench
