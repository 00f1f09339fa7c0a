// ParallelLayout (dist/parallel_layout.h): the sizes checked once, then every rank's coordinates
// and groups worked out from the Megatron order on demand.
#include "moebench/dist/parallel_layout.h"

#include <stdexcept>

namespace moebench {
namespace {
std::string str(int v) { return std::to_string(v); }

// Stage s of `stages` holds blocks [b[s], b[s + 1]); stage_layers gives the blocks per stage,
// empty = even with the first layers % stages stages one block more.
std::vector<int> stage_bounds_of(int layers, int stages, const std::vector<int>& stage_layers) {
  std::vector<int> b{0};
  if (stages > layers)
    throw std::invalid_argument(str(stages) + " pipeline stages over " + str(layers) +
                                " blocks (model.layers): every stage needs a block");
  if (stage_layers.empty()) {
    for (int s = 0; s < stages; ++s) b.push_back(b.back() + layers / stages + (s < layers % stages ? 1 : 0));
    return b;
  }
  if ((int)stage_layers.size() != stages)
    throw std::invalid_argument("parallel.stage_layers needs one entry per pipeline stage (parallel.pp = " +
                                str(stages) + "), got " + str((int)stage_layers.size()));
  for (int n : stage_layers) {
    if (n < 1) throw std::invalid_argument("parallel.stage_layers: every stage needs a block, got " + str(n));
    b.push_back(b.back() + n);
  }
  if (b.back() != layers)
    throw std::invalid_argument("parallel.stage_layers sums to " + str(b.back()) + ", not model.layers = " + str(layers));
  return b;
}
}  // namespace

int data_parallel_size(int world, int tp, int pp, int dp) {
  if (world < 1 || tp < 1 || pp < 1 || dp < 0 || world % ((long long)tp * pp) != 0) return 0;
  if (dp == 0) return world / (tp * pp);
  return (long long)dp * tp * pp == world ? dp : 0;
}

ParallelLayout::ParallelLayout(ParallelSizes s) : s_(std::move(s)) {
  const int world = s_.world, tp = s_.tp, pp = s_.pp;
  if (world < 1) throw std::invalid_argument("the world must hold at least 1 rank (got " + str(world) + ")");
  if (tp < 1) throw std::invalid_argument("parallel.tp = " + str(tp) + " must be at least 1");
  if (pp < 1) throw std::invalid_argument("parallel.pp = " + str(pp) + " must be at least 1");
  if (s_.dp < 0) throw std::invalid_argument("parallel.dp = " + str(s_.dp) + " must be 0 (world / (tp x pp)) or positive");
  if (s_.ep < 0)
    throw std::invalid_argument("parallel.ep = " + str(s_.ep) + " must be 0 (the whole data-parallel group) or positive");
  if (world % ((long long)tp * pp) != 0)
    throw std::invalid_argument("the world size " + str(world) + " is not divisible by parallel.tp x parallel.pp = " +
                                str(tp) + " x " + str(pp) + " = " + str(tp * pp));
  if (data_parallel_size(world, tp, pp, s_.dp) == 0)
    throw std::invalid_argument("parallel.pp x parallel.dp x parallel.tp = " + str(pp) + " x " + str(s_.dp) + " x " +
                                str(tp) + " does not match the world of " + str(world) + " ranks");
  s_.dp = data_parallel_size(world, tp, pp, s_.dp);
  if (experts_in_tp()) {
    if (s_.ep != 0 && s_.ep != tp)
      throw std::invalid_argument("parallel.ep = " + str(s_.ep) + " must be 0 or parallel.tp = " + str(tp) +
                                  " when the experts live inside the tensor-parallel group");
    s_.ep = tp;
  } else {
    if (s_.ep == 0) s_.ep = s_.dp;
    if (s_.dp % s_.ep != 0)
      throw std::invalid_argument("parallel.ep = " + str(s_.ep) + " does not divide the data-parallel size " + str(s_.dp));
  }
  const std::string over = experts_in_tp() ? "parallel.tp = " : "parallel.ep = ";
  for (size_t b = 0; b < s_.experts_per_block.size(); ++b) {
    const int e = s_.experts_per_block[b];
    if (e > 0 && e % s_.ep != 0)  // e <= 0: a dense block
      throw std::invalid_argument(over + str(s_.ep) + " does not divide the " + str(e) + " experts of MoE block entry " +
                                  str((int)b) + " (every expert-parallel rank must hold the same number of experts)");
  }
  bounds_ = stage_bounds_of(s_.layers, pp, s_.stage_layers);
}

int ParallelLayout::replicas() const { return experts_in_tp() ? s_.dp : s_.dp / s_.ep; }

void ParallelLayout::check_rank(int rank) const {
  if (rank < 0 || rank >= s_.world)
    throw std::out_of_range("rank " + str(rank) + " is outside the world of " + str(s_.world) + " ranks");
}

RankCoords ParallelLayout::coords(int rank) const {
  check_rank(rank);
  RankCoords c;
  c.tp = rank % s_.tp;
  c.dp = rank / s_.tp % s_.dp;
  c.pp = rank / (s_.tp * s_.dp);
  c.ep = experts_in_tp() ? c.tp : c.dp % s_.ep;
  c.replica = experts_in_tp() ? c.dp : c.dp / s_.ep;
  return c;
}

std::vector<int> ParallelLayout::tp_group(int rank) const {
  const RankCoords c = coords(rank);
  std::vector<int> g;
  for (int t = 0; t < s_.tp; ++t) g.push_back(world_rank(c.pp, c.dp, t));
  return g;
}

std::vector<int> ParallelLayout::dp_group(int rank) const {
  const RankCoords c = coords(rank);
  std::vector<int> g;
  for (int d = 0; d < s_.dp; ++d) g.push_back(world_rank(c.pp, d, c.tp));
  return g;
}

std::vector<int> ParallelLayout::pp_group(int rank) const {
  const RankCoords c = coords(rank);
  std::vector<int> g;
  for (int p = 0; p < s_.pp; ++p) g.push_back(world_rank(p, c.dp, c.tp));
  return g;
}

std::vector<int> ParallelLayout::ep_group(int rank) const {
  if (experts_in_tp()) return tp_group(rank);
  const RankCoords c = coords(rank);
  const int first = c.dp - c.ep;  // the run of ep DP ranks holding c.dp
  std::vector<int> g;
  for (int i = 0; i < s_.ep; ++i) g.push_back(world_rank(c.pp, first + i, c.tp));
  return g;
}

std::vector<int> ParallelLayout::replica_group(int rank) const {
  if (experts_in_tp()) return dp_group(rank);
  const RankCoords c = coords(rank);
  std::vector<int> g;
  for (int r = 0; r < replicas(); ++r) g.push_back(world_rank(c.pp, r * s_.ep + c.ep, c.tp));
  return g;
}

std::vector<std::vector<int>> ParallelLayout::ep_groups() const {
  std::vector<std::vector<int>> out;
  for (int p = 0; p < s_.pp; ++p)
    for (int t = 0; t < s_.tp; ++t)
      for (int d = 0; d < s_.dp; ++d)
        if (const int r = world_rank(p, d, t); coords(r).ep == 0) out.push_back(ep_group(r));
  return out;
}

BlockRange ParallelLayout::stage_blocks(int stage) const {
  if (stage < 0 || stage >= s_.pp)
    throw std::out_of_range("pipeline stage " + str(stage) + " is outside the " + str(s_.pp) + " stages");
  return {bounds_[(size_t)stage], bounds_[(size_t)stage + 1]};
}

std::string ParallelLayout::describe() const {
  return "world " + str(s_.world) + " = pp " + str(s_.pp) + " x dp " + str(s_.dp) + " x tp " + str(s_.tp) + "; ep " +
         str(s_.ep) + (experts_in_tp() ? " (the TP group)" : "") + ", expert-dp " + str(replicas());
}

}  // namespace moebench
