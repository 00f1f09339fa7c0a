// hier_a2a: MoESys / Tutel hierarchical all-to-all (moesys.txt §IV-B, Fig. 8). Phase 1: an
// intra-node all-to-all collects, on the rank with local index l, every row of the node that
// is bound for local index l on any node. Phase 2: ranks with the same local index exchange
// across nodes, one aggregated message per node pair instead of one per rank pair
// (p x fewer, p x larger inter-node messages for p ranks per node).
#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <vector>

#include "moebench/dist/communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/strategies/token_exchange.h"

namespace moebench {
namespace {

// Places the EP group's ranks on a nodes x per_node grid (node-major, local index by EP rank).
struct Grid {
  int nodes = 0, per_node = 0;
  std::vector<int> node, local;  // by EP rank
  std::vector<std::vector<int>> at;  // at[node][local] -> EP rank
};

Grid make_grid(Communicator& ep, const Topology& topo) {
  const int P = ep.size();
  std::map<int, std::vector<int>> by_node;  // world node -> EP ranks in order
  for (int r = 0; r < P; ++r) by_node[topo.node_of(ep.world_rank(r))].push_back(r);
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

class HierA2a : public TokenExchange {
 public:
  std::string name() const override { return "hier_a2a"; }

  // Predicted (never measured), uniform routing, p = EP ranks per node, m = nodes:
  // phase 1 sends tokens*k*(p-1)/p rows inside the node; phase 2 sends
  // tokens*k*(m-1)/m rows across nodes in m-1 messages of p-fold size.
  StrategyCost predict(const CostInputs& in) const override {
    StrategyCost c;
    const int p = std::max(1, in.devices_per_node), m = std::max(1, in.ep_size / p);
    const double rows = in.tokens * in.top_k, row = (double)in.hidden * sizeof(float);
    c.bytes_intra = rows * row * (p - 1) / p;
    c.bytes_inter = rows * row * (m - 1) / m;
    const double t1 = (in.intra_bw > 0 ? c.bytes_intra / in.intra_bw : 0) + (p - 1) * in.latency;
    const double t2 = (in.inter_bw > 0 ? c.bytes_inter / in.inter_bw : 0) + (m - 1) * in.latency;
    c.comm_seconds = 2.0 * (t1 + t2);
    c.compute_seconds = in.flops_rate > 0 ? 4.0 * rows * in.hidden * in.ffn / in.flops_rate : 0;
    return c;
  }

 protected:
  void transfer(const float* send, const std::vector<long>& send_rows, float* recv,
                const std::vector<long>&, const std::vector<long>& rows, int C,
                MoeContext& ctx) override {
    Communicator& ep = *ctx.ep;
    if (!ctx.topology) throw std::invalid_argument("hier_a2a needs the topology");
    if (!intra_ || ep_id_ != &ep) setup(ep, *ctx.topology);
    const int P = ep.size(), me = ep.rank(), p = grid_.per_node, m = grid_.nodes;
    const int my_node = grid_.node[me], my_local = grid_.local[me];
    auto R = [&](int s, int d) { return rows[(size_t)s * P + d]; };
    std::vector<long> send_off(P + 1, 0);
    for (int d = 0; d < P; ++d) send_off[d + 1] = send_off[d] + send_rows[d];

    // Phase 1 (intra-node): to local index l go the rows for every (node n, local l) dest,
    // ordered by dest node. From local index q we get rows of q bound for (n, my_local).
    std::vector<size_t> sc(p), sd(p), rc(p), rd(p);
    stage1_.clear();
    for (int l = 0; l < p; ++l) {
      sd[l] = stage1_.size();
      for (int n = 0; n < m; ++n) {
        const int d = grid_.at[n][l];
        stage1_.insert(stage1_.end(), send + send_off[d] * C, send + send_off[d + 1] * C);
      }
      sc[l] = stage1_.size() - sd[l];
    }
    size_t total = 0;
    for (int q = 0; q < p; ++q) {
      const int s = grid_.at[my_node][q];
      rd[q] = total;
      for (int n = 0; n < m; ++n) total += (size_t)R(s, grid_.at[n][my_local]) * C;
      rc[q] = total - rd[q];
    }
    mid_.resize(total);
    intra_->all_to_all_v(stage1_.data(), sc.data(), sd.data(), mid_.data(), rc.data(), rd.data(), DType::f32);

    // Phase 2 (inter-node, same local index): to node n go, for each source q of my node in
    // local order, its rows bound for (n, my_local).
    std::vector<size_t> sc2(m), sd2(m), rc2(m), rd2(m);
    stage2_.clear();
    for (int n = 0; n < m; ++n) {
      sd2[n] = stage2_.size();
      for (int q = 0; q < p; ++q) {
        const int s = grid_.at[my_node][q];
        size_t off = rd[q];  // rows of source q in mid_, grouped by dest node
        for (int nn = 0; nn < n; ++nn) off += (size_t)R(s, grid_.at[nn][my_local]) * C;
        const size_t len = (size_t)R(s, grid_.at[n][my_local]) * C;
        stage2_.insert(stage2_.end(), mid_.begin() + (long)off, mid_.begin() + (long)(off + len));
      }
      sc2[n] = stage2_.size() - sd2[n];
    }
    // From node n: rows of each source (n, q), q in local order, bound for me. Place them at
    // their source's position in the source-major receive buffer.
    std::vector<long> recv_off(P + 1, 0);
    for (int s = 0; s < P; ++s) recv_off[s + 1] = recv_off[s] + R(s, me);
    total = 0;
    for (int n = 0; n < m; ++n) {
      rd2[n] = total;
      for (int q = 0; q < p; ++q) total += (size_t)R(grid_.at[n][q], me) * C;
      rc2[n] = total - rd2[n];
    }
    mid_.resize(total);
    inter_->all_to_all_v(stage2_.data(), sc2.data(), sd2.data(), mid_.data(), rc2.data(), rd2.data(), DType::f32);
    for (int n = 0; n < m; ++n) {
      size_t off = rd2[n];
      for (int q = 0; q < p; ++q) {
        const int s = grid_.at[n][q];
        const size_t len = (size_t)R(s, me) * C;
        if (len) std::memcpy(recv + recv_off[s] * C, mid_.data() + off, len * sizeof(float));
        off += len;
      }
    }
  }

 private:
  void setup(Communicator& ep, const Topology& topo) {
    grid_ = make_grid(ep, topo);
    const int me = ep.rank();
    intra_ = ep.split(grid_.node[me], grid_.local[me]);
    inter_ = ep.split(grid_.nodes + grid_.local[me], grid_.node[me]);
    ep_id_ = &ep;
  }

  Grid grid_;
  const Communicator* ep_id_ = nullptr;
  std::unique_ptr<Communicator> intra_, inter_;
  std::vector<float> stage1_, stage2_, mid_;
};

}  // namespace

std::unique_ptr<MoeStrategy> make_hier_a2a() { return std::make_unique<HierA2a>(); }

}  // namespace moebench
