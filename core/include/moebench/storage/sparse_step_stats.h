#pragma once
// One training step's counters of MoESys's SSD tier (storage/expert_state_tier.h), for the step
// line, the run store and `runs show`.
#include <cstdint>

namespace moebench {

struct SparseStepStats {
  int64_t hits = 0, misses = 0;  // records found in the host cache / read from their files
  int64_t bytes_read = 0, bytes_written = 0;  // file bytes (headers included)
  int64_t evictions = 0;
  double stall_s = 0.0;   // the update phase's time not spent updating (waiting for loads)
  double update_s = 0.0;  // the update phase's wall time
  double hit_rate() const { return hits + misses > 0 ? double(hits) / double(hits + misses) : 0.0; }
};

}  // namespace moebench
