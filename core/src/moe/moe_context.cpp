#include <set>
#include <stdexcept>

#include "moebench/dist/communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/moe/moe_strategy.h"
#include "moebench/moe/parallel_context.h"

namespace moebench {
namespace {
// The communicator of a comm role among a group's per-role dups.
Communicator& of_role(EpStreams& streams, StreamRole role, const char* who) {
  if (role == StreamRole::comm_intra) return *streams.intra;
  if (role == StreamRole::comm_inter) return *streams.inter;
  throw std::logic_error(std::string(who) + ": " + stream_role_name(role) + " is not a comm role");
}
}  // namespace

void MoeContext::sync_group() {
  if (tp) {
    tp_rank = tp->rank();
    tp_size = tp->size();
    tp_world.resize(tp_size);
    for (int p = 0; p < tp_size; ++p) tp_world[p] = tp->world_rank(p);
  }
  if (!ep) return;
  ep_rank = ep->rank();
  ep_size = ep->size();
  ep_world.resize(ep_size);
  for (int p = 0; p < ep_size; ++p) ep_world[p] = ep->world_rank(p);
}

StreamRole MoeContext::role_over(const std::vector<int>& world) const {
  if (!topology) return StreamRole::comm_intra;
  std::set<int> nodes;
  for (int w : world)
    if (w < topology->world_size()) nodes.insert(topology->node_of(w));
  return nodes.size() > 1 ? StreamRole::comm_inter : StreamRole::comm_intra;
}

Communicator& MoeContext::role_comm(StreamRole role) {
  if (!ep) throw std::logic_error("MoeContext::role_comm: no EP communicator (a graph without buffers)");
  if (!streams) {
    streams = std::make_shared<EpStreams>();
    streams->intra = ep->dup();
    streams->inter = ep->dup();
  }
  return of_role(*streams, role, "MoeContext::role_comm");
}

Communicator& MoeContext::rows_comm(StreamRole role) {
  return rows_streams ? of_role(*rows_streams, role, "MoeContext::rows_comm") : role_comm(role);
}

Communicator& MoeContext::tp_rows_comm(StreamRole role) {
  if (tp_rows) return of_role(*tp_rows, role, "MoeContext::tp_rows_comm");
  if (!tp) throw std::logic_error("MoeContext::tp_rows_comm: no TP communicator (a graph without buffers)");
  return *tp;
}

std::shared_ptr<Communicator> MoeContext::rows_communicator(Communicator& group, const std::string& purpose) const {
  auto make = [&]() -> std::shared_ptr<Communicator> { return rows_group ? rows_group(group) : group.dup(); };
  if (!rows_shared) return make();
  std::vector<int> ranks;
  for (int r = 0; r < group.size(); ++r) ranks.push_back(group.world_rank(r));
  std::lock_guard lock(rows_shared->m);
  std::shared_ptr<Communicator>& c = rows_shared->made[{purpose, ranks}];
  if (!c) c = make();
  return c;
}

MoeContext ParallelContext::block_context(int layer) const {
  MoeContext ctx;
  ctx.ep = ep;
  ctx.streams = ep_streams;
  ctx.rows_streams = ep_rows;
  ctx.rows_group = rows_group;
  ctx.rows_shared = rows_shared;
  ctx.topology = topology;
  ctx.cluster = cluster;
  ctx.executor = executor;
  ctx.layer = layer;
  ctx.tp = tp_dup;
  ctx.tp_rows = tp_rows;
  ctx.experts_sliced = experts_sliced;
  ctx.stats = dp_streams;
  if (dp) {
    ctx.stats_rank = dp->rank();
    ctx.stats_size = dp->size();
    for (int p = 0; p < dp->size(); ++p) ctx.stats_world.push_back(dp->world_rank(p));
  }
  ctx.sync_group();
  return ctx;
}

}  // namespace moebench
