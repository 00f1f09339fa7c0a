#pragma once
// What the memory models (memory_model.h, trainer_memory.h) read from a config: its
// ParallelLayout (config/config_layout.h) and, beside it, the micro-batch of a data-parallel
// rank, the pipeline schedule and the splits of the embedding and head.
#include "moebench/config/config.h"
#include "moebench/dist/parallel_layout.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/model/pipeline_schedule.h"

namespace moebench::memory_detail {

struct Layout {
  ParallelLayout par;
  bool vocab_parallel = false;  // embedding and head split over the TP group
  bool embedding_partition = false;  // embed.wte's columns split over the DP group (MoESys §IV-C)
  int microbatches = 1;
  int b = 0;                // sequences of one micro-batch on one data-parallel rank
  PipeSchedule schedule = PipeSchedule::one_f_one_b;
  PipeStage stage(int s) const;  // with its micro-batches in flight
  TpShard tp() const;            // rank 0's
  ExpertShard experts() const;   // rank 0's
  EmbedShard embed() const;      // rank 0's
};

// Throws std::invalid_argument when the config's layout is impossible (layout_of).
Layout layout_of(const Config& cfg);

}  // namespace moebench::memory_detail
