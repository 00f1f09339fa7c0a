#include "moebench/storage/ring_memory.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

namespace moebench {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

RingMemory::RingMemory(MoeGpt& model, int slots, bool prefetch) : model_(model), prefetch_(prefetch) {
  const float* base = model.params().data();
  size_t expert_floats = 0, largest = 0;
  for (const BlockExperts& b : model.expert_ranges()) {
    BlockSource s;
    s.block = b.block;
    s.first = base + b.range.offset;
    s.count = b.range.count;
    s.arena = model.expert_params(b.block);
    blocks_.push_back(std::move(s));
    expert_floats += b.range.count;
    largest = std::max(largest, b.range.count);
  }
  const int L = (int)blocks_.size();
  if (slots < 1 || slots > L)
    throw std::invalid_argument("ring memory: " + std::to_string(slots) + " slots for a model with " +
                                std::to_string(L) + " MoE block(s) (expected 1 to " + std::to_string(L) + ")");
  slots_.resize((size_t)slots);
  for (Slot& s : slots_) s.buffer.assign(largest, 0.0f);
  const size_t whole = model.params().size() * sizeof(float);
  stats_.ring_bytes = (size_t)slots * largest * sizeof(float);
  stats_.resident_bytes = whole;
  stats_.device_bytes = whole - expert_floats * sizeof(float) + stats_.ring_bytes;
  model_.set_expert_source(this);
  thread_ = std::thread([this] { loader(); });
}

RingMemory::~RingMemory() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  model_.set_expert_source(nullptr);
}

// Load n (n = 0, 1, ...) brings position n mod L into slot n mod K, once that slot's previous
// block (load n - K) has been released.
void RingMemory::loader() {
  const long K = (long)slots_.size(), L = (long)blocks_.size();
  for (long n = 0;; ++n) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || (released_ > n - K && (prefetch_ || requested_ > n)); });
      if (stop_) return;
    }
    Slot& slot = slots_[(size_t)(n % K)];
    const int pos = (int)(n % L);
    if (slot.holds != pos) {  // with K = L every block stays where it is after the first pass
      const BlockSource& b = blocks_[(size_t)pos];
      const auto t0 = std::chrono::steady_clock::now();
      std::memcpy(slot.buffer.data(), b.first, b.count * sizeof(float));
      slot.experts.clear();
      auto rebase = [&](const float* p) { return p ? slot.buffer.data() + (p - b.first) : nullptr; };
      for (const ExpertParams& e : b.arena) slot.experts.push_back({rebase(e.w1), rebase(e.b1), rebase(e.w2), rebase(e.b2)});
      const double took = seconds_since(t0);
      std::lock_guard<std::mutex> lock(mu_);
      slot.holds = pos;
      ++stats_.loads;
      stats_.load_seconds += took;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      loaded_ = n + 1;
    }
    cv_.notify_all();
  }
}

const std::vector<ExpertParams>& RingMemory::acquire(int block) {
  std::unique_lock<std::mutex> lock(mu_);
  const long n = acquired_;
  const BlockSource& expected = blocks_[(size_t)(n % (long)blocks_.size())];
  if (block != expected.block)
    throw std::logic_error("ring memory: block " + std::to_string(block) + " acquired where block " +
                           std::to_string(expected.block) + " comes next (blocks run in forward order)");
  const auto t0 = std::chrono::steady_clock::now();
  requested_ = n + 1;
  cv_.notify_all();
  cv_.wait(lock, [&] { return loaded_ > n; });
  stats_.exposed_seconds += seconds_since(t0);
  ++acquired_;
  return slots_[(size_t)(n % (long)slots_.size())].experts;
}

void RingMemory::release(int block) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (released_ >= acquired_)
      throw std::logic_error("ring memory: block " + std::to_string(block) + " released without acquire");
    ++released_;
  }
  cv_.notify_all();
}

RingStats RingMemory::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace moebench
