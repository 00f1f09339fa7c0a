#pragma once
// ShardedAdamW: AdamW (optim/adamw.h: the same update, bias correction and per-view weight
// decay) over only the parts of a ParamArena this rank updates, with the moments m and v
// allocated for those parts only, packed in arena order. storage.dense = "zero3"
// (storage/dense_shards.h) gives it this rank's shard of every dense layer plus its whole experts,
// so a rank's dense optimizer state is 1/N of the replicated AdamW's.
//
// Kept as its own class (not a mode of AdamW): its pieces are runs of the arena, not views; the
// update is adamw_update, AdamW's (the zero3-vs-replicated loss test checks the result).
// Checkpoints keep whole tensors: export_to / import_from copy the owned moments into and out
// of arena-layout arrays (AdamW::m() / v()). The moments live in the arena's memory (its
// backend's: the GPU's for a model there), and every copy and update runs there.
#include <cstddef>
#include <utility>
#include <vector>

#include "moebench/model/param_arena.h"
#include "moebench/optim/adamw.h"
#include "moebench/tensor/device_array.h"

namespace moebench {

class ShardedAdamW {
 public:
  // runs: arena ranges (offset, count) in floats, ascending and disjoint. Throws
  // std::invalid_argument for a run outside the arena or out of order.
  ShardedAdamW(const ParamArena& params, const std::vector<std::pair<size_t, size_t>>& runs, AdamWHyper h);
  // One update of the owned elements from params' gradients at the same offsets.
  void step(ParamArena& params, float lr, long t);

  size_t state_size() const { return state_; }  // floats in m (and in v) = elements updated
  // The owned elements' moments into (out of) arena-layout m, v (the arena's size each, in its
  // backend's memory: a whole AdamW's m() / v()).
  void export_to(float* m, float* v) const;
  void import_from(const float* m, const float* v);

 private:
  struct Piece {  // an owned run cut at view boundaries (one decay flag)
    size_t offset = 0, count = 0, state = 0;  // arena offset, elements, offset into m_ / v_
    bool decay = true;
  };
  AdamWHyper h_;
  Backend& be_;
  std::vector<Piece> pieces_;
  size_t state_ = 0;
  DeviceArray<float> m_, v_;
};

}  // namespace moebench
