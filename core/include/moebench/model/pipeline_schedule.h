#pragma once
// Pipeline-parallel schedules: the order in which one stage runs the forward and backward
// passes of a step's micro-batches (the blocks of each stage: dist/parallel_layout.h).
//   gpipe: every forward, then every backward (GPipe; all micro-batches' activations live);
//   1f1b:  PipeDream-flush (Narayanan et al. 2021, Megatron's default): stage s of p runs
//          min(p - s - 1, m) warm-up forwards, then alternates one forward and one backward
//          (steady state), then drains the remaining backwards (cool-down); at most p - s
//          micro-batches are in flight, so it keeps that many activation sets instead of m.
// Backwards run in micro-batch order in both, so gradients accumulate in the same order as a
// single rank's gradient accumulation. A stage with p = 1 runs F0 B0 F1 B1 ... (1f1b) or all
// forwards then all backwards (gpipe).
#include <vector>

#include "moebench/config/config_choices.h"  // PipeSchedule (parallel.schedule)

namespace moebench {

struct PipeOp {
  enum class Kind { forward, backward } kind;
  int micro;
  bool operator==(const PipeOp&) const = default;
};


// The ops of `stage` (0-based) of `stages` over `micro` micro-batches.
std::vector<PipeOp> pipeline_ops(PipeSchedule s, int stages, int stage, int micro);
// Activation sets the stage keeps at once; micro-batch m uses set m % pipeline_slots(...).
int pipeline_slots(PipeSchedule s, int stages, int stage, int micro);

}  // namespace moebench
