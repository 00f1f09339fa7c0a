#pragma once
// ProcessGroups: the DP / EP / TP / PP sub-communicators of a world and the expert-replica
// (expert-data-parallel) group, split as a ParallelLayout (dist/parallel_layout.h) lays them out.
#include <memory>
#include <string>

#include "moebench/dist/communicator.h"
#include "moebench/dist/parallel_layout.h"

namespace moebench {

class ProcessGroups {
 public:
  // Collective over world: splits it into the layout's groups. world must outlive this object;
  // throws std::invalid_argument when the layout is of another world size.
  ProcessGroups(Communicator& world, ParallelLayout layout);

  Communicator& world() { return world_; }
  Communicator& dp() { return *dp_; }
  Communicator& ep() { return *ep_; }
  Communicator& expert_dp() { return *edp_; }
  Communicator& tp() { return *tp_; }
  Communicator& pp() { return *pp_; }
  const ParallelLayout& layout() const { return layout_; }
  int dp_size() const { return layout_.dp(); }
  int ep_size() const { return layout_.ep(); }
  int tp_size() const { return layout_.tp(); }
  std::string describe() const { return layout_.describe(); }  // "world 4 = pp 1 x dp 4 x tp 1; ep 4, expert-dp 1"

 private:
  Communicator& world_;
  ParallelLayout layout_;
  std::unique_ptr<Communicator> dp_, ep_, edp_, tp_, pp_;
};

}  // namespace moebench
