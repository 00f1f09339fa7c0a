#pragma once
// ParallelContext: everything about how one rank takes part in a distributed run that the
// model and its MoE blocks need — the process groups (EP, DP, expert-DP; TP and PP join with
// tensor/pipeline parallelism), the EP group's per-role communicators, the topology, the
// cluster model, the executor, and the strategy of each MoE block. One per rank, made by the
// trainer (train/distributed.h). Strategy options are not copied through it: each strategy
// got its own option struct ([strategy.<name>]) when `strategy_for` made it. The model asks
// it for a block's strategy and context; it never includes strategies/ (DESIGN §2).
#include <functional>
#include <memory>
#include <vector>

#include "moebench/moe/moe_strategy.h"

namespace moebench {

class ClusterModel;

struct ParallelContext {
  Communicator* ep = nullptr;         // expert-parallel group
  Communicator* dp = nullptr;         // data-parallel group (global-batch router statistics)
  Communicator* tp = nullptr;         // tensor-parallel group (Megatron's f / g all-reduces)
  std::shared_ptr<EpStreams> ep_streams;  // the EP group's comm.intra / comm.inter dups (all blocks)
  std::shared_ptr<EpStreams> ep_rows;     // the same for rows in device memory (NCCL; null: ep_streams)
  // A communicator for arrays in the model's device memory over a group (a strategy's own
  // sub-group, MoeContext::rows_group; the partitioned embedding's DP group); null: dups.
  std::function<std::unique_ptr<Communicator>(Communicator& group)> rows_group;
  std::shared_ptr<RowsCommunicators> rows_shared = std::make_shared<RowsCommunicators>();  // the run's, by purpose
  std::shared_ptr<EpStreams> dp_streams;  // the DP group's, for the router statistics' all-reduce
  std::shared_ptr<Communicator> tp_dup;   // tp > 1: a dup of tp for the MoE blocks' comm workers
  std::shared_ptr<EpStreams> tp_rows;     // tp > 1, rows in device memory: the TP group's per role (NCCL)
  bool experts_sliced = false;            // moe.expert_tp (DeepSpeed-TED)
  const Topology* topology = nullptr;
  const ClusterModel* cluster = nullptr;  // what predictions of this run assume
  Executor* executor = nullptr;
  // The strategy of MoE block `block`, with its options (strategies/registry.h, janus.h).
  std::function<std::unique_ptr<MoeStrategy>(int block)> strategy_for;

  // The group part of a block's MoeContext (ep, streams, topology, cluster, executor, group
  // ranks); the model adds the block's shapes and experts.
  MoeContext block_context(int layer) const;
};

}  // namespace moebench
