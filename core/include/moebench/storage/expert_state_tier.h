#pragma once
// MoESys's hierarchical storage in training (moesys.txt §III-B1, storage.sparse = "ssd"): the
// experts' optimizer states (fp32 master weights + Adam m + v, one record per expert,
// storage/expert_state_store.h) live in files under storage.ssd_dir/rank<R>, behind the LFU host
// cache of Algorithm 2 (storage/sparse_state_cache.h, storage.host_cache_bytes); AdamW keeps only
// the dense parameters' moments (optim/adamw.h OffloadedMoments).
//
// Each step, after the gradients are final, AdamW runs on every expert of the rank through its
// record, as tasks after the optimizer's in the step's graph (add_update; update() runs them as
// a graph of their own):
//   sparse.load      (io role)      a record not in the host cache read from its file (a miss),
//                                   after evicting an updated record to make room
//   sparse.writeback (copy role)    with prefetch: the evicted record written back while the
//                                   io role reads the next (without: the load writes it first)
//   sparse.update    (compute role) AdamW on the record (adamw_update: the bits of in-memory
//                                   training), the new weights copied into the arena (the
//                                   "device" copy the model computes with)
// When the arena is a GPU's (device copies), the copies between it and the host go on the copy
// role through page-locked staging (two slots, so one expert's copies overlap the next's update):
//   sparse.grads_out (copy role)    the expert's gradients from the arena into a staging slot
//   sparse.update                   waits for them on the host, AdamW into the record, the new
//                                   weights into the slot
//   sparse.weights_in (copy role)   the slot's weights into the arena
// Records already cached are updated first (hits), then the others in (block, expert) order.
// With storage.sparse_prefetch (Algorithm 2's prefetch) a load waits only for the update that
// frees its cache slot, so reads, write-backs and updates overlap; without it each load waits
// for the previous update and does its own write-back (the ablation baseline: no overlap).
// A load also waits for the previous load's write-back, so the records in host memory stay within
// storage.host_cache_bytes plus two (one being read, one being written).
// Updates cannot start before the backward ends (gradient clipping needs every gradient), so the
// overlap is with the updates, not with forward and backward.
// Decisions:
// - Every expert is updated every step, not only the active ones: AdamW's moments and weight
//   decay move an expert that got no tokens too, and the losses must equal in-memory training.
//   So the set a step needs is every record, known in advance; the previous step's routing
//   (Algorithm 2's prediction) would only reorder it. The host cache then saves the reads of the
//   records it holds (hit rate = cached records / records when the cache is smaller).
// - The arena keeps every local expert's weights and gradients (the device tier is the arena, in
//   host memory on the CPU and in the GPU's on cuda: the model computes with arena pointers); what
//   moves off the process is the 12 bytes per expert parameter of master weights + m + v (eq. 1's
//   12S), beyond the host cache. On a GPU the expert's gradients come to the host and its new
//   weights go back to the arena through staging, on the copy role (above).
// - A checkpoint reads the moments through read_moments() (dirty cached records first), so it
//   is complete without a flush; a resume rebuilds every record from the checkpoint
//   (load_moments), so state files left by a kill -9 (old or new record, never a torn one: they
//   are replaced atomically) never reach training.
// - Records are written without fsync (ExpertStateFiles sync = false): still replaced atomically
//   against a killed process, and a power loss is covered by the checkpoint, from which a resume
//   rebuilds every record. A flush to the disk per write-back would time the disk's cache flush,
//   not the tier. The OS may serve reads from its page cache: the measured bandwidth is what the
//   file system gives.
// - Experts must be whole on the rank (no moe.expert_tp slices): one record = one expert.
#include <chrono>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/optim/adamw.h"
#include "moebench/runtime/task_graph.h"
#include "moebench/storage/folder_lock.h"
#include "moebench/storage/sparse_state_cache.h"
#include "moebench/storage/sparse_step_stats.h"
#include "moebench/tensor/device_array.h"

