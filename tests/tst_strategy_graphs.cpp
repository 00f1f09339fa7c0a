// ctest-labels: unit
// The strategies' task graphs, built without buffers and without MPI from a hand-made counts
// matrix (4 EP ranks on 2 virtual nodes of 2, one expert each, C = 2, F = 3), against
// hand-computed tasks, dependencies and bytes per peer. The counts (rows rank s routes to
// expert e):
//          e0 e1 e2 e3
//     s0 [  2  4  1  3 ]
//     s1 [  3  6  5  2 ]
//     s2 [  0  1  4  2 ]
//     s3 [  1  0  2  5 ]
// Rank 1 (node 0, local 1) sends 3, 5, 2 rows to ranks 0, 2, 3 and receives 4, 1, 0 rows
// from them (6 stay); a row is C x 4 = 8 bytes.
#include <QtTest>

#include <string>
#include <vector>

#include "moebench/config/strategy_names.h"
#include "moebench/dist/topology.h"
#include "moebench/moe/block_graph.h"
#include "moebench/runtime/graph_dump.h"
#include "moebench/strategies/registry.h"

#include "test_support.h"

using namespace moebench;

namespace {

constexpr int P = 4, E = 4, C = 2, F = 3, N = 10, K = 2;
const std::vector<long> kCounts = {2, 4, 1, 3, 3, 6, 5, 2, 0, 1, 4, 2, 1, 0, 2, 5};

using Sends = std::vector<std::pair<int, uint64_t>>;

struct Built {
  TaskGraph g;
  std::vector<std::string> names;
};

Built build(const std::string& strategy, int me, int degree, MoePass pass) {
  static const Topology topo = Topology::virtual_blocks(2, 2);
  MoeContext ctx;
  ctx.topology = &topo;
  ctx.layer = 3;
  ctx.experts = E;
  ctx.C = C;
  ctx.F = F;
  ctx.ep_rank = me;
  ctx.ep_size = P;
  ctx.ep_world = {0, 1, 2, 3};
  ctx.first_local = me;
  auto s = test::make_strategy_with_degree(strategy, degree);
  ExchangeCounts counts;
  counts.P = P;
  counts.E = E;
  counts.rows = kCounts;
  auto h = s->layout(counts, ctx);
  Built b;
  if (pass == MoePass::backward) {
    TaskGraph fwd;
    add_block_pass(fwd, *s, *h, MoePass::forward, ctx, {N, C, E, K}, {});
  }
  add_block_pass(b.g, *s, *h, pass, ctx, {N, C, E, K}, {});
  for (const GraphTask& t : b.g.tasks()) {
    std::string name = t.name;
    if (t.chunk >= 0) name.append(1, '#').append(std::to_string(t.chunk));
    b.names.push_back(name);
  }
  return b;
}

const GraphTask* find(const TaskGraph& g, const std::string& name, int chunk = -1) {
  for (const GraphTask& t : g.tasks())
    if (t.name == name && t.chunk == chunk) return &t;
  return nullptr;
}

}  // namespace

class TestStrategyGraphs : public QObject {
  Q_OBJECT

 private slots:
  void expert_centric_forward() {
    const Built b = build("expert_centric", 1, 1, MoePass::forward);
    QCOMPARE(b.names, (std::vector<std::string>{"moe.router", "moe.counts", "moe.dispatch", "moe.experts", "moe.combine",
                                                "moe.combine"}));
    const TaskGraph& g = b.g;
    for (int i = 1; i < (int)g.size(); ++i) QCOMPARE(g.task(i).deps, (std::vector<int>{i - 1}));  // a chain
    QVERIFY(g.task(1).role == StreamRole::comm_inter);  // the EP group spans both nodes
    QCOMPARE(g.task(1).cost.bytes_to_peer, (Sends{{0, 32}, {2, 32}, {3, 32}}));  // E int64 counts each
    QCOMPARE(g.task(2).cost.bytes_to_peer, (Sends{{0, 24}, {2, 40}, {3, 16}}));  // 3, 5, 2 rows
    QCOMPARE(g.task(3).cost.flops, 4.0 * 11 * C * F);                         // 4 + 6 + 1 + 0 rows
    QCOMPARE(g.task(4).cost.bytes_to_peer, (Sends{{0, 32}, {2, 8}}));         // outputs of 4, 1 rows back
    QCOMPARE(g.task(0).cost.flops, 2.0 * N * C * E);
    QCOMPARE(g.task(5).cost.flops, 2.0 * N * K * C);
    for (const GraphTask& t : g.tasks()) {
      QCOMPARE(t.layer, 3);
      QVERIFY(!t.action);
    }
  }

