#pragma once
// Distributed: everything one rank of a multi-rank run needs besides the model math —
// topology (virtual or detected), process groups (data, tensor and expert parallel), traffic
// meter, executor with its compute and comm streams — and the parallel steps of training:
//   * dense gradients: all-reduced over the DP group in buckets (one per block, the head and
//     the embeddings) on the comm stream while backward continues on the compute thread;
//   * expert gradients: summed over the expert-data-parallel replicas; both scaled so the
//     result is the gradient of the global-batch mean loss;
//   * gradients that are partial sums over the TP group (ppmoe's routers): all-reduced over it
//     once per step;
//   * the partitioned embedding (model.embedding_partition): no all-reduce, only the DP scale
//     (each rank owns its columns of embed.wte; MoeGpt exchanges their gradients itself);
//   * with pipeline stages, the tied embedding: the first stage's embed.wte and the last
//     stage's copy (its LM head) sum their gradients (an all-reduce over the pair);
//   * the pipeline's links: per pair of neighbour stages and direction a communicator of the
//     two ranks (stage_link), in the activations' memory (NCCL on a GPU), so each carries one
//     stream of messages in one order on both sides;
//   * storage.dense = "zero3" (storage/dense_shards.h): the dense buckets reduce-scattered
//     instead, their shards' sums of squares all-reduced over DP for the norm; the weights
//     all-gathered per layer during forward;
//   * global gradient norm (tensor-parallel slices summed over the TP group, replicated tensors
//     counted once), loss averaging, and checkpoints that always hold the whole model (rank 0
//     gathers the tensor-parallel slices and the other EP ranks' experts), so a run resumes on
//     any layout.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/dist/communicator.h"
#include "moebench/dist/process_groups.h"
#include "moebench/dist/topology.h"
#include "moebench/dist/traffic_meter.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/moe/parallel_context.h"
#include "moebench/optim/adamw.h"
#include "moebench/runtime/thread_executor.h"
#include "moebench/storage/sparse_step_stats.h"
#include "moebench/storage/dense_shards.h"
#include "moebench/train/device.h"
#include "moebench/train/step_builder.h"

namespace moebench {

class ClusterModel;

class Distributed {
 public:
  // Collective over world. Resolves the topology from [cluster] and the ranks' host names,
  // builds the groups ([parallel] ep) and checks the global batch divides over DP ranks.
  // Throws std::runtime_error / std::invalid_argument naming the problem.
  Distributed(Communicator& world, const Config& cfg);
  ~Distributed();

  int rank() const { return world_.rank(); }
  int size() const { return world_.size(); }
  int dp_rank() const { return groups_->dp().rank(); }
  int dp_size() const { return groups_->dp_size(); }
  ExpertShard shard() const { return {groups_->ep().rank(), groups_->ep_size()}; }
  TpShard tp_shard() const { return {groups_->tp().rank(), groups_->tp_size()}; }
  int pp_rank() const { return groups_->pp().rank(); }
  // Sums v[n] over the pipeline stages (values only the last stage has, per-stage parts); a
  // host span `name` (train/step_graph.h lists the step's host collectives).
  void pp_sum(double* v, size_t n, const char* name = "loss.pp");
  int ranks_on_host() const { return ranks_on_host_; }  // ranks sharing this rank's machine
  int local_rank() const { return local_rank_; }        // this rank's index among them
  const Topology& topology() const { return topology_; }
  TrafficMeter& meter() { return *meter_; }
  // The rank's executor: its worker threads, or after attach() the device's (DeviceRuntime).
  Executor& executor() { return *executor_; }
  ProcessGroups& groups() { return *groups_; }
  const ParallelLayout& layout() const { return groups_->layout(); }
  const ParallelContext& parallel() const { return parallel_; }  // filled by attach()
  // The link a pipeline message crosses (attach() makes them; pp > 1): forward activations to
  // the next stage (forward, outgoing) or from the previous one, input gradients to the previous
  // stage or from the next one; `peer` is the other stage's rank in `comm`.
  struct StageLink {
    Communicator* comm = nullptr;
    int peer = 0;
  };
  StageLink stage_link(bool forward, bool outgoing) const;
  // The TP group's communicator for activations (the device's after attach(), tp > 1).
  Communicator& tp_activations() { return tp_comm_ ? *tp_comm_ : groups_->tp(); }
  // storage.dense = "zero3": the sharded dense parameters and their optimizer (attach()
  // creates it); nullptr when replicated.
  DenseShards* dense_shards() { return dense_.get(); }
  std::string describe() const;

