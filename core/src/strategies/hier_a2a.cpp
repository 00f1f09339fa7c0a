// hier_a2a: MoESys / Tutel hierarchical all-to-all (moesys.txt §IV-B, Fig. 8). Phase 1: an
// intra-node all-to-all collects, on the rank with local index l, every row of the node that
// is bound for local index l on any node. Phase 2: ranks with the same local index exchange
// across nodes, one aggregated message per node pair instead of one per rank pair
// (p x fewer, p x larger inter-node messages for p ranks per node).
#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "cost_support.h"
#include "moebench/dist/communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/config/config.h"
#include "moebench/strategies/strategy_descriptor.h"
#include "moebench/strategies/token_exchange.h"

namespace moebench {
namespace {

// Places the EP group's ranks on a nodes x per_node grid (node-major, local index by EP rank).
struct Grid {
  int nodes = 0, per_node = 0;
  std::vector<int> node, local;  // by EP rank
  std::vector<std::vector<int>> at;  // at[node][local] -> EP rank
};

// node_of: world rank -> node (the Topology at run time, the ClusterModel in predict).
Grid make_grid(const std::vector<int>& ep_world, const std::function<int(int)>& node_of) {
  const int P = (int)ep_world.size();
  std::map<int, std::vector<int>> by_node;  // world node -> EP ranks in order
  for (int r = 0; r < P; ++r) by_node[node_of(ep_world[r])].push_back(r);
  Grid g;
  g.nodes = (int)by_node.size();
  g.per_node = (int)by_node.begin()->second.size();
  g.node.resize(P);
  g.local.resize(P);
  int n = 0;
  for (auto& [world_node, ranks] : by_node) {
    if ((int)ranks.size() != g.per_node)
      throw std::invalid_argument("hier_a2a needs the same number of EP ranks on every node (node " +
                                  std::to_string(world_node) + " has " + std::to_string(ranks.size()) +
                                  ", another " + std::to_string(g.per_node) + ")");
    for (int l = 0; l < g.per_node; ++l) {
      g.node[ranks[l]] = n;
      g.local[ranks[l]] = l;
    }
    g.at.push_back(ranks);
    ++n;
  }
  return g;
}

// Scratch of one transfer in the rows' memory, shared by its two phases (each transfer has its
// own: chunks and blocks run their phases concurrently on the two comm roles).
struct Staging {
  RowArray stage1, mid, stage2, mid2;
};

class HierA2a : public TokenExchange {
 public:
  using TokenExchange::TokenExchange;
  std::string name() const override { return "hier_a2a"; }

  // Predicted (never measured), balanced routing, p EP ranks on each of m nodes: phase 1
  // sends tokens*k/p rows to each other local rank, phase 2 tokens*k/m rows to the rank of the
  // same local index on each other node (one message per node pair); the phases run one after
  // the other, for dispatch and again for combine. Compute as expert_centric.
  StrategyCost predict(const CostInputs& in, const MoeContext& ctx, const ClusterModel& cluster) const override {
    const int L = cost::experts_per_rank(ctx), P = (int)ctx.ep_world.size(), D = overlap_degree();
    const Grid grid = make_grid(ctx.ep_world, [&](int r) { return cluster.node_of(r); });
    const int p = grid.per_node, m = grid.nodes;
    const double rows = in.tokens * in.top_k, row_bytes = (double)ctx.C * ctx.wire_element_bytes;
    std::vector<cost::RankCost> ranks(P);
    for (int i = 0; i < P; ++i) {
      std::vector<cost::Flow> phase1, phase2;
      for (int l = 0; l < p; ++l)
        if (l != grid.local[i]) phase1.push_back({ctx.ep_world[grid.at[grid.node[i]][l]], rows / p * row_bytes, (double)D});
      for (int n = 0; n < m; ++n)
        if (n != grid.node[i]) phase2.push_back({ctx.ep_world[grid.at[n][grid.local[i]]], rows / m * row_bytes, (double)D});
      const int me = ctx.ep_world[i];
      const LinkBytes b1 = cost::flow_bytes(cluster, me, phase1), b2 = cost::flow_bytes(cluster, me, phase2);
      ranks[i].bytes = {2.0 * (b1.intra + b2.intra), 2.0 * (b1.inter + b2.inter)};
      ranks[i].comm_seconds = 2.0 * (cost::flow_seconds(cluster, me, phase1, ctx.ep_world) +
                                     cost::flow_seconds(cluster, me, phase2, ctx.ep_world));
      ranks[i].compute_seconds = cost::experts_seconds(cluster, (double)L * D, P * rows / ctx.experts / D, ctx.C, ctx.F);
    }
    return cost::summarize(cluster, ctx.ep_world, ranks);
  }

