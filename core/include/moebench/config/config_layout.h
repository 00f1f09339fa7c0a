#pragma once
// The ParallelLayout (dist/parallel_layout.h) a config describes: run.ranks laid out as
// [parallel] pp x dp x tp, experts over ep, the model's blocks over the stages. Everything that
// needs a rank's place or a group's members reads it from here.
#include "moebench/config/config.h"
#include "moebench/dist/parallel_layout.h"

namespace moebench {

// Where the experts of the config's strategy go: inside the TP group for ppmoe (Pipeline MoE
// §3.3), else over the data-parallel group.
ExpertGroups expert_groups_of(const Config& cfg);

// The layout of cfg's run.ranks ranks (experts of every MoE block checked against ep). Throws
// std::invalid_argument naming the violated rule (config validation reports them by key first).
ParallelLayout layout_of(const Config& cfg);

}  // namespace moebench
