#include "moebench/model/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>

namespace moebench {

PipeSchedule parse_pipe_schedule(const std::string& name) {
  if (name == "1f1b") return PipeSchedule::one_f_one_b;
  if (name == "gpipe") return PipeSchedule::gpipe;
  throw std::invalid_argument("pipeline schedule must be \"1f1b\" or \"gpipe\", got \"" + name + "\"");
}

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

std::vector<int> stage_boundaries(int layers, int stages, const std::vector<int>& stage_layers) {
  std::vector<int> b{0};
  if (stages < 1 || stages > layers)
    throw std::invalid_argument(std::to_string(stages) + " pipeline stages over " + std::to_string(layers) +
                                " blocks: every stage needs a block");
  if (stage_layers.empty()) {
    for (int s = 0; s < stages; ++s) b.push_back(b.back() + layers / stages + (s < layers % stages ? 1 : 0));
    return b;
  }
  if ((int)stage_layers.size() != stages)
    throw std::invalid_argument("parallel.stage_layers needs one entry per pipeline stage");
  for (int n : stage_layers) {
    if (n < 1) throw std::invalid_argument("parallel.stage_layers: every stage needs a block");
    b.push_back(b.back() + n);
  }
  if (b.back() != layers) throw std::invalid_argument("parallel.stage_layers does not sum to model.layers");
  return b;
}

}  // namespace moebench
