// ProcessGroups: the Megatron layout of a world into TP / DP / PP groups, with EP carved out of
// DP (runs of `ep` consecutive DP ranks) and the expert-data-parallel group across EP groups.
//   world = pp * dp * tp;  rank = pp_rank * (dp * tp) + dp_rank * tp + tp_rank
#include "moebench/dist/process_groups.h"

#include <stdexcept>

namespace moebench {
namespace {
std::string str(int v) { return std::to_string(v); }
}  // namespace

void validate_group_sizes(const GroupSizes& s, int world, const std::vector<int>& experts_per_block) {
  if (world < 1) throw std::invalid_argument("the world must hold at least 1 rank (got " + str(world) + ")");
  if (s.tp < 1) throw std::invalid_argument("parallel.tp = " + str(s.tp) + " must be at least 1");
  if (s.pp < 1) throw std::invalid_argument("parallel.pp = " + str(s.pp) + " must be at least 1");
  if (s.ep < 0)
    throw std::invalid_argument("parallel.ep = " + str(s.ep) + " must be 0 (the whole data-parallel group) or positive");
  if (world % (s.tp * s.pp) != 0)
    throw std::invalid_argument("the world size " + str(world) + " is not divisible by parallel.tp x parallel.pp = " +
                                str(s.tp) + " x " + str(s.pp) + " = " + str(s.tp * s.pp));
  const int dp = world / (s.tp * s.pp);
  if (s.ep_in_tp) {
    if (s.ep != 0 && s.ep != s.tp)
      throw std::invalid_argument("parallel.ep = " + str(s.ep) + " must be 0 or parallel.tp = " + str(s.tp) +
                                  " when the experts live inside the tensor-parallel group");
    for (size_t b = 0; b < experts_per_block.size(); ++b)
      if (experts_per_block[b] > 0 && experts_per_block[b] % s.tp != 0)
        throw std::invalid_argument("parallel.tp = " + str(s.tp) + " does not divide the " + str(experts_per_block[b]) +
                                    " experts of MoE block entry " + str((int)b));
    return;
  }
  const int ep = s.ep == 0 ? dp : s.ep;
  if (dp % ep != 0)
    throw std::invalid_argument("parallel.ep = " + str(ep) + " does not divide the data-parallel size " + str(dp));
  for (size_t b = 0; b < experts_per_block.size(); ++b) {
    const int e = experts_per_block[b];
    if (e <= 0) continue;  // a dense block
    if (e % ep != 0)
      throw std::invalid_argument("parallel.ep = " + str(ep) + " does not divide the " + str(e) +
                                  " experts of MoE block entry " + str((int)b) +
                                  " (every expert-parallel rank must hold the same number of experts)");
  }
}

ProcessGroups::ProcessGroups(Communicator& world, GroupSizes sizes) : world_(world), sizes_(sizes) {
  validate_group_sizes(sizes, world.size(), {});
  const int tp = sizes.tp, pp = sizes.pp;
  dp_size_ = world.size() / (tp * pp);
  ep_size_ = sizes.ep_in_tp ? tp : sizes.ep == 0 ? dp_size_ : sizes.ep;
  const int ep = ep_size_, dp = dp_size_;

  const int r = world.rank();
  const int tp_rank = r % tp;
  const int dp_rank = (r / tp) % dp;
  const int pp_rank = r / (tp * dp);
  // Every rank splits in the same order (split is collective over world).
  tp_ = world.split(pp_rank * dp + dp_rank, tp_rank);
  dp_ = world.split(pp_rank * tp + tp_rank, dp_rank);
  pp_ = world.split(dp_rank * tp + tp_rank, pp_rank);
  if (sizes.ep_in_tp) {  // the EP group is the TP group; expert replicas across DP
    ep_ = world.split(pp_rank * dp + dp_rank, tp_rank);
    edp_ = world.split(pp_rank * tp + tp_rank, dp_rank);
    return;
  }
  const int ep_rank = dp_rank % ep;     // position inside the EP group
  const int ep_group = dp_rank / ep;    // which EP group inside the DP group
  const int replicas = dp / ep;         // expert-data-parallel size
  ep_ = world.split((pp_rank * tp + tp_rank) * replicas + ep_group, ep_rank);
  edp_ = world.split((pp_rank * tp + tp_rank) * ep + ep_rank, ep_group);
}

std::string ProcessGroups::describe() const {
  return "world " + str(world_.size()) + " = pp " + str(sizes_.pp) + " x dp " + str(dp_size_) + " x tp " +
         str(sizes_.tp) + "; ep " + str(ep_size_) + (sizes_.ep_in_tp ? " (the TP group)" : "") + ", expert-dp " +
         str(sizes_.ep_in_tp ? dp_size_ : dp_size_ / ep_size_);
}

}  // namespace moebench
