// ProcessGroups: each group of the layout becomes a communicator, split by the group's first
// world rank (the same colour on every member) and ordered by the rank's place in the group.
#include "moebench/dist/process_groups.h"

#include <stdexcept>

namespace moebench {

ProcessGroups::ProcessGroups(Communicator& world, ParallelLayout layout) : world_(world), layout_(std::move(layout)) {
  if (layout_.world() != world.size())
    throw std::invalid_argument("the layout (" + layout_.describe() + ") is for " + std::to_string(layout_.world()) +
                                " ranks, the world has " + std::to_string(world.size()));
  const int r = world.rank();
  const RankCoords c = layout_.coords(r);
  // Every rank splits in the same order (split is collective over world).
  tp_ = world.split(layout_.tp_group(r).front(), c.tp);
  dp_ = world.split(layout_.dp_group(r).front(), c.dp);
  pp_ = world.split(layout_.pp_group(r).front(), c.pp);
  ep_ = world.split(layout_.ep_group(r).front(), c.ep);
  edp_ = world.split(layout_.replica_group(r).front(), c.replica);
}

}  // namespace moebench