namespace moebench {

// The update phase's schedule (update()): `records` updates in order, the first `cached` of them
// on records in the host cache, then one load per other record, `free_slots` records fitting
// beside the cached ones. Returns, for the j-th load, the index of the update it waits for (-1:
// none). Prefetch: a load waits only for the update that frees its slot (updates free slots in
// order), so it runs while earlier updates compute; without: for the update just before its
// record's (nothing overlaps).
std::vector<int> sparse_load_waits(int records, int cached, int free_slots, bool prefetch);

// The update phase as a task graph, the one the tier runs and the step graph predicts
// (train/step_graph.h): for the records in `order` (the first `cached` of them in the host cache,
// `free_slots` more fitting beside them), a sparse.update (compute role, update_flops) each in
// order, and for every other record a sparse.load (io role, record_bytes) before its update,
// waiting as sparse_load_waits says and for the previous write-back, and with prefetch a
// sparse.writeback (copy role, record_bytes) after it. With device_bytes > 0 (the arena is a
// GPU's: the expert's weights are that many bytes) a sparse.grads_out before each update, after
// the weights_in two records back (its staging slot), and a sparse.weights_in after it, after the
// previous one (copy role, device_bytes each). Tasks with nothing to wait for in the phase wait
// for `after`; the last task added ends the phase. `bind` (the runtime's actions) sees every
// task before it is added.
struct SparseUpdateRecord {
  int block = 0, expert = 0;  // the tasks' layer and expert
};
enum class SparseTask { load, writeback, grads_out, update, weights_in };
inline constexpr size_t kSparseStagingSlots = 2;  // device copies: staging slots, record k in k % 2
using SparseTaskBinder = std::function<void(GraphTask&, SparseTask, size_t k)>;  // k: index into order
void add_sparse_update_tasks(TaskGraph& g, const std::vector<TaskId>& after, const std::vector<SparseUpdateRecord>& order,
                             int cached, int free_slots, bool prefetch, uint64_t record_bytes, double update_flops,
                             uint64_t device_bytes, const SparseTaskBinder& bind = {});

// Whether an arena tensor is an expert's ("blocks.<B>.moe.experts.<E>.<piece>").
bool is_expert_tensor(const std::string& name);

// Locks <storage.ssd_dir>/rank<R> (created when missing) for the run of world rank `rank`:
// UsageError naming storage.ssd_dir when another moebench run holds it. The local launcher
// calls it for every rank before it starts them (and lets go); open_expert_tier keeps it.
FolderLock claim_expert_state_dir(const StorageConfig& storage, int rank);

class ExpertStateTier;
// The trainer's tier for world rank `rank`: <storage.ssd_dir>/rank<R>, locked for this run (a
// second run on it: UsageError naming storage.ssd_dir), after checking storage.device_bytes
// against the rank's experts' weights and gradients (std::invalid_argument).
std::unique_ptr<ExpertStateTier> open_expert_tier(MoeGpt& model, const StorageConfig& storage, int rank,
                                                  const AdamWHyper& h);

class ExpertStateTier : public OffloadedMoments {
 public:
  // The rank's experts of `model` (std::invalid_argument when one is sliced); `dir` an existing
  // writable folder of this rank alone (ExpertStateError otherwise). Writes every expert's first
  // record (arena weights, zero moments), so the files always hold a complete state.
  ExpertStateTier(MoeGpt& model, const StorageConfig& storage, const std::string& dir, const AdamWHyper& h);
  ~ExpertStateTier() override;

  // AdamW (learning rate lr, 1-based step t) on every expert of the rank, from the arena's
  // gradients, as tasks of a step's graph after `after` (add_sparse_update_tasks' schedule with
  // this tier's actions); the arena's expert weights are the updated master weights once they
  // ran. Returns the last task. take_step_stats() counts the update once it ran.
  TaskId add_update(TaskGraph& g, TaskId after, float lr, long t);
  // Counters since the last call.
  SparseStepStats take_step_stats();

  void read_moments(size_t view, float* m, float* v) override;
  void load_moments(size_t view, const float* w, const float* m, const float* v) override;
  // Whether the arena view is an expert tensor the tier holds.
  bool holds(size_t view) const;

  int64_t records() const { return (int64_t)experts_.size(); }
  const SparseStateCache& cache() const { return *cache_; }
  const ExpertStateFiles& files() const { return *files_; }

 private:
  struct Piece {  // one arena view of an expert, at `at` floats into each part of its record
    size_t view, at, numel;
    bool decay;
  };
  struct Expert {
    int block, expert;
    std::vector<Piece> pieces;
  };
  struct ViewPlace {
    int expert = -1;  // index into experts_
    size_t piece = 0;
  };
  std::span<float> record_of(const Expert& e);  // cached (no request) or read from its file, locked
  // AdamW on the record from the expert's gradients (the arena's, or `staging`'s on a device,
  // where the new weights go too), the new weights into the arena (on the CPU).
  void update_one(const Expert& e, std::span<float> rec, float lr, long t, float* staging);
  // Writes the dirty evicted records to their files (bytes_written is atomic-free: one writer at
  // a time, the load task or the write task of a load).
  void write_back(std::vector<SparseStateCache::Evicted>& victims);

  MoeGpt& model_;
  AdamWHyper h_;
  bool prefetch_;
  int64_t floats_ = 0;  // per record: 3 x the expert's parameters
  std::vector<Expert> experts_;
  std::vector<ViewPlace> place_;  // per arena view
  std::unique_ptr<ExpertStateFiles> files_;
  std::unique_ptr<SparseStateCache> cache_;
  std::mutex m_;  // the cache and files between the io and compute workers
  FolderLock lock_;  // open_expert_tier: the folder is this run's while it trains
  friend std::unique_ptr<ExpertStateTier> open_expert_tier(MoeGpt&, const StorageConfig&, int, const AdamWHyper&);
  SparseCacheStats reported_;  // cache counters at the last take_step_stats()
  double stall_s_ = 0.0, update_s_ = 0.0;
  // The last update's phase: its tasks' first start and last end, and each update's busy time.
  struct Phase {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::time_point::max(), end{};
    std::vector<double> busy;
  };
  std::shared_ptr<Phase> phase_;
  std::vector<PinnedArray<float>> staging_;  // device copies: an expert's weights' worth per slot
};

}  // namespace moebench
