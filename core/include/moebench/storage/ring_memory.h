#pragma once
// Ring-memory offloaded inference (MoESys §III-C2, Fig. 4-5): the "device" holds the dense
// parameters and a ring of K slots, each big enough for one MoE block's experts; every expert
// stays in the host tier (the model's arena). The L MoE blocks take the slots in forward order,
// cycling (block i of every pass in slot (pass * L + i) mod K). A loader thread copies a block's
// experts into its slot ahead of use; "calculation-released-load": when block i's forward has
// read its slot, the slot is released and the load of the block K positions later starts, while
// blocks i+1.. compute. With K = L every block stays resident after the first pass (no reload).
// Without prefetch (the baseline of the paper's Fig. 12) a block is loaded only when its forward
// asks for it, so every load is exposed.
// On this CPU build the device tier is a bounded buffer and a load is a memcpy from the arena;
// the schedule and the accounting are the paper's.
//
// Accounting (RingStats): loads = copies done; load_seconds = their summed duration on the loader;
// exposed_seconds = how long forward waited in acquire() for a load (the rest of load_seconds was
// hidden behind computation); device_bytes = dense parameters + the ring (K x the largest MoE
// block's experts), against resident_bytes = the whole model held in place.
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "moebench/model/moe_gpt.h"

namespace moebench {

struct RingStats {
  long loads = 0;
  double load_seconds = 0, exposed_seconds = 0;
  size_t device_bytes = 0, resident_bytes = 0, ring_bytes = 0;
};

class RingMemory : public ExpertSource {
 public:
  // A ring of `slots` over `model`'s MoE blocks (1 <= slots <= the MoE blocks: std::invalid_argument
  // otherwise). Installs itself as the model's expert source; the destructor removes it.
  RingMemory(MoeGpt& model, int slots, bool prefetch = true);
  ~RingMemory() override;
  RingMemory(const RingMemory&) = delete;
  RingMemory& operator=(const RingMemory&) = delete;

  const std::vector<ExpertParams>& acquire(int block) override;
  void release(int block) override;
  RingStats stats() const;
  int blocks() const { return (int)blocks_.size(); }

 private:
  struct BlockSource {
    int block = 0;
    const float* first = nullptr;  // its experts' contiguous arena range
    size_t count = 0;
    std::vector<ExpertParams> arena;  // the arena's pointers (to rebase into a slot)
  };
  struct Slot {
    std::vector<float> buffer;
    int holds = -1;                   // position (index into blocks_) now loaded, -1 none
    std::vector<ExpertParams> experts;  // the held block's experts rebased into buffer
  };
  void loader();

  MoeGpt& model_;
  std::vector<BlockSource> blocks_;
  std::vector<Slot> slots_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  long loaded_ = 0;    // loads (sequence positions) finished, copied or already resident
  long acquired_ = 0;  // acquire() calls so far
  long released_ = 0;
  long requested_ = 0;  // without prefetch: loads the forward has asked for
  const bool prefetch_;
  bool stop_ = false;
  RingStats stats_;
  std::thread thread_;
};

}  // namespace moebench
