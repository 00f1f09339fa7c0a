#pragma once
// The parallel layout the memory models (memory_model.h, trainer_memory.h) read from a config:
// Megatron's pp x dp x tp world, experts over runs of ep data-parallel ranks (over the TP group
// for ppmoe), the micro-batch of a data-parallel rank and each stage's blocks.
#include <vector>

#include "moebench/config/config.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/model/pipeline_schedule.h"

namespace moebench::memory_detail {

struct Layout {
  int t = 1, p = 1, d = 1;
  int ep = 1;        // ranks the experts of a block divide over
  int replicas = 1;  // ranks holding the same experts
  bool ppmoe = false;
  bool vocab_parallel = false;  // embedding and head split over the TP group
  bool embedding_partition = false;  // embed.wte's columns split over the DP group (MoESys §IV-C)
  int microbatches = 1;
  int b = 0;                // sequences of one micro-batch on one data-parallel rank
  std::vector<int> bounds;  // stage s holds blocks [bounds[s], bounds[s + 1])
  PipeSchedule schedule = PipeSchedule::one_f_one_b;
  PipeStage stage(int s) const;  // with its micro-batches in flight
  TpShard tp() const;            // rank 0's
  ExpertShard experts() const;   // rank 0's
  EmbedShard embed() const;      // rank 0's
};

// Throws std::invalid_argument when run.ranks is not pp x dp x tp or the blocks do not split.
Layout layout_of(const Config& cfg);

}  // namespace moebench::memory_detail
