// MoESys's SSD tier in training (expert_state_tier.h).
#include "moebench/storage/expert_state_tier.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>

#include "moebench/config/usage_error.h"
#include "moebench/tensor/backend.h"

namespace moebench {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// "blocks.<B>.moe.experts.<E>.<piece>" -> (B, E); false for any other tensor.
bool parse_expert(const std::string& name, int& block, int& expert) {
  int consumed = 0;
  return std::sscanf(name.c_str(), "blocks.%d.moe.experts.%d.%n", &block, &expert, &consumed) == 2 && consumed > 0;
}

}  // namespace

std::vector<int> sparse_load_waits(int records, int cached, int free_slots, bool prefetch) {
  std::vector<int> waits;
  for (int j = 0; j < records - cached; ++j) {
    if (!prefetch) waits.push_back(cached + j - 1);  // the update just before its own (-1: the first)
    else waits.push_back(j >= free_slots ? j - free_slots : -1);
  }
  return waits;
}

bool is_expert_tensor(const std::string& name) {
  int block = 0, expert = 0;
  return parse_expert(name, block, expert);
}

ExpertStateTier::ExpertStateTier(MoeGpt& model, const StorageConfig& storage, const std::string& dir,
                                 const AdamWHyper& h)
    : model_(model), h_(h), prefetch_(storage.sparse_prefetch) {
  const ParamArena& params = model.params();
  place_.resize(params.views().size());
  std::map<std::pair<int, int>, int> index;
  int64_t floats = -1;
  for (size_t i = 0; i < params.views().size(); ++i) {
    const ParamView& v = params.views()[i];
    int block = 0, expert = 0;
    if (!parse_expert(v.name, block, expert)) continue;
    if (!v.slice.whole())
      throw std::invalid_argument("storage.sparse = \"ssd\" keeps whole experts; " + v.name +
                                  " is a tensor-parallel slice (moe.expert_tp with parallel.tp > 1)");
    auto [it, added] = index.emplace(std::make_pair(block, expert), (int)experts_.size());
    if (added) experts_.push_back({block, expert, {}});
    Expert& e = experts_[(size_t)it->second];
    const size_t at = e.pieces.empty() ? 0 : e.pieces.back().at + e.pieces.back().numel;
    place_[i] = {it->second, e.pieces.size()};
    e.pieces.push_back({i, at, v.numel, v.decay});
  }
  for (const Expert& e : experts_) {
    const int64_t n = (int64_t)(e.pieces.back().at + e.pieces.back().numel);
    if (floats >= 0 && n != floats) throw std::logic_error("ExpertStateTier: experts of different sizes");
    floats = n;
  }
  floats_ = 3 * std::max<int64_t>(floats, 1);
  files_ = std::make_unique<ExpertStateFiles>(dir, /*sync=*/false);  // see the header
  SparseCacheOptions o;
  o.budget_bytes = storage.host_cache_bytes;
  o.hit_threshold = storage.hit_threshold;
  o.decay = storage.decay;
  o.decay_every = storage.decay_every;
  cache_ = std::make_unique<SparseStateCache>(*files_, floats_, o);
  std::vector<float> rec((size_t)floats_, 0.0f);
  const std::vector<float> weights = params.host_data();  // a device's arena too
  for (const Expert& e : experts_) {
    for (const Piece& p : e.pieces)
      std::copy_n(weights.begin() + (long)params.views()[p.view].offset, p.numel, rec.begin() + (long)p.at);
    files_->write(e.block, e.expert, rec);  // moments zero, as AdamW starts
  }
  reported_ = cache_->stats();  // the first records are setup, not a step's traffic
  if (params.backend().device_memory())
    for (size_t i = 0; i < kSparseStagingSlots; ++i)
      staging_.emplace_back(params.backend()).ensure_data((size_t)(floats_ / 3));
}

ExpertStateTier::~ExpertStateTier() = default;

bool ExpertStateTier::holds(size_t view) const { return view < place_.size() && place_[view].expert >= 0; }

// On a device the gradients are in `staging` (sparse.grads_out) and the new weights go there
// (sparse.weights_in takes them to the arena): docs/gpu.md.
void ExpertStateTier::update_one(const Expert& e, std::span<float> rec, float lr, long t, float* staging) {
  const ExpertStateView s = split_state_record(rec);
  ParamArena& params = model_.params();
  for (const Piece& p : e.pieces) {
    float* w = s.weights.data() + p.at;
    const float* g = staging ? staging + p.at : params.grad(p.view);
    adamw_update(w, g, s.m.data() + p.at, s.v.data() + p.at, (long)p.numel, h_, lr, t, p.decay ? h_.weight_decay : 0.0f);
    std::copy_n(w, p.numel, staging ? staging + p.at : params.param(p.view));
  }
}

