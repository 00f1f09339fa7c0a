// Algorithm 2's LFU host cache of expert state records (sparse_state_cache.h).
#include "moebench/storage/sparse_state_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moebench {

ExpertStateView split_state_record(std::span<float> record) {
  if (record.size() % 3 != 0)
    throw std::invalid_argument("a state record holds 3 equal parts (weights, m, v); got " +
                                std::to_string(record.size()) + " floats");
  const size_t n = record.size() / 3;
  return {record.subspan(0, n), record.subspan(n, n), record.subspan(2 * n, n)};
}

SparseStateCache::SparseStateCache(ExpertStateFiles& files, int64_t floats_per_record, SparseCacheOptions options)
    : files_(files), floats_(floats_per_record), record_bytes_(floats_per_record * (int64_t)sizeof(float)),
      opt_(options) {
  if (floats_ < 1) throw std::invalid_argument("SparseStateCache: a record needs at least one float");
  if (opt_.budget_bytes < 0)
    throw std::invalid_argument("host cache budget must be >= 0 bytes (0 = unlimited), got " +
                                std::to_string(opt_.budget_bytes));
  if (opt_.budget_bytes > 0 && opt_.budget_bytes < record_bytes_)
    throw std::invalid_argument("host cache budget of " + std::to_string(opt_.budget_bytes) +
                                " bytes cannot hold one expert state record of " + std::to_string(record_bytes_) +
                                " bytes (storage.host_cache_bytes)");
  if (!(opt_.decay >= 0.0 && opt_.decay <= 1.0))
    throw std::invalid_argument("SparseStateCache: decay (beta) must be in [0, 1], got " + std::to_string(opt_.decay));
  if (opt_.decay_every < 0)
    throw std::invalid_argument("SparseStateCache: decay_every (K) must be >= 0, got " +
                                std::to_string(opt_.decay_every));
}

void SparseStateCache::write_back(const Key& k, Entry& e) {
  const int64_t before = files_.bytes_written();
  files_.write(k.block, k.expert, e.data);
  count_write_back(files_.bytes_written() - before);
  e.dirty = false;
}

std::optional<SparseStateCache::Evicted> SparseStateCache::take_victim() {
  if (opt_.budget_bytes == 0 || entries_.empty() || cached_bytes() + record_bytes_ <= opt_.budget_bytes)
    return std::nullopt;
  // The fewest hits among records at or above the threshold; all below it: the fewest overall.
  auto pick = [&](bool need_threshold) {
    auto best = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.pinned) continue;
      if (need_threshold && it->second.hits < opt_.hit_threshold) continue;
      if (best == entries_.end() || it->second.hits < best->second.hits ||
          (it->second.hits == best->second.hits && it->second.last_use < best->second.last_use))
        best = it;
    }
    return best;
  };
  auto victim = pick(true);
  if (victim == entries_.end()) victim = pick(false);
  if (victim == entries_.end())
    throw std::logic_error("SparseStateCache: every cached record is pinned, none can make room");
  Evicted out{victim->first.block, victim->first.expert, std::move(victim->second.data), victim->second.dirty};
  entries_.erase(victim);  // its hits go with it (Algorithm 2 line 25)
  ++stats_.evictions;
  return out;
}

void SparseStateCache::count_write_back(int64_t file_bytes) {
  stats_.bytes_written += file_bytes;
  ++stats_.write_backs;
}

void SparseStateCache::make_room() {
  while (std::optional<Evicted> v = take_victim())
    if (v->dirty) {
      const int64_t before = files_.bytes_written();
      files_.write(v->block, v->expert, v->data);
      count_write_back(files_.bytes_written() - before);
    }
}

void SparseStateCache::tick_decay() {
  if (opt_.decay_every == 0 || ++steps_ < opt_.decay_every) return;
  for (auto& [key, e] : entries_) e.hits *= opt_.decay;
  steps_ = 0;
}

std::span<float> SparseStateCache::get(int block, int expert) {
  const Key key{block, expert};
  ++clock_;
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    ++stats_.hits;
    it->second.hits += 1;
    it->second.last_use = clock_;
  } else {
    ++stats_.misses;
    make_room();
    Entry e;
    e.data.resize((size_t)floats_);
    const int64_t before = files_.bytes_read();
    files_.read(block, expert, e.data);  // throws before anything is cached
    stats_.bytes_read += files_.bytes_read() - before;
    e.hits = 1;
    e.last_use = clock_;
    it = entries_.emplace(key, std::move(e)).first;
  }
  std::span<float> out = it->second.data;
  tick_decay();
  return out;
}

std::span<float> SparseStateCache::put(int block, int expert, std::span<const float> record) {
  if ((int64_t)record.size() != floats_)
    throw std::invalid_argument("SparseStateCache::put: block " + std::to_string(block) + ", expert " +
                                std::to_string(expert) + ": " + std::to_string(record.size()) +
                                " floats, the cache's records have " + std::to_string(floats_));
  const Key key{block, expert};
  ++clock_;
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    make_room();
    Entry e;
    e.hits = 1;
    it = entries_.emplace(key, std::move(e)).first;
  }
  it->second.data.assign(record.begin(), record.end());
  it->second.dirty = true;
  it->second.last_use = clock_;
  return it->second.data;
}

void SparseStateCache::mark_dirty(int block, int expert) {
  auto it = entries_.find(Key{block, expert});
  if (it == entries_.end())
    throw std::out_of_range("SparseStateCache::mark_dirty: block " + std::to_string(block) + ", expert " +
                            std::to_string(expert) + " is not cached");
  it->second.dirty = true;
}

void SparseStateCache::flush() {
  for (auto& [key, e] : entries_)
    if (e.dirty) write_back(key, e);
}

void SparseStateCache::clear() {
  flush();
  entries_.clear();
}

void SparseStateCache::insert_loaded(int block, int expert, std::vector<float> record, int64_t file_bytes) {
  if ((int64_t)record.size() != floats_ || contains(block, expert))
    throw std::logic_error("SparseStateCache::insert_loaded: block " + std::to_string(block) + ", expert " +
                           std::to_string(expert) + " is cached already or has the wrong size");
  if (opt_.budget_bytes > 0 && cached_bytes() + record_bytes_ > opt_.budget_bytes)
    throw std::logic_error("SparseStateCache::insert_loaded: no room (take_victim first)");
  ++clock_;
  ++stats_.misses;
  stats_.bytes_read += file_bytes;
  Entry e;
  e.data = std::move(record);
  e.hits = 1;
  e.pinned = true;
  e.last_use = clock_;
  entries_.emplace(Key{block, expert}, std::move(e));
  tick_decay();
}

void SparseStateCache::pin(int block, int expert, bool pinned) {
  auto it = entries_.find(Key{block, expert});
  if (it == entries_.end())
    throw std::out_of_range("SparseStateCache::pin: block " + std::to_string(block) + ", expert " +
                            std::to_string(expert) + " is not cached");
  it->second.pinned = pinned;
}

std::span<float> SparseStateCache::peek(int block, int expert) {
  auto it = entries_.find(Key{block, expert});
  return it == entries_.end() ? std::span<float>{} : std::span<float>(it->second.data);
}

bool SparseStateCache::contains(int block, int expert) const { return entries_.count(Key{block, expert}) > 0; }

bool SparseStateCache::is_dirty(int block, int expert) const {
  auto it = entries_.find(Key{block, expert});
  return it != entries_.end() && it->second.dirty;
}

double SparseStateCache::hits_of(int block, int expert) const {
  auto it = entries_.find(Key{block, expert});
  return it == entries_.end() ? 0.0 : it->second.hits;
}

}  // namespace moebench
