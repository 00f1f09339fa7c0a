#pragma once
// The ParallelLayout (dist/parallel_layout.h) a config describes: run.ranks laid out as
// [parallel] pp x dp x tp, experts over ep (or the TP group: the strategy's StrategySpec::expert_groups), the model's blocks over the stages. Everything that
// needs a rank's place or a group's members reads it from here.
#include "moebench/config/config.h"
#include "moebench/dist/parallel_layout.h"

namespace moebench {

// The layout of cfg's run.ranks ranks (experts of every MoE block checked against ep). Throws
// std::invalid_argument naming the violated rule (config validation reports them by key first).
ParallelLayout layout_of(const Config& cfg);

}  // namespace moebench