 protected:
  void prepare(MoeContext& ctx) override {
    if (intra_ && ep_id_ == ctx.ep) return;
    if (!ctx.topology) throw std::invalid_argument("hier_a2a needs the topology");
    const Grid grid = make_grid(ctx.ep_world, [&ctx](int r) { return ctx.topology->node_of(r); });
    const int me = ctx.ep_rank;
    intra_group_ = ctx.ep->split(grid.node[me], grid.local[me]);
    inter_group_ = ctx.ep->split(grid.nodes + grid.local[me], grid.node[me]);
    // the rows' memory (NCCL on a GPU), one pair for every block: each phase's calls come from
    // its own role in graph order
    intra_ = ctx.rows_communicator(*intra_group_, "hier_a2a.intra");
    inter_ = ctx.rows_communicator(*inter_group_, "hier_a2a.inter");
    ep_id_ = ctx.ep;
  }

  // Phase 1 (comm.intra): to local index l go the rows for every (node n, local l) dest,
  // ordered by dest node; from local index q come the rows of q bound for (n, my local).
  // Phase 2 (comm.inter, same local index): to node n go, for each source q of my node in
  // local order, its rows bound for (n, my local); from node n come the rows of each source
  // (n, q) bound for me, placed at their source's position in the source-major receive buffer.
  TaskId add_transfer(TaskGraph& g, const TransferSpec& t, const std::vector<TaskId>& after,
                      MoeContext& ctx) override {
    if (!ctx.topology) throw std::invalid_argument("hier_a2a needs the topology");
    const Grid grid = make_grid(ctx.ep_world, [&ctx](int r) { return ctx.topology->node_of(r); });
    const int P = ctx.ep_size, me = ctx.ep_rank, p = grid.per_node, m = grid.nodes, C = t.C;
    const int my_node = grid.node[me], my_local = grid.local[me];
    auto R = [&t, P](int s, int d) { return t.rows[(size_t)s * P + d]; };

    std::vector<size_t> sc(p), sd(p), rc(p), rd(p);
    size_t total = 0;
    for (int l = 0; l < p; ++l) {
      sd[l] = total;
      for (int n = 0; n < m; ++n) total += (size_t)t.send_rows[grid.at[n][l]] * C;
      sc[l] = total - sd[l];
    }
    total = 0;
    for (int q = 0; q < p; ++q) {
      const int s = grid.at[my_node][q];
      rd[q] = total;
      for (int n = 0; n < m; ++n) total += (size_t)R(s, grid.at[n][my_local]) * C;
      rc[q] = total - rd[q];
    }
    std::vector<size_t> sc2(m), sd2(m), rc2(m), rd2(m);
    total = 0;
    for (int n = 0; n < m; ++n) {
      sd2[n] = total;
      for (int q = 0; q < p; ++q) total += (size_t)R(grid.at[my_node][q], grid.at[n][my_local]) * C;
      sc2[n] = total - sd2[n];
    }
    total = 0;
    for (int n = 0; n < m; ++n) {
      rd2[n] = total;
      for (int q = 0; q < p; ++q) total += (size_t)R(grid.at[n][q], me) * C;
      rc2[n] = total - rd2[n];
    }

    GraphTask one, two;
    one.name = std::string(t.name) + ".intra";
    two.name = std::string(t.name) + ".inter";
    one.category = two.category = TaskCategory::comm;
    one.role = StreamRole::comm_intra;
    two.role = StreamRole::comm_inter;
    one.layer = two.layer = t.layer;
    one.chunk = two.chunk = t.chunk;
    for (int l = 0; l < p; ++l)
      if (l != my_local && sc[l]) one.cost.bytes_to_peer.push_back({ctx.ep_world[grid.at[my_node][l]], sc[l] * (uint64_t)ctx.wire_element_bytes});
    for (int n = 0; n < m; ++n)
      if (n != my_node && sc2[n]) two.cost.bytes_to_peer.push_back({ctx.ep_world[grid.at[n][my_local]], sc2[n] * (uint64_t)ctx.wire_element_bytes});
    if (t.act) {
      auto st = std::make_shared<Staging>();
      RowOps* ops = &ctx.row_ops();
      Communicator* intra = intra_.get();
      Communicator* inter = inter_.get();
      std::vector<long> send_off(P + 1, 0);
      for (int d = 0; d < P; ++d) send_off[d + 1] = send_off[d] + t.send_rows[d];
      const float* send = t.send;
      one.action = [=] {
        float* stage1 = st->stage1.resize(*ops, (long)(sd[p - 1] + sc[p - 1]));
        long at = 0;
        for (int l = 0; l < p; ++l)
          for (int n = 0; n < m; ++n) {
            const int d = grid.at[n][l];
            const long len = (send_off[d + 1] - send_off[d]) * C;
            if (len) ops->copy(stage1 + at, send + send_off[d] * C, len);
            at += len;
          }
        float* mid = st->mid.resize(*ops, (long)(rd[p - 1] + rc[p - 1]));
        intra->all_to_all_v(stage1, sc.data(), sd.data(), mid, rc.data(), rd.data(), DType::f32);
      };
      std::vector<long> recv_off(P + 1, 0);
      for (int s = 0; s < P; ++s) recv_off[s + 1] = recv_off[s] + R(s, me);
      std::vector<long> rows = t.rows;
      float* recv = t.recv;
      two.action = [=] {
        auto Rs = [&rows, P](int s, int d) { return rows[(size_t)s * P + d]; };
        float* stage2 = st->stage2.resize(*ops, (long)(sd2[m - 1] + sc2[m - 1]));
        const float* mid = st->mid.data();
        long at = 0;
        for (int n = 0; n < m; ++n)
          for (int q = 0; q < p; ++q) {
            const int s = grid.at[my_node][q];
            size_t off = rd[q];  // rows of source q in mid, grouped by dest node
            for (int nn = 0; nn < n; ++nn) off += (size_t)Rs(s, grid.at[nn][my_local]) * C;
            const long len = Rs(s, grid.at[n][my_local]) * C;
            if (len) ops->copy(stage2 + at, mid + off, len);
            at += len;
          }
        float* mid2 = st->mid2.resize(*ops, (long)(rd2[m - 1] + rc2[m - 1]));
        inter->all_to_all_v(stage2, sc2.data(), sd2.data(), mid2, rc2.data(), rd2.data(), DType::f32);
        for (int n = 0; n < m; ++n) {
          size_t off = rd2[n];
          for (int q = 0; q < p; ++q) {
            const int s = grid.at[n][q];
            const long len = Rs(s, me) * C;
            if (len) ops->copy(recv + recv_off[s] * C, mid2 + off, len);
            off += len;
          }
        }
      };
    }
    const TaskId first = g.add(std::move(one), after);
    return g.add(std::move(two), {first});
  }