void add_sparse_update_tasks(TaskGraph& g, const std::vector<TaskId>& after, const std::vector<SparseUpdateRecord>& order,
                             int cached, int free_slots, bool prefetch, uint64_t record_bytes, double update_flops,
                             uint64_t device_bytes, const SparseTaskBinder& bind) {
  const std::vector<int> waits = sparse_load_waits((int)order.size(), cached, free_slots, prefetch);
  auto task = [&](const char* name, TaskCategory category, StreamRole role, size_t k) {
    GraphTask t;
    t.name = name;
    t.category = category;
    t.role = role;
    t.layer = order[k].block;
    t.expert = order[k].expert;
    return t;
  };
  auto add = [&](GraphTask t, SparseTask kind, size_t k, std::vector<TaskId> deps) {
    if (bind) bind(t, kind, k);
    if (deps.empty()) deps = after;  // the first tasks wait for what came before the phase
    return g.add(std::move(t), deps);
  };
  std::vector<TaskId> updates, weights_in;
  TaskId last_write;  // the previous load's write-back (prefetch)
  for (size_t k = 0; k < order.size(); ++k) {
    std::vector<TaskId> deps;
    if ((int)k >= cached) {
      const size_t j = k - (size_t)cached;  // the j-th load
      GraphTask l = task("sparse.load", TaskCategory::io, StreamRole::io, k);
      l.cost.copy_bytes = record_bytes;
      std::vector<TaskId> load_deps;
      if (const int w = waits[j]; w >= 0) load_deps.push_back(updates[(size_t)w]);
      // At most one evicted record waits for its write beside the one being read: the host
      // memory stays within the budget plus two records.
      if (last_write.valid()) load_deps.push_back(last_write);
      const TaskId load = add(std::move(l), SparseTask::load, k, load_deps);
      deps.push_back(load);
      if (prefetch) {
        GraphTask w = task("sparse.writeback", TaskCategory::io, StreamRole::copy, k);
        w.cost.copy_bytes = record_bytes;  // the victim it writes (one updated record)
        last_write = add(std::move(w), SparseTask::writeback, k, {load});
      }
    }
    if (device_bytes > 0) {  // the gradients into the slot, once the record two back left it
      GraphTask o = task("sparse.grads_out", TaskCategory::copy, StreamRole::copy, k);
      o.cost.copy_bytes = device_bytes;
      std::vector<TaskId> slot_free;
      if (k >= kSparseStagingSlots) slot_free.push_back(weights_in[k - kSparseStagingSlots]);
      deps.push_back(add(std::move(o), SparseTask::grads_out, k, slot_free));
    }
    GraphTask u = task("sparse.update", TaskCategory::compute, StreamRole::compute, k);
    u.cost.flops = update_flops;
    if (k > 0) deps.push_back(updates[k - 1]);
    updates.push_back(add(std::move(u), SparseTask::update, k, deps));
    if (device_bytes > 0) {
      GraphTask i = task("sparse.weights_in", TaskCategory::copy, StreamRole::copy, k);
      i.cost.copy_bytes = device_bytes;
      std::vector<TaskId> in_deps = {updates.back()};
      if (k > 0) in_deps.push_back(weights_in.back());  // in order: the last one ends the phase
      weights_in.push_back(add(std::move(i), SparseTask::weights_in, k, in_deps));
    }
  }
}

