#pragma once
// ProcessGroups: the DP / EP / TP / PP sub-communicators of a world, Megatron layout:
//   world = pp * dp * tp;  rank = pp_rank * (dp * tp) + dp_rank * tp + tp_rank
// Expert parallelism is carved out of the data-parallel group: EP groups are runs of `ep`
// consecutive DP ranks; the expert-data-parallel group (replicas of the same experts) links
// the ranks with the same EP index across the dp / ep EP groups. With ep_in_tp (Pipeline
// MoE, strategy ppmoe) the EP group is the TP group and the expert replicas are the DP group.
// MoNTA writes the order [TP, EP, CP, PP, DP]; without context parallelism it is this one up to
// the place of PP, which Megatron puts outermost so that stages can span nodes.
#include <memory>
#include <string>
#include <vector>

#include "moebench/dist/communicator.h"

namespace moebench {

struct GroupSizes {
  int tp = 1, pp = 1;
  int ep = 0;             // 0 = the whole data-parallel group (or the TP group with ep_in_tp)
  bool ep_in_tp = false;  // experts inside the TP group (ppmoe): ep must be 0 or tp
};

// Checks sizes against the world and the experts of every MoE block (each must be divisible by
// ep). Throws std::invalid_argument naming the violated rule.
void validate_group_sizes(const GroupSizes& sizes, int world, const std::vector<int>& experts_per_block);

class ProcessGroups {
 public:
  // Collective over world: splits it into the groups. world must outlive this object.
  ProcessGroups(Communicator& world, GroupSizes sizes);

  Communicator& world() { return world_; }
  Communicator& dp() { return *dp_; }
  Communicator& ep() { return *ep_; }
  Communicator& expert_dp() { return *edp_; }
  Communicator& tp() { return *tp_; }
  Communicator& pp() { return *pp_; }
  int dp_size() const { return dp_size_; }
  int ep_size() const { return ep_size_; }
  int tp_size() const { return sizes_.tp; }
  std::string describe() const;  // "world 4 = pp 1 x dp 4 x tp 1; ep 4, expert-dp 1"

 private:
  Communicator& world_;
  int dp_size_, ep_size_;
  GroupSizes sizes_;
  std::unique_ptr<Communicator> dp_, ep_, edp_, tp_, pp_;
};

}  // namespace moebench