  // Wires the model: this rank's ParallelContext (groups, EP streams, topology, cluster model,
  // executor and the strategy of every MoE block with its [strategy.<name>] options;
  // strategies/janus.h: janus picks per block), and the gradient hook that adds each dense bucket's
  // all-reduce to the model's graph on the comm stream. `device` is where the model lives: its
  // executor (when it has one) runs the step, and the gradients are reduced with its data
  // communicators (train/device.h: NCCL on a GPU).
  void attach(MoeGpt& model, const Config& cfg, DeviceRuntime& device);
  // The action of a task of the step's tail (train/step_builder.h) on the model's gradients, once
  // every bucket is reduced: tp.partial_allreduce (the TP group's partial gradients),
  // pp.tied_grad (the tied embedding's two copies summed), expert.allreduce of block `layer`
  // (over the expert replicas, then the DP scale), grad.norm (the DP scale of what no reduction
  // scaled; the sums of squares), grad.norm.tp / .ep / .dp / .pp (their all-reduces), grad.clip
  // (the global L2 norm — dense counted once, experts summed over the EP group, every stage's
  // parameters, the tied embedding once — and the scaling of all gradients so that it is at most
  // max_norm, 0 = no clipping). Empty for the other tasks.
  std::function<void()> tail_action(StepOp op, int layer, MoeGpt& model, float max_norm);
  // The gradient norm before clipping, after the step's grad.clip ran.
  double grad_norm() const;
  // Mean of a per-rank value over the DP group.
  double dp_mean(double v);
  // Sum over the DP group of v x weight (multi-task data: weight = the rank's share of the
  // global batch, so a per-rank mean loss becomes the global-batch mean).
  double dp_weighted_mean(double v, double weight);
  // True on every rank when `flag` is true on any rank.
  bool any(bool flag);
  // The SSD tier's step counters summed over every rank (stall and update time: the slowest rank's).
  void world_sum(SparseStepStats& s);
  // Every rank's buffer on rank 0 (index = rank); empty on the other ranks. Collective.
  std::vector<std::vector<uint8_t>> gather_to_root(const std::vector<uint8_t>& mine);

  // Collective: rank 0 writes the whole model: each tensor (or tensor-parallel slice) comes from
  // one holder, DP rank 0 for dense tensors and expert-DP rank 0 for experts, TP rank 0 for
  // what the TP group replicates.
  void save(const std::string& dir, MoeGpt& model, const AdamW& opt, long step, const std::string& config_json);

 private:
  // Enables one-sided windows on the world when a block's strategy uses them (collective);
  // UsageError naming the block, its strategy and the MPI settings to try when MPI cannot.
  void enable_windows_if_pulled(const std::map<int, std::string>& names, const StrategyConfig& options);
  // The main thread's blocking collectives of a step, each a host comm span `name` of `layer`
  // with the ring's bytes (the step graph's tasks of that name); nothing for a group of one.
  void host_all_reduce(const char* name, Communicator& group, void* data, size_t count, DType type, int layer = -1);
  struct Norm;
  // Runs the gradient norm's stages up to `stage` (1 TP, 2 EP, 3 DP, 4 PP) that have not run.
  void advance_norm(int stage);
  Communicator& world_;
  Topology topology_;
  std::unique_ptr<TrafficMeter> meter_;
  std::unique_ptr<ProcessGroups> groups_;
  std::unique_ptr<Communicator> grad_comm_;    // DP for the dense gradients, used only by the comm stream
  std::unique_ptr<Communicator> expert_comm_;  // the expert replicas' group on a device (else groups_->expert_dp())
  // The TP group on a device, tp > 1 (else groups_->tp()): one for the activations (the model's
  // tasks), one for the partial gradients (the step's tail), each on its own streams.
  std::unique_ptr<Communicator> tp_comm_, tp_grad_comm_;
  // Pipeline links (stage_link): with the previous and the next stage, forward and backward;
  // the tied embedding's pair (first and last stage).
  std::unique_ptr<Communicator> prev_fwd_, prev_bwd_, next_fwd_, next_bwd_, tied_;
  void make_stage_links(DeviceRuntime& device);
  std::unique_ptr<ClusterModel> cluster_;
  ParallelContext parallel_;
  std::unique_ptr<ThreadExecutor> own_executor_;
  Executor* executor_;  // own_executor_, or the device's
  std::unique_ptr<DenseShards> dense_;  // declared after executor_: destroyed first
  std::unique_ptr<Norm> norm_;  // this step's gradient norm
  bool has_columns_ = false;     // the model partitions its embedding over DP
  bool experts_sharded_ = false;  // storage.zero3_experts: the experts are ZeRO-3 shards too
  float dp_scale_ = 1.0f;
  int ranks_on_host_ = 1, local_rank_ = 0;
};

}  // namespace moebench