 private:
  const Communicator* ep_id_ = nullptr;
  std::unique_ptr<Communicator> intra_group_, inter_group_;  // the node splits of ep (MPI)
  std::shared_ptr<Communicator> intra_, inter_;              // the rows' communicators over them
};

// The config rule: hier_a2a exchanges inside each node, then between nodes: every node must hold as many ranks
// of each expert-parallel group. A group is `ep` consecutive data-parallel ranks of one
// tensor-parallel rank t, i.e. world ranks tp apart: (g * ep + i) * tp + t.
void check_node_groups(StrategyCheck& check, const ParallelLayout& layout, int per_node) {
  const int tp = layout.tp(), ep = layout.ep();
  for (const std::vector<int>& members : layout.ep_groups()) {
      std::map<int, int> on_node;
      for (int r : members) ++on_node[r / per_node];
      for (const auto& [node, n] : on_node) {
        if (n == on_node.begin()->second) continue;
        // The group's ranks: "0-2" when consecutive (tp = 1), else listed ("1,3,5"), cut in the
        // middle when long so a 1024-rank group stays one readable line.
        std::string group;
        if (tp == 1) {
          group = std::to_string(members.front()) + "-" + std::to_string(members.back());
        } else {
          for (int i = 0; i < ep; ++i) {
            if (ep > 8 && i == 3) {
              group += ",...";
              i = ep - 2;
              continue;
            }
            if (!group.empty()) group += ',';
            group += std::to_string(members[(size_t)i]);
          }
        }
        // Nodes hold per_node / tp whole tensor-parallel groups when tp divides per_node: then
        // the data-parallel ranks per node decide, as the ranks per node do without tp.
        std::string advice;
        if (tp == 1)
          advice = "set parallel.ep to a multiple of the " + std::to_string(per_node) +
                   " ranks per node, or a divisor of it";
        else if (per_node % tp == 0)
          advice = "set parallel.ep to a multiple of the " + std::to_string(per_node / tp) +
                   " data-parallel ranks per node (" + std::to_string(per_node) + " ranks / parallel.tp = " +
                   std::to_string(tp) + "), or a divisor of it";
        else
          advice = "the " + std::to_string(per_node) + " ranks per node are not a multiple of parallel.tp = " +
                   std::to_string(tp) + ", so tensor-parallel groups straddle nodes";
        check.fail("strategy.name", "hier_a2a needs the same number of expert-parallel ranks on every node, but the "
                              "group of ranks " + group + " has " + std::to_string(on_node.begin()->second) +
                              " on node " + std::to_string(on_node.begin()->first) + " and " + std::to_string(n) +
                              " on node " + std::to_string(node) + " (" + advice + ")",
             "parallel.ep");
        return;
      }
    }
}

}  // namespace

StrategyDescriptor hier_a2a_descriptor() {
  StrategyDescriptor d;
  d.spec.name = "hier_a2a";
  d.spec.summary = "MoESys's two-phase hierarchical all-to-all: inside each node, then between nodes";
  d.spec.options = {overlap_degree_option("overlap degree D of the two-level exchange (as expert_centric's)")};
  d.spec.per_block_member = true;
  d.spec.check = [](StrategyCheck& c) { check_overlap_degree(c, "hier_a2a"); };
  d.spec.chunks = [](const StrategyConfig& s) { return s.option("hier_a2a.overlap_degree").i; };
  d.spec.check_layout = check_node_groups;
  d.make = [](const StrategyConfig& s) -> std::unique_ptr<MoeStrategy> {
    return std::make_unique<HierA2a>(s.option("hier_a2a.overlap_degree").i);
  };
  d.candidates = [](const Config&) { return std::vector<PlannerCandidate>{{"hier_a2a", [](StrategyConfig&) {}, true, true}}; };
  d.inapplicable = [](const Config& c) -> std::string {
    const int W = c.run.ranks, nodes = c.cluster.nodes;
    const int per_node = c.cluster.devices_per_node > 0 ? c.cluster.devices_per_node : W / nodes;
    if (nodes < 2) return "one node: nothing hierarchical to exploit";
    const int tp = std::max(1, c.parallel.tp), pp = std::max(1, c.parallel.pp);
    const int ep = c.parallel.ep > 0 ? c.parallel.ep : W / (tp * pp);
    if (ep % per_node != 0 && per_node % ep != 0) return "EP groups do not cover whole nodes";
    return overlap_degree_inapplicable(c, c.strategy.option("hier_a2a.overlap_degree").i);
  };
  d.overlap_variants = [](const Config&, int tp, int nodes) {
    std::vector<BenchVariant> out;
    if (tp > 1 || nodes < 2) return out;
    for (int degree : {1, 2})
      out.push_back({"hier_a2a D=" + std::to_string(degree),
                     [degree](StrategyConfig& s) { s.option("hier_a2a.overlap_degree").i = degree; }});
    return out;
  };
  return d;
}

}  // namespace moebench