TaskId ExpertStateTier::add_update(TaskGraph& g, TaskId after, float lr, long t) {
  // Cached records first (pinned: no load may evict one before its update), then the others.
  std::vector<int> order;
  int cached = 0;
  {
    std::lock_guard<std::mutex> lock(m_);
    for (int pass = 0; pass < 2; ++pass)
      for (int i = 0; i < (int)experts_.size(); ++i) {
        const Expert& e = experts_[(size_t)i];
        const bool in_cache = cache_->contains(e.block, e.expert);
        if (in_cache != (pass == 0)) continue;
        order.push_back(i);
        if (in_cache) cache_->pin(e.block, e.expert), ++cached;
      }
  }
  int64_t room = (int64_t)order.size();  // free record slots in the host cache now
  if (const int64_t cap = cache_->capacity_records(); cap > 0) room = std::max<int64_t>(0, cap - cache_->cached_records());
  std::vector<SparseUpdateRecord> keys;
  for (int i : order) keys.push_back({experts_[(size_t)i].block, experts_[(size_t)i].expert});
  phase_ = std::make_shared<Phase>();
  phase_->busy.assign(order.size(), 0.0);
  // The victims load k evicts: written back by the load itself without prefetch, by the write
  // task beside it with (reads and writes then run at once).
  std::vector<std::shared_ptr<std::vector<SparseStateCache::Evicted>>> victims(order.size());
  const size_t first = g.size();
  Backend& be = model_.params().backend();
  const uint64_t device_bytes = staging_.empty() ? 0 : (uint64_t)(floats_ / 3) * sizeof(float);
  add_sparse_update_tasks(
      g, {after}, keys, cached, (int)std::min<int64_t>(room, INT_MAX), prefetch_, (uint64_t)cache_->record_bytes(),
      adamw_flops((size_t)floats_ / 3), device_bytes, [&](GraphTask& task, SparseTask kind, size_t k) {
        const Expert& e = experts_[(size_t)order[k]];
        float* slot = staging_.empty() ? nullptr : staging_[k % kSparseStagingSlots].data();
        std::function<void()> action;
        if (kind == SparseTask::grads_out) {
          action = [this, &e, &be, slot] {
            for (const Piece& p : e.pieces)
              be.to_host_async(slot + p.at, model_.params().grad(p.view), p.numel * sizeof(float));
          };
        } else if (kind == SparseTask::weights_in) {
          action = [this, &e, &be, slot] {
            for (const Piece& p : e.pieces)
              be.to_device_async(model_.params().param(p.view), slot + p.at, p.numel * sizeof(float));
          };
        } else if (kind == SparseTask::load) {
          auto out = victims[k] = std::make_shared<std::vector<SparseStateCache::Evicted>>();
          action = [this, &e, out] {
            {
              std::lock_guard<std::mutex> lock(m_);
              while (std::optional<SparseStateCache::Evicted> v = cache_->take_victim())  // an updated record
                if (v->dirty) out->push_back(std::move(*v));
            }
            if (!prefetch_) write_back(*out);
            std::vector<float> rec((size_t)floats_);
            const int64_t before = files_->bytes_read();
            files_->read(e.block, e.expert, rec);  // only this worker reads files during the update
            std::lock_guard<std::mutex> lock(m_);
            cache_->insert_loaded(e.block, e.expert, std::move(rec), files_->bytes_read() - before);
          };
        } else if (kind == SparseTask::writeback) {
          action = [this, out = victims[k]] { write_back(*out); };
        } else {
          const bool hit = (int)k < cached;
          action = [this, &e, &be, k, hit, lr, t, slot, phase = phase_] {
            if (slot) be.synchronize();  // sparse.grads_out's copy, which this task's stream waits for
            std::span<float> rec;
            {
              std::lock_guard<std::mutex> lock(m_);
              rec = hit ? cache_->get(e.block, e.expert) : cache_->peek(e.block, e.expert);  // a load counted its miss
            }
            const auto u0 = Clock::now();
            update_one(e, rec, lr, t, slot);  // the record is pinned: no load evicts it meanwhile
            phase->busy[k] = seconds_since(u0);
            std::lock_guard<std::mutex> lock(m_);
            cache_->mark_dirty(e.block, e.expert);
            cache_->pin(e.block, e.expert, false);
          };
        }
        // The phase's span: from its first task's start to its last task's end.
        task.action = [this, action = std::move(action), phase = phase_] {
          const Clock::time_point start = Clock::now();
          action();
          std::lock_guard<std::mutex> lock(m_);
          phase->start = std::min(phase->start, start);
          phase->end = std::max(phase->end, Clock::now());
        };
      });
  return g.size() > first ? g.id((int)g.size() - 1) : after;
}

void ExpertStateTier::write_back(std::vector<SparseStateCache::Evicted>& victims) {
  for (SparseStateCache::Evicted& v : victims) {
    const int64_t before = files_->bytes_written();
    files_->write(v.block, v.expert, v.data);  // a file no load of this step reads (it was updated)
    const int64_t bytes = files_->bytes_written() - before;
    std::lock_guard<std::mutex> lock(m_);
    cache_->count_write_back(bytes);
  }
  victims.clear();
}

