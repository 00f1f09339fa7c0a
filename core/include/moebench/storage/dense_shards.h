#pragma once
// DenseShards: storage.dense = "zero3" — the dense (non-expert) parameters sharded ZeRO-3 style
// over the data-parallel group, with MoESys' dense prefetch (§III-B2, Algorithm 1).
//
// Parts. The dense parameters fall into the parts the model's hooks name, in arena (= forward)
// order: the embeddings (part -1), each block's dense part (ln1 .. ln2 + FFN or router; part =
// the block) and ln_f + the untied head (part = model.layers). A part of n floats is cut into P
// (the DP size) contiguous shards of s = ceil(n / P) floats; DP rank p owns [p s, min(n, (p+1) s))
// (the last ranks' shards may be shorter or empty; collectives run on P x s padded buffers when
// P does not divide n).
//
// A step:
//   backward   the grad-ready hook hands each part's gradients over as before; instead of an
//              all-reduce its comm-role task reduce-scatters them ("grad.reduce_scatter": the
//              sum, then the DP scale), leaving in the arena's gradients only this rank's shard
//              (the rest of the part zeroed), while backward continues;
//   clipping   the sums of squares of the shards, all-reduced over DP (Distributed's
//              "grad.norm.dp"), equal the replicated run's;
//   optimizer  ShardedAdamW (optim/sharded_adamw.h) updates this rank's shards and its experts,
//              m and v allocated for those only: 1/P of the dense optimizer state;
//   experts    storage.zero3_experts (parallel.ep = 1: every rank holds every expert): a MoE
//              block's experts are part of its part, so they are gathered, reduce-scattered and
//              updated as shards with it (DeepSpeed's ZeRO-3 over a single-worker MoE);
//   forward    every part's other shards are stale after the update; as forward adds the tasks
//              that read a part (MoeGpt's dense-use hook) its weights' all-gather is added before
//              them ("dense.allgather", layer = the block, -1 for embeddings and head).
//              dense_prefetch = true: part i's compute waits for its gather (a join), and part
//              i+1's gather is added on the DP comm role after that wait, so it runs while part
//              i computes (Algorithm 1); the embeddings' gather, the first, is on demand.
//              dense_prefetch = false: each part's gather is a task of the rank's chain (role
//              host) before its compute, the ablation baseline. The same tasks as the step
//              graph's (train/step_graph.h).
// Traffic: reduce-scatter + all-gather of a part send 2 (P-1) s floats to the ring's next rank,
// the ring all-reduce's 2 (P-1) n / P when P divides n.
//
// Memory: optimizer state (fp32 master weights updated in place, m, v) is sharded. The gathered
// full weights stay resident in the arena after use, and the gradient arena stays whole (the
// backward kernels accumulate into it): the communication schedule is ZeRO-3's, the weight and
// gradient memory is not freed on this CPU workbench. Checkpoints gather the whole moments
// (whole_state(): an arena-sized AdamW on every rank for the duration of the save), so a zero3
// checkpoint resumes in a replicated run and vice versa.
//
// Threads: the gathers use their own DP communicator, the reduce-scatters another; each
// gather is added after the one before it (the chain or the prefetch's wait), so at most one is in
// flight and every rank issues them in the same order.
//
// Devices: the communicators are the DP group's data communicators for the arena's memory
// (train/device.h: MPI dups on the CPU, NCCL on a GPU), and every copy, zeroing and scaling runs
// through the arena's backend on the running task's stream; the padded buffers of parts that P
// does not divide are arrays in that memory, one per part and use, kept between steps.
#include <cstddef>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "moebench/dist/communicator.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/optim/adamw.h"
#include "moebench/optim/sharded_adamw.h"
#include "moebench/runtime/executor.h"
#include "moebench/runtime/task_graph.h"
#include "moebench/tensor/device_array.h"

namespace moebench {

class DenseShards {
 public:
  struct Part {
    int part = 0;       // -1 embeddings, b block b, model.layers ln_f + head
    ArenaRange range;   // in the arena
    size_t shard = 0;   // s = ceil(n / P): floats per rank in the collectives
    ArenaRange owned;   // this rank's shard in the arena (count 0 when empty)
  };

  // gather, grads: two communicators over the model's data-parallel group (the gathers', the
  // reduce-scatters'). role: the DP group's comm role. Throws std::invalid_argument when the
  // model's dense parameters do not form the parts above (tensor-parallel slices, pipeline
  // stages, a partitioned embedding).
  // experts (storage.zero3_experts): each MoE block's experts join its part (the model's
  // MoeGpt::set_experts_in_block_parts, which this sets).
  DenseShards(MoeGpt& model, std::unique_ptr<Communicator> gather, std::unique_ptr<Communicator> grads,
              Executor& executor, StreamRole role, bool prefetch, AdamWHyper h, bool experts = false);
  ~DenseShards();

  const std::vector<Part>& parts() const { return parts_; }
  bool prefetch() const { return prefetch_; }
  // The optimizer's moment floats on this rank (m; v the same): its shards + its experts.
  size_t optimizer_state_floats() const { return opt_->state_size(); }

  // The comm-role task that reduce-scatters the gradients of range r (a part's range), scaling
  // this rank's shard by `scale`. std::logic_error for a range that is not a part's.
  GraphTask reduce_scatter_task(ArenaRange r, float scale);
  // MoeGpt's dense-use hook: adds the part's gather (when its weights are stale) after `after`;
  // returns the task the part's compute waits for.
  TaskId use(TaskGraph& g, int part, TaskId after);
  // The optimizer step over the owned elements; afterwards every part is stale.
  void optimizer_step(float lr, long t);
  // Every part whole now (blocking gathers; checkpoints).
  void gather_all();

  // Checkpoints (collective over DP): an AdamW with the whole arena's moments, the dense
  // parts' gathered from their owners; the weights are gathered too (gather_all).
  AdamW whole_state();
  // Resume: this rank's moments from whole ones; the weights were loaded whole (all fresh).
  void load_state(const AdamW& whole);

 private:
  size_t index_of(int part) const;
  void gather_now(size_t i);  // blocking, on the calling thread
  void gather(size_t i);      // the collective itself
  GraphTask gather_task(size_t i, StreamRole role);
  // Collective over the DP group: the part's `data` whole from every rank's shard; pad: a
  // buffer for the padded collective when P does not divide the part.
  void all_gather_part(const Part& p, float* data, Communicator& comm, DeviceArray<float>& pad);
  // The part's padded buffers (its gathers', its moments', its reduce-scatter's) and its shard of the reduced gradient.
  struct Buffers {
    DeviceArray<float> gather, moments, grads, mine;
  };

  MoeGpt& model_;
  Executor& executor_;
  StreamRole role_;
  bool prefetch_ = true;
  AdamWHyper hyper_;
  int P_ = 1, me_ = 0;
  std::unique_ptr<Communicator> gather_comm_, grad_comm_;
  std::vector<Part> parts_;
  std::vector<bool> fresh_;           // per part: weights whole once the tasks added so far ran
  std::map<size_t, TaskId> prefetched_;  // part index -> its prefetch task (not waited for yet)
  std::vector<Buffers> buffers_;         // per part
  std::unique_ptr<ShardedAdamW> opt_;
};

}  // namespace moebench