  void expert_centric_overlap_degree_2() {
    const Built b = build("expert_centric", 1, 2, MoePass::forward);
    QCOMPARE(b.names, (std::vector<std::string>{"moe.router", "moe.counts", "moe.pack#0", "moe.pack#1", "moe.dispatch#0",
                                                "moe.experts#0", "moe.dispatch#1", "moe.experts#1", "moe.combine#0",
                                                "moe.unpack#0", "moe.combine#1", "moe.unpack#1", "moe.combine"}));
    const TaskGraph& g = b.g;
    // Chunk 0 of n rows is floor(n/2): sends 1, 2, 1 rows; chunk 1 the rest: 2, 3, 1.
    QCOMPARE(find(g, "moe.dispatch", 0)->cost.bytes_to_peer, (Sends{{0, 8}, {2, 16}, {3, 8}}));
    QCOMPARE(find(g, "moe.dispatch", 1)->cost.bytes_to_peer, (Sends{{0, 16}, {2, 24}, {3, 8}}));
    QCOMPARE(find(g, "moe.pack", 0)->cost.copy_bytes, (uint64_t)(1 + 3 + 2 + 1) * 8);  // own rows too
    // Received: chunk 0 floor(4/2) + floor(6/2) + floor(1/2) = 5 rows, chunk 1 the other 6.
    QCOMPARE(find(g, "moe.experts", 0)->cost.flops, 4.0 * 5 * C * F);
    QCOMPARE(find(g, "moe.experts", 1)->cost.flops, 4.0 * 6 * C * F);
    QCOMPARE(find(g, "moe.combine", 0)->cost.bytes_to_peer, (Sends{{0, 16}}));
    QCOMPARE(find(g, "moe.combine", 1)->cost.bytes_to_peer, (Sends{{0, 16}, {2, 8}}));
    // Dependencies: pack -> dispatch -> experts -> combine -> unpack per chunk; the block's
    // combine after both unpacks.
    QCOMPARE(g.task(4).deps, (std::vector<int>{2}));
    QCOMPARE(g.task(6).deps, (std::vector<int>{3}));
    QCOMPARE(g.task(8).deps, (std::vector<int>{5}));
    QCOMPARE(g.task(10).deps, (std::vector<int>{7}));
    QCOMPARE(g.task(12).deps, (std::vector<int>{9, 11}));
    // One comm stream: dispatch 0, dispatch 1, combine 0, combine 1 (chunk 1's exchange
    // overlaps chunk 0's experts).
    std::vector<std::string> comm;
    for (int i : g.topological_order())
      if (g.task(i).role == StreamRole::comm_inter) comm.push_back(b.names[(size_t)i]);
    QCOMPARE(comm, (std::vector<std::string>{"moe.counts", "moe.dispatch#0", "moe.dispatch#1", "moe.combine#0",
                                             "moe.combine#1"}));
  }

  void expert_centric_backward() {
    const Built b = build("expert_centric", 1, 1, MoePass::backward);
    QCOMPARE(b.names, (std::vector<std::string>{"moe.combine_backward", "moe.dispatch_grad", "moe.experts_backward",
                                                "moe.combine_grad", "moe.router_backward"}));
    QCOMPARE(b.g.task(1).cost.bytes_to_peer, (Sends{{0, 24}, {2, 40}, {3, 16}}));
    QCOMPARE(b.g.task(2).cost.flops, 8.0 * 11 * C * F);
    QCOMPARE(b.g.task(3).cost.bytes_to_peer, (Sends{{0, 32}, {2, 8}}));
  }