SparseStepStats ExpertStateTier::take_step_stats() {
  std::lock_guard<std::mutex> lock(m_);
  if (phase_ && phase_->end > phase_->start) {  // the last update's phase ran
    const double span = std::chrono::duration<double>(phase_->end - phase_->start).count();
    double busy = 0.0;
    for (double b : phase_->busy) busy += b;
    update_s_ += span;
    stall_s_ += std::max(0.0, span - busy);
  }
  phase_.reset();
  const SparseCacheStats& now = cache_->stats();
  SparseStepStats s;
  s.hits = now.hits - reported_.hits;
  s.misses = now.misses - reported_.misses;
  s.evictions = now.evictions - reported_.evictions;
  s.bytes_read = now.bytes_read - reported_.bytes_read;
  s.bytes_written = now.bytes_written - reported_.bytes_written;
  s.stall_s = stall_s_;
  s.update_s = update_s_;
  reported_ = now;
  stall_s_ = update_s_ = 0.0;
  return s;
}

std::span<float> ExpertStateTier::record_of(const Expert& e) {
  if (std::span<float> rec = cache_->peek(e.block, e.expert); !rec.empty()) return rec;
  // Not cached: the file's record, without disturbing the cache (a checkpoint reads every one).
  static thread_local std::vector<float> scratch;
  scratch.resize((size_t)floats_);
  files_->read(e.block, e.expert, scratch);
  return scratch;
}

void ExpertStateTier::read_moments(size_t view, float* m, float* v) {
  if (!holds(view)) throw std::logic_error("ExpertStateTier::read_moments: view " + std::to_string(view) + " is no expert's");
  const Expert& e = experts_[(size_t)place_[view].expert];
  const Piece& p = e.pieces[place_[view].piece];
  std::lock_guard<std::mutex> lock(m_);
  const ExpertStateView s = split_state_record(record_of(e));
  std::copy_n(s.m.data() + p.at, p.numel, m);
  std::copy_n(s.v.data() + p.at, p.numel, v);
}

void ExpertStateTier::load_moments(size_t view, const float* w, const float* m, const float* v) {
  if (!holds(view)) throw std::logic_error("ExpertStateTier::load_moments: view " + std::to_string(view) + " is no expert's");
  const Expert& e = experts_[(size_t)place_[view].expert];
  const Piece& p = e.pieces[place_[view].piece];
  std::lock_guard<std::mutex> lock(m_);
  // Through the cache (a get, as any request), then written back with the others by the next flush.
  const ExpertStateView s = split_state_record(cache_->get(e.block, e.expert));
  std::copy_n(w, p.numel, s.weights.data() + p.at);
  std::copy_n(m, p.numel, s.m.data() + p.at);
  std::copy_n(v, p.numel, s.v.data() + p.at);
  cache_->mark_dirty(e.block, e.expert);
}

}  // namespace moebench

namespace moebench {

FolderLock claim_expert_state_dir(const StorageConfig& storage, int rank) {
  const std::string dir = storage.ssd_dir + "/rank" + std::to_string(rank);
  // One run per folder: another run's write-backs would be valid records (their checksums pass).
  try {
    return lock_folder(dir, "use another storage.ssd_dir");
  } catch (const UsageError&) {
    throw UsageError("storage.ssd_dir: " + dir + " holds the expert states of another moebench run that is still "
                     "going (lock " + dir + "/.moebench.lock): wait for it to end, or use another storage.ssd_dir");
  } catch (const std::runtime_error& e) {
    throw ExpertStateError(dir, -1, -1, std::string("storage.ssd_dir: ") + e.what());
  }
}

std::unique_ptr<ExpertStateTier> open_expert_tier(MoeGpt& model, const StorageConfig& storage, int rank,
                                                  const AdamWHyper& h) {
  const std::string dir = storage.ssd_dir + "/rank" + std::to_string(rank);
  FolderLock lock = claim_expert_state_dir(storage, rank);
  // The device tier is the arena (host memory on the CPU, the GPU's on cuda): every local
  // expert's weights and gradients.
  size_t expert_floats = 0;
  for (const BlockExperts& b : model.expert_ranges()) expert_floats += b.range.count;
  const int64_t device = 2 * (int64_t)(expert_floats * sizeof(float));
  if (storage.device_bytes > 0 && device > storage.device_bytes)
    throw std::invalid_argument("storage.device_bytes = " + std::to_string(storage.device_bytes) +
                                " cannot hold this rank's experts' weights and gradients (" + std::to_string(device) +
                                " bytes; the trainer keeps every expert of the rank in its arena)");
  auto tier = std::make_unique<ExpertStateTier>(model, storage, dir, h);
  tier->lock_ = std::move(lock);
  return tier;
}

}  // namespace moebench
