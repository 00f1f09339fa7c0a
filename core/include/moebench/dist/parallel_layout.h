#pragma once
// ParallelLayout: where every rank of a world sits, Megatron order:
//   world = pp * dp * tp;  rank = pp_rank * (dp * tp) + dp_rank * tp + tp_rank
// TP ranks are adjacent, pipeline stages outermost (so stages can span nodes). Experts are
// carved out of the data-parallel group: EP groups are runs of `ep` consecutive DP ranks and
// the expert replicas (expert-data-parallel group) link the ranks with the same EP index across
// the dp / ep EP groups. With ExpertGroups::tensor_parallel (Pipeline MoE) the EP group is the
// TP group and the replicas are the DP group. MoNTA writes the order [TP, EP, CP, PP, DP];
// without context parallelism it is this one up to the place of PP.
// A plain value: built once from explicit sizes and validated then; communicators
// (ProcessGroups) wrap it, everything else reads it. config/config_layout.h builds it from a Config.
#include <string>
#include <vector>

namespace moebench {

enum class ExpertGroups {
  data_parallel,    // runs of ep consecutive DP ranks; replicas across those runs
  tensor_parallel,  // the TP group (Pipeline MoE); replicas: the DP group
};

struct ParallelSizes {
  int world = 1;
  int tp = 1, pp = 1;
  int dp = 0;  // 0 = world / (tp x pp)
  int ep = 0;  // 0 = the whole data-parallel group (the TP group with ExpertGroups::tensor_parallel)
  ExpertGroups experts = ExpertGroups::data_parallel;
  std::vector<int> experts_per_block = {};  // each must divide over ep (0 = a dense block); [] = unchecked
  int layers = 1;                           // the model's blocks, split into pp stages
  std::vector<int> stage_layers = {};       // blocks per stage; [] = even (the first stages take the remainder)
};

// The data-parallel size the sizes give: dp, or world / (tp x pp) when dp is 0; 0 when they
// give none (a size out of range, tp x pp not dividing the world, dp x tp x pp not the world).
int data_parallel_size(int world, int tp, int pp, int dp);

struct RankCoords {
  int tp = 0, dp = 0, pp = 0;
  int ep = 0;       // index inside the EP group
  int replica = 0;  // index inside the expert-replica group
};

struct BlockRange {
  int first = 0, end = 0;  // blocks [first, end)
};

class ParallelLayout {
 public:
  ParallelLayout() : ParallelLayout(ParallelSizes{}) {}  // one rank, one block
  // Throws std::invalid_argument naming the violated rule.
  explicit ParallelLayout(ParallelSizes sizes);

  int world() const { return s_.world; }
  int tp() const { return s_.tp; }
  int pp() const { return s_.pp; }
  int dp() const { return s_.dp; }
  int ep() const { return s_.ep; }  // resolved: never 0
  int replicas() const;             // ranks holding the same experts (expert-data-parallel size)
  ExpertGroups experts() const { return s_.experts; }
  bool experts_in_tp() const { return s_.experts == ExpertGroups::tensor_parallel; }

  int world_rank(int pp_rank, int dp_rank, int tp_rank) const { return (pp_rank * s_.dp + dp_rank) * s_.tp + tp_rank; }
  RankCoords coords(int rank) const;
  // The world ranks of `rank`'s groups, ordered by their rank inside the group (coords(rank)
  // gives `rank`'s position in each).
  std::vector<int> tp_group(int rank) const;
  std::vector<int> dp_group(int rank) const;
  std::vector<int> pp_group(int rank) const;
  std::vector<int> ep_group(int rank) const;
  std::vector<int> replica_group(int rank) const;
  // Every EP group once, ordered by its first member's stage, then TP rank, then DP rank.
  std::vector<std::vector<int>> ep_groups() const;

  // Pipeline stages: stage s holds blocks [bounds[s], bounds[s + 1]).
  const std::vector<int>& stage_bounds() const { return bounds_; }
  BlockRange stage_blocks(int stage) const;

  std::string describe() const;  // "world 4 = pp 1 x dp 4 x tp 1; ep 4, expert-dp 1"

 private:
  void check_rank(int rank) const;
  ParallelSizes s_;
  std::vector<int> bounds_;
};

}  // namespace moebench
