#include "moebench/model/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>

namespace moebench {

std::vector<PipeOp> pipeline_ops(PipeSchedule s, int stages, int stage, int micro) {
  if (stages < 1 || stage < 0 || stage >= stages || micro < 1)
    throw std::invalid_argument("pipeline_ops: bad stage " + std::to_string(stage) + " of " + std::to_string(stages) +
                                " with " + std::to_string(micro) + " micro-batches");
  using K = PipeOp::Kind;
  std::vector<PipeOp> ops;
  if (s == PipeSchedule::gpipe) {
    for (int m = 0; m < micro; ++m) ops.push_back({K::forward, m});
    for (int m = 0; m < micro; ++m) ops.push_back({K::backward, m});
    return ops;
  }
  const int warmup = std::min(stages - stage - 1, micro);
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.push_back({K::forward, f});
  while (f < micro) {  // steady state: one forward, one backward
    ops.push_back({K::forward, f++});
    ops.push_back({K::backward, b++});
  }
  while (b < micro) ops.push_back({K::backward, b++});  // cool-down
  return ops;
}

int pipeline_slots(PipeSchedule s, int stages, int stage, int micro) {
  if (s == PipeSchedule::gpipe) return micro;
  return std::min(stages - stage, micro);
}

}  // namespace moebench