  void hier_a2a_two_phases() {
    const Built b = build("hier_a2a", 1, 1, MoePass::forward);
    QCOMPARE(b.names, (std::vector<std::string>{"moe.router", "moe.counts", "moe.dispatch.intra", "moe.dispatch.inter",
                                                "moe.experts", "moe.combine.intra", "moe.combine.inter",
                                                "moe.combine"}));
    const TaskGraph& g = b.g;
    QVERIFY(g.task(2).role == StreamRole::comm_intra && g.task(3).role == StreamRole::comm_inter);
    // Phase 1 to local index 0 (rank 0): rank 1's rows for ranks 0 and 2 = 3 + 5 rows.
    QCOMPARE(g.task(2).cost.bytes_to_peer, (Sends{{0, 64}}));
    // Phase 2 to rank 3 (node 1, local 1): node 0's rows bound for rank 3 = R(0,3) + R(1,3) = 3 + 2.
    QCOMPARE(g.task(3).cost.bytes_to_peer, (Sends{{3, 40}}));
    // Return trip (transposed): phase 1 to rank 0: rows rank 1 got from ranks 0 and 2 = 4 + 1;
    // phase 2 to rank 3: rows ranks 0 and 1 got from rank 3 = counts(3, e0) + counts(3, e1) = 1 + 0.
    QCOMPARE(g.task(5).cost.bytes_to_peer, (Sends{{0, 40}}));
    QCOMPARE(g.task(6).cost.bytes_to_peer, (Sends{{3, 8}}));
  }

  void data_centric_needs_no_counts_exchange() {
    const Built b = build("data_centric", 1, 1, MoePass::forward);
    QCOMPARE((int)b.g.size(), 3);  // router, the protocol's task, combine
    QCOMPARE(b.names.front(), std::string("moe.router"));
    QCOMPARE(b.names.back(), std::string("moe.combine"));
  }

  void registry_makes_every_configurable_strategy() {
    for (const std::string& name : strategy_names()) {
      if (name == "janus") {  // chosen per block
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, make_strategy(name));
        continue;
      }
      QCOMPARE(make_strategy(name)->name(), name);
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, make_strategy("tutel"));
  }

  void graphs_for_64_ranks_without_mpi() {
    // 64 ranks on 8 nodes, 2 experts each, every rank routes 3 rows to every expert: the graph of
    // rank 37 sends 3 x 2 rows to each of the 63 others.
    const int P64 = 64, E64 = 128;
    const Topology topo = Topology::virtual_blocks(8, 8);
    MoeContext ctx;
    ctx.topology = &topo;
    ctx.experts = E64;
    ctx.C = C;
    ctx.F = F;
    ctx.ep_rank = 37;
    ctx.ep_size = P64;
    for (int p = 0; p < P64; ++p) ctx.ep_world.push_back(p);
    ctx.first_local = 74;
    ExchangeCounts counts;
    counts.P = P64;
    counts.E = E64;
    counts.rows.assign((size_t)P64 * E64, 3);
    auto s = test::make_strategy_with_degree("expert_centric", 3);
    auto h = s->layout(counts, ctx);
    TaskGraph g;
    add_block_pass(g, *s, *h, MoePass::forward, ctx, {P64 * 3, C, E64, 1}, {});
    uint64_t sent = 0;
    for (int chunk = 0; chunk < 3; ++chunk) {
      const GraphTask* d = find(g, "moe.dispatch", chunk);
      QVERIFY(d);
      QCOMPARE((int)d->cost.bytes_to_peer.size(), 63);
      sent += d->cost.bytes_sent();
    }
    QCOMPARE(sent, (uint64_t)63 * 2 * 3 * C * 4);
    QVERIFY(graph_json(g)["tasks"].size() == g.size());
  }
};

QTEST_APPLESS_MAIN(TestStrategyGraphs)
#include "tst_strategy_graphs.moc"
