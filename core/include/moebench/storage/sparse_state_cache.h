#pragma once
// The host (CPU-Node) tier of MoESys's hierarchical storage: an LFU cache of expert state records
// over the SSD tier (storage/expert_state_store.h), after moesys.txt §III-B2, Algorithm 2.
//
// Algorithm 2, as built here (one "request" = one get(), the paper's SparseSchedule call):
//   hit:   hits[p] += 1
//   miss, room in the budget:  hits[p] = 1, load p from its file
//   miss, cache full:          evict the victim (below), write it back if dirty, forget its hits,
//                              then load p with hits[p] = 1 (repeated until p fits)
//   after every request:       steps += 1; when steps == K, every hits value *= beta, steps = 0.
// Decisions where the paper is loose:
// - Budget in bytes (storage.host_cache_bytes), not records; "room" = the cached bytes plus the
//   new record fit (the paper's `acc + 1 < CPU_size` would leave one slot unused).
// - Victim: line 22 evicts a record whose hits >= threshold and equal the minimum of all hits;
//   the text says "the lowest hit frequency that surpasses the hit threshold". We take the text:
//   among records with hits >= threshold, the fewest hits; records below the threshold (newly
//   loaded ones, with threshold > 1) are protected. When every record is protected the request
//   must still be served, so the fewest hits overall is evicted (plain LFU). Ties: the least
//   recently used (every get/put has its own tick), so orders are deterministic. With decay,
//   a record decayed below the threshold is protected too (as in the paper, where it is never
//   evicted): a threshold above 0 suits short runs or a decay close to 1; the default 0 is LFU.
// - Only dirty records are written back on eviction (a clean one equals its file); flush()
//   writes back every dirty record (the paper's "sparse parameter update cycle").
// - The decay clock counts requests as Algorithm 2 does (lines 27-30), not training steps.
// - Victims are found by a scan of the cached records: the cache holds the experts of one rank
//   (tens to thousands), small beside a record's transfer.
// A span returned by get()/put()/peek() stays valid until the record is evicted (a later get(),
// put(), take_victim() or clear() may; pin() prevents it). Not thread-safe: the SSD tier
// serialises its calls.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "moebench/storage/expert_state_store.h"

namespace moebench {

struct SparseCacheOptions {
  int64_t budget_bytes = 0;    // host memory for records, bytes; 0 = unlimited (storage.host_cache_bytes)
  double hit_threshold = 0.0;  // Algorithm 2's threshold: records with fewer hits are evicted last (0 = plain LFU)
  double decay = 0.5;          // beta: every hits value is multiplied by it every decay_every requests
  int decay_every = 0;         // K, requests; 0 = no decay
};

// Counters for `runs show` (exact: every request is a hit or a miss).
struct SparseCacheStats {
  int64_t hits = 0, misses = 0;
  int64_t evictions = 0;       // records dropped to make room
  int64_t write_backs = 0;     // dirty records written to their files (evictions and flush)
  int64_t bytes_read = 0;      // file bytes read on misses (headers included)
  int64_t bytes_written = 0;   // file bytes written by write-backs (headers included)
};

// One expert's state record split into its three parts (params floats each).
struct ExpertStateView {
  std::span<float> weights, m, v;  // fp32 master weights, Adam first and second moments
};
ExpertStateView split_state_record(std::span<float> record);  // record.size() must be divisible by 3

class SparseStateCache {
 public:
  // `files` outlives the cache; every record has `floats_per_record` floats
  // (3 x expert_param_count). Throws std::invalid_argument when the budget is smaller than one
  // record, floats_per_record < 1, decay outside [0, 1] or decay_every < 0.
  SparseStateCache(ExpertStateFiles& files, int64_t floats_per_record, SparseCacheOptions options);

  // Algorithm 2 for one request: the record of (block, expert), from the cache or its file.
  // ExpertStateError when its file is missing or corrupt (nothing is then cached or evicted
  // beyond what made room).
  std::span<float> get(int block, int expert);
  // Stores `record` as the state of (block, expert) (initial states, a resume), dirty; counts
  // neither a request nor a hit. Evicts as a miss does.
  std::span<float> put(int block, int expert, std::span<const float> record);
  // The cached record of (block, expert) was updated: write it back before dropping it.
  // std::out_of_range when it is not cached.
  void mark_dirty(int block, int expert);
  void flush();  // writes back every dirty record; they stay cached, clean
  void clear();  // flush(), then drops every record (and its hits)

  // For a loader that reads and writes records outside the cache (the SSD tier's io tasks,
  // storage/expert_state_tier.h): take_victim() removes the record Algorithm 2 evicts when one more
  // would not fit (nullopt: it fits), never a pinned one (std::logic_error when only pinned
  // records are left: the caller's schedule is wrong), counted as an eviction; the caller writes
  // it back when dirty and counts it (count_write_back). insert_loaded() adds the record read from
  // its file, counted as Algorithm 2's miss (hits = 1, one request), pinned.
  struct Evicted {
    int block = 0, expert = 0;
    std::vector<float> data;
    bool dirty = false;
  };
  std::optional<Evicted> take_victim();
  void count_write_back(int64_t file_bytes);
  void insert_loaded(int block, int expert, std::vector<float> record, int64_t file_bytes);
  // A pinned record is never evicted (one whose update is pending). std::out_of_range when not cached.
  void pin(int block, int expert, bool pinned = true);
  // The cached record without a request (no hit counted); empty when not cached.
  std::span<float> peek(int block, int expert);

  bool contains(int block, int expert) const;
  bool is_dirty(int block, int expert) const;  // false when not cached
  double hits_of(int block, int expert) const;  // 0 when not cached
  int64_t cached_records() const { return (int64_t)entries_.size(); }
  int64_t cached_bytes() const { return cached_records() * record_bytes_; }
  int64_t record_bytes() const { return record_bytes_; }
  // Records the budget holds (0: unlimited).
  int64_t capacity_records() const { return opt_.budget_bytes > 0 ? opt_.budget_bytes / record_bytes_ : 0; }
  const SparseCacheStats& stats() const { return stats_; }

 private:
  struct Key {
    int block, expert;
    auto operator<=>(const Key&) const = default;
  };
  struct Entry {
    std::vector<float> data;
    double hits = 0;
    bool dirty = false;
    bool pinned = false;
    uint64_t last_use = 0;  // request tick of the last get/put (ties between equal hits)
  };
  void make_room();                     // evicts until one more record fits
  void write_back(const Key& k, Entry& e);
  void tick_decay();

  ExpertStateFiles& files_;
  int64_t floats_;
  int64_t record_bytes_;
  SparseCacheOptions opt_;
  std::map<Key, Entry> entries_;
  uint64_t clock_ = 0;  // requests and puts, for recency
  int steps_ = 0;       // Algorithm 2's `steps` (requests since the last decay)
  SparseCacheStats stats_;
};

}  // namespace moebench
