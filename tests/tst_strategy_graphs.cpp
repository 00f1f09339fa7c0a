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

#include <algorithm>
#include <cmath>
#include <set>

#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/strategy_spec.h"
#include "moebench/dist/topology.h"
#include "moebench/moe/block_graph.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/runtime/graph_dump.h"
#include "moebench/strategies/data_centric.h"
#include "moebench/strategies/fastermoe.h"
#include "moebench/strategies/monta.h"
#include "moebench/strategies/registry.h"

#include "test_support.h"

using namespace moebench;

Q_DECLARE_METATYPE(std::vector<std::string>)
Q_DECLARE_METATYPE(std::vector<std::vector<int>>)

namespace {

constexpr int P = 4, E = 4, C = 2, F = 3, N = 10, K = 2;
const std::vector<long> kCounts = {2, 4, 1, 3, 3, 6, 5, 2, 0, 1, 4, 2, 1, 0, 2, 5};

using Sends = std::vector<std::pair<int, uint64_t>>;

struct Built {
  TaskGraph g;
  std::vector<std::string> names;
};

// Block 3 of EP rank `me` of 4 (2 nodes x 2), without communicators: `experts` over the
// group, experts / 4 owned by each rank.
MoeContext block_context(int me, int experts) {
  static const Topology topo = Topology::virtual_blocks(2, 2);
  MoeContext ctx;
  ctx.topology = &topo;
  ctx.layer = 3;
  ctx.experts = experts;
  ctx.C = C;
  ctx.F = F;
  ctx.ep_rank = me;
  ctx.ep_size = P;
  ctx.ep_world = {0, 1, 2, 3};
  ctx.first_local = me * (experts / P);
  return ctx;
}

// block_context's cluster for data_centric: 2 nodes x 2, local ranks 0 and 1 behind one PCIe
// switch (its pcie_pairing reads the pairs there).
const ClusterModel* paired_cluster() {
  static const ClusterModel cluster = [] {
    ClusterSpec spec;
    spec.nodes = 2;
    spec.devices_per_node = 2;
    spec.pcie_switch_pairs = {0, 1};
    return ClusterModel(spec);
  }();
  return &cluster;
}

// The pass of `s` for EP rank ctx.ep_rank on the counts `rows` (the forward first for a
// backward); task names with "#chunk" and, with `experts`, "@expert".
Built build_pass(MoeStrategy& s, MoeHandle& h, MoeContext& ctx, MoePass pass, bool experts) {
  Built b;
  if (pass == MoePass::backward) {
    TaskGraph fwd;
    add_block_pass(fwd, s, h, MoePass::forward, ctx, {N, C, E, K}, {});
  }
  add_block_pass(b.g, s, h, pass, ctx, {N, C, E, K}, {});
  for (const GraphTask& t : b.g.tasks()) {
    std::string name = t.name;
    if (t.chunk >= 0) name.append(1, '#').append(std::to_string(t.chunk));
    if (experts && t.expert >= 0) name.append(1, '@').append(std::to_string(t.expert));
    b.names.push_back(name);
  }
  return b;
}

ExchangeCounts counts_of(const std::vector<long>& rows) {
  ExchangeCounts counts;
  counts.P = P;
  counts.E = E;
  counts.rows = rows;
  return counts;
}

Built build(const std::string& strategy, int me, int degree, MoePass pass) {
  MoeContext ctx = block_context(me, E);
  auto s = test::make_strategy_with_degree(strategy, degree);
  auto h = s->layout(counts_of(kCounts), ctx);
  return build_pass(*s, *h, ctx, pass, false);
}

const GraphTask* find(const TaskGraph& g, const std::string& name, int chunk = -1) {
  for (const GraphTask& t : g.tasks())
    if (t.name == name && t.chunk == chunk) return &t;
  return nullptr;
}

// data_centric on 4 EP ranks = 2 nodes of 2, 8 experts (rank p owns 2p, 2p+1), C = 2, F = 3:
// an expert is 2*3*2 + 3 + 2 = 17 floats = 68 bytes. Counts (rows rank s routes to expert e):
//          e0 e1 e2 e3 e4 e5 e6 e7
//     s0 [  1  0  2  0  3  0  1  0 ]
//     s1 [  2  3  1  0  4  0  2  5 ]
//     s2 [  0  1  0  2  0  3  1  0 ]
//     s3 [  4  0  0  1  2  2  0  1 ]
// Rank 1 (node 0, local 1) uses e2 (owned, 1 row), e0, e1 (internal, owner rank 0) and e4, e6,
// e7 (external, owners 2, 3, 3); its pull order (priority) is e0, e1, e4, e5, e6, e7.
constexpr int kDcE = 8;
constexpr uint64_t kDcExpertBytes = (2 * F * C + F + C) * 4;
const std::vector<long> kDcCounts = {1, 0, 2, 0, 3, 0, 1, 0, 2, 3, 1, 0, 4, 0, 2, 5,
                                     0, 1, 0, 2, 0, 3, 1, 0, 4, 0, 0, 1, 2, 2, 0, 1};

using DcOptions = DataCentricOptions;

std::unique_ptr<MoeStrategy> make_dc(const DcOptions& o) {
  StrategyConfig options;
  options.option("data_centric.credits").i = o.credits;
  options.option("data_centric.priority").b = o.priority;
  options.option("data_centric.prefetch").b = o.prefetch;
  options.option("data_centric.hierarchical").b = o.hierarchical;
  options.option("data_centric.pcie_pairing").b = o.pcie_pairing;
  return make_strategy("data_centric", options);
}

ExchangeCounts dc_counts() {
  ExchangeCounts counts;
  counts.P = P;
  counts.E = kDcE;
  counts.rows = kDcCounts;
  return counts;
}

// The block's pass of rank `me` (router / combine_backward first), built without buffers.
Built dc_build(const DcOptions& o, MoePass pass, int me = 1) {
  MoeContext ctx = block_context(me, kDcE);
  ctx.cluster = paired_cluster();
  auto s = make_dc(o);
  auto h = s->layout(dc_counts(), ctx);
  Built b;
  add_block_pass(b.g, *s, *h, pass, ctx, {N, C, kDcE, K}, {});
  for (const GraphTask& t : b.g.tasks())
    b.names.push_back(t.expert >= 0 ? t.name + "@" + std::to_string(t.expert) : t.name);
  return b;
}

std::vector<std::vector<int>> deps_of(const TaskGraph& g) {
  std::vector<std::vector<int>> out;
  for (const GraphTask& t : g.tasks()) out.push_back(t.deps);
  return out;
}

// monta on world rank 0 of 2 nodes x 2: TP group {0, 1} (node 0), EP group {0, 2} (across the
// nodes), one expert per EP rank, C = 2 (8 bytes a row). Counts (rows EP rank s routes to e):
//     s0 [ 3  5 ]    s1 [ 4  7 ]
// Dispatch: rank 0 keeps 3 rows, sends 5 to EP rank 1, receives 3 (own) + 4. A run of n rows
// is cut into N x t = parts pieces [n q / parts, n (q + 1) / parts); TP rank u sends pieces
// (j, u), q = j t + u.
struct MontaBuilt {
  TaskGraph g;
  std::vector<std::string> names;
};
MontaBuilt monta_build(const std::string& level, int chunks, bool sliced, int me = 0,
                       std::vector<long> rows = {3, 5, 4, 7}, const ClusterModel* cluster = nullptr) {
  static const Topology topo = Topology::virtual_blocks(2, 2);
  MoeContext ctx;
  ctx.topology = &topo;
  ctx.layer = 3;
  ctx.experts = 2;
  ctx.C = C;
  ctx.F = F;
  ctx.ep_rank = me;
  ctx.ep_size = 2;
  ctx.ep_world = {0, 2};
  ctx.first_local = me;
  ctx.cluster = cluster;
  ctx.tp_rank = 0;
  ctx.tp_size = 2;
  ctx.tp_world = {0, 1};
  ctx.experts_sliced = sliced;
  StrategyConfig options;
  options.name = "monta";
  options.option("monta.level").s = level;
  options.option("monta.chunks").s = chunks > 0 ? std::to_string(chunks) : "auto";
  auto s = make_strategy("monta", options);
  ExchangeCounts counts;
  counts.P = 2;
  counts.E = 2;
  counts.rows = std::move(rows);
  auto h = s->layout(counts, ctx);
  MontaBuilt b;
  add_block_pass(b.g, *s, *h, MoePass::forward, ctx, {8, C, 2, 1}, {});
  for (const GraphTask& t : b.g.tasks()) {
    std::string name = t.name;
    if (t.chunk >= 0) name.append(1, '#').append(std::to_string(t.chunk));
    b.names.push_back(name);
  }
  return b;
}

// fastermoe on the counts above, rank `me`, with [strategy.fastermoe] `o`; the cluster of
// block_context (2 nodes x 2, the ClusterSpec defaults: 1.2e11 FLOP/s, 1e10 B/s links) for
// shadowing's cost model.
struct FasterBuilt {
  Built b;
  std::vector<StrategyDecision> decisions;
};
FasterBuilt fastermoe_build(const FasterMoeOptions& o, int me, MoePass pass, const std::vector<long>& rows = kCounts) {
  static const ClusterModel cluster = [] {
    ClusterSpec s;
    s.nodes = 2;
    s.devices_per_node = 2;
    return ClusterModel(s);
  }();
  MoeContext ctx = block_context(me, E);
  ctx.cluster = &cluster;
  StrategyConfig options;
  options.option("fastermoe.shadow").b = o.shadow;
  options.option("fastermoe.shadow_budget_mb").d = o.shadow_budget_mb;
  options.option("fastermoe.smart").b = o.smart;
  options.option("fastermoe.group_size").i = o.group_size;
  options.option("fastermoe.topo_gate").b = o.topo_gate;
  auto s = make_strategy("fastermoe", options);
  auto h = s->layout(counts_of(rows), ctx);
  FasterBuilt out;
  out.b = build_pass(*s, *h, ctx, pass, true);
  out.decisions = s->decisions(*h);
  return out;
}

std::vector<std::string> comm_order(const Built& b) {
  std::vector<std::string> out;
  for (int i : b.g.topological_order())
    if (b.g.task(i).category == TaskCategory::comm && b.g.task(i).name != "moe.counts") out.push_back(b.names[(size_t)i]);
  return out;
}

double decision(const std::vector<StrategyDecision>& ds, const std::string& key) {
  for (const StrategyDecision& d : ds)
    if (d.key == key) return d.value;
  return std::nan("");
}

}  // namespace

class TestStrategyGraphs : public QObject {
  Q_OBJECT

 private slots:
  // The aux loss's router statistics: a ring all-reduce over the DP group beside the exchange,
  // which the pass's end (a join) waits for; none without data parallelism.
  void aux_stats_over_the_dp_group() {
    MoeContext ctx = block_context(1, E);
    ctx.stats_rank = 0;
    ctx.stats_size = 2;
    ctx.stats_world = {1, 3};  // this rank and one on the other node
    auto s = test::make_strategy_with_degree("expert_centric", 1);
    ExchangeCounts counts;
    counts.P = P;
    counts.E = E;
    counts.rows = kCounts;
    auto h = s->layout(counts, ctx);
    TaskGraph g;
    const TaskId end = add_block_pass(g, *s, *h, MoePass::forward, ctx, {N, C, E, K}, {});
    const GraphTask* aux = find(g, "moe.aux_stats");
    QVERIFY(aux);
    QVERIFY(aux->role == StreamRole::comm_inter);
    QCOMPARE(aux->deps, (std::vector<int>{0}));  // after the router
    QCOMPARE(aux->cost.bytes_to_peer, (Sends{{3, (2 * E + 1) * 8}}));  // 2 (P-1)/P x (2E+1) doubles
    QCOMPARE(aux->cost.messages, 2);
    const GraphTask& last = g[end];
    QVERIFY(last.name.empty());
    QCOMPARE((int)last.deps.size(), 2);
    std::set<std::string> joined{g.task(last.deps[0]).name, g.task(last.deps[1]).name};
    QCOMPARE(joined, (std::set<std::string>{"moe.aux_stats", "moe.combine"}));
    ctx.stats_size = 1;
    ctx.stats_world = {1};
    TaskGraph alone;
    add_block_pass(alone, *s, *h, MoePass::forward, ctx, {N, C, E, K}, {});
    QVERIFY(!find(alone, "moe.aux_stats"));
  }

  void expert_centric_forward() {
    const Built b = build("expert_centric", 1, 1, MoePass::forward);
    QCOMPARE(b.names, (std::vector<std::string>{"moe.router", "moe.counts", "moe.dispatch", "moe.experts", "moe.combine",
                                                "moe.combine"}));
    const TaskGraph& g = b.g;
    for (int i = 1; i < (int)g.size(); ++i) QCOMPARE(g.task(i).deps, (std::vector<int>{i - 1}));  // a chain
    QVERIFY(g.task(1).role == StreamRole::comm_inter);  // the EP group spans both nodes
    QCOMPARE(g.task(1).cost.bytes_to_peer, (Sends{{2, 96}}));  // ring all-gather: 3 x E int64 counts to the next
    QCOMPARE(g.task(1).cost.messages, 3);
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

  // Smart schedule with groups of 1 (n = 4 steps) on rank 1: step j sends to rank (1 - j) mod 4
  // and computes the rows of rank (1 + j) mod 4: sends 6 (kept), 3 rows to rank 0, 2 to rank 3,
  // 5 to rank 2; receives 6 (own), 1 from rank 2, 0 from rank 3, 4 from rank 0. The comm stream
  // runs S_0, S_1, R_0, S_2, R_1, S_3, R_2, R_3.
  void fastermoe_smart_pairwise_steps() {
    FasterMoeOptions o;
    o.smart = true;
    o.group_size = 1;
    const FasterBuilt f = fastermoe_build(o, 1, MoePass::forward);
    const TaskGraph& g = f.b.g;
    QVERIFY(!find(g, "moe.dispatch", 0)->cost.bytes_to_peer.size());
    QCOMPARE(find(g, "moe.dispatch", 1)->cost.bytes_to_peer, (Sends{{0, 24}}));
    QCOMPARE(find(g, "moe.dispatch", 2)->cost.bytes_to_peer, (Sends{{3, 16}}));
    QCOMPARE(find(g, "moe.dispatch", 3)->cost.bytes_to_peer, (Sends{{2, 40}}));
    const double rows[] = {6, 1, 0, 4};
    for (int j = 0; j < 4; ++j) QCOMPARE(find(g, "moe.experts", j)->cost.flops, 4.0 * rows[j] * C * F);
    QCOMPARE(find(g, "moe.combine", 1)->cost.bytes_to_peer, (Sends{{2, 8}}));
    QCOMPARE(find(g, "moe.combine", 3)->cost.bytes_to_peer, (Sends{{0, 32}}));
    QVERIFY(!find(g, "moe.combine", 2)->cost.bytes_to_peer.size());
    QCOMPARE(comm_order(f.b), (std::vector<std::string>{"moe.dispatch#0", "moe.dispatch#1", "moe.combine#0",
                                                       "moe.dispatch#2", "moe.combine#1", "moe.dispatch#3",
                                                       "moe.combine#2", "moe.combine#3"}));
    // group_size 0: the node's EP ranks, {0, 1} and {2, 3}: step 0 inside node 0 (3 rows to
    // rank 0), step 1 to node 1 (5 and 2 rows).
    o.group_size = 0;
    const FasterBuilt n = fastermoe_build(o, 1, MoePass::forward);
    QCOMPARE(find(n.b.g, "moe.dispatch", 0)->cost.bytes_to_peer, (Sends{{0, 24}}));
    QCOMPARE(find(n.b.g, "moe.dispatch", 1)->cost.bytes_to_peer, (Sends{{2, 40}, {3, 16}}));
    QVERIFY(!find(n.b.g, "moe.dispatch", 2));
  }

  // Shadowing on a hot expert e2 (owned by rank 2), Algorithm 1 on eq. 1-2 over the links of
  // block_context's cluster (NICs and device ports of 1e10 B/s, 1.2e11 FLOP/s; rows of 8 bytes,
  // an expert's 2 C F = 12 floats = 48 bytes). Counts (rows rank s routes to expert e):
  //          e0 e1 e2 e3
  //     s0 [  2  1  9  1 ]    loads 6, 7, 33, 7: 3 x 4 x 33 x 6 / 1.2e11 = 1.98e-8 s, and node 0's
  //     s1 [  1  3  8  2 ]    NIC sends 160 bytes: 4 x 1.6e-8; before 8.38e-8 s.
  //     s2 [  1  2  7  1 ]    Shadowing e2: loads 15, 15, 7, 16 (9.6e-9), node 1's NIC 48 bytes
  //     s3 [  2  1  9  3 ]    (4 x 4.8e-9), its ring broadcast and reduce 96 bytes on the
  // busiest hop (9.6e-9): 3.84e-8, kept; e1 next (7 rows, tied with e3: the lower index): loads
  // up to 17 (1.02e-8), NICs 24 bytes (9.6e-9), two experts' rings 192 bytes (1.92e-8): 3.9e-8,
  // stop. The budget holds 1.5 experts (2 x 17 floats = 136 bytes per shadow: parameters and
  // gradients).
  void fastermoe_shadow_tasks() {
    FasterMoeOptions o;
    o.shadow = true;
    o.shadow_budget_mb = 1.5 * 136e-6;
    const std::vector<long> hot = {2, 1, 9, 1, 1, 3, 8, 2, 1, 2, 7, 1, 2, 1, 9, 3};
    const FasterBuilt f = fastermoe_build(o, 1, MoePass::forward, hot);
    QCOMPARE(f.b.names, (std::vector<std::string>{"moe.router", "moe.counts", "moe.shadow.broadcast@2",
                                                  "moe.shadow.experts", "moe.pack", "moe.dispatch", "moe.experts",
                                                  "moe.combine", "moe.unpack", "moe.combine"}));
    const TaskGraph& g = f.b.g;
    QCOMPARE(g.task(2).cost.bytes_to_peer, Sends{});  // rank 1 is a leaf of the tree rooted at rank 2
    QCOMPARE(g.task(3).cost.flops, 4.0 * 8 * C * F);  // rank 1's 8 rows of e2, here
    QCOMPARE(g.task(3).deps, (std::vector<int>{2}));
    QCOMPARE(g.task(5).cost.bytes_to_peer, (Sends{{0, 8}, {3, 16}}));  // nothing to rank 2 any more
    QCOMPARE(g.task(6).cost.flops, 4.0 * 7 * C * F);                   // e1 still comes here
    QCOMPARE(decision(f.decisions, "fastermoe.shadowed"), 1.0);
    QCOMPARE(decision(f.decisions, "fastermoe.shadow.e2"), 1.0);
    // eq. 1 at the busiest worker after shadowing: rank 3's 16 rows, 4 x 16 x C x F FLOPs.
    QCOMPARE(decision(f.decisions, "fastermoe.predicted_comp_ms"), 4.0 * 16 * C * F / 1.2e11 * 1e3);
    // The owner's binomial tree: rank 2 sends to ranks 0 and 3, rank 0 on to rank 1.
    QCOMPARE(find(fastermoe_build(o, 2, MoePass::forward, hot).b.g, "moe.shadow.broadcast")->cost.bytes_to_peer,
             (Sends{{0, 68}, {3, 68}}));
    QCOMPARE(find(fastermoe_build(o, 0, MoePass::forward, hot).b.g, "moe.shadow.broadcast")->cost.bytes_to_peer,
             (Sends{{1, 68}}));
    // Backward: the shadow's own rows first on the compute stream, its gradient reduced to the
    // owner after the return trip (rank 1's parent in the tree rooted at rank 2 is rank 0; 17
    // floats), and on the owner added to its gradient.
    const FasterBuilt b = fastermoe_build(o, 1, MoePass::backward, hot);
    QCOMPARE(b.b.names, (std::vector<std::string>{"moe.combine_backward", "moe.shadow.experts_backward",
                                                  "moe.pack_grad", "moe.dispatch_grad", "moe.experts_backward",
                                                  "moe.combine_grad", "moe.unpack_grad", "moe.shadow.reduce@2",
                                                  "moe.router_backward"}));
    QCOMPARE(find(b.b.g, "moe.shadow.reduce")->cost.bytes_to_peer, (Sends{{0, 68}}));
    const FasterBuilt owner = fastermoe_build(o, 2, MoePass::backward, hot);
    QCOMPARE(find(owner.b.g, "moe.shadow.reduce")->cost.bytes_to_peer, Sends{});  // the root
    const GraphTask* acc = find(owner.b.g, "moe.shadow.accumulate");
    QVERIFY(acc && acc->role == StreamRole::compute);
    QVERIFY(!find(b.b.g, "moe.shadow.accumulate"));
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
    QCOMPARE(b.names.front(), std::string("moe.router"));
    QCOMPARE(b.names.back(), std::string("moe.combine"));
    for (const std::string& name : b.names) QVERIFY(name != "moe.counts");
  }

  void data_centric_forward_credits_data() {
    QTest::addColumn<int>("credits");
    QTest::addColumn<std::vector<std::string>>("names");
    QTest::addColumn<std::vector<std::vector<int>>>("deps");
    // credits 1: pull k+1 waits for compute k (one expert pulled and not yet computed).
    QTest::newRow("credits 1")
        << 1
        << std::vector<std::string>{"moe.router", "janus.sync", "janus.pull@0", "moe.experts@2", "moe.experts@0",
                                    "janus.pull@1", "moe.experts@1", "janus.pull@4", "moe.experts@4", "janus.pull@6",
                                    "moe.experts@6", "janus.pull@7", "moe.experts@7", "moe.combine"}
        << std::vector<std::vector<int>>{{}, {0}, {1}, {0}, {2}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {3, 12}};
    // credits 2: the first two pulls after the window barrier, pull k+2 after compute k.
    QTest::newRow("credits 2")
        << 2
        << std::vector<std::string>{"moe.router", "janus.sync", "janus.pull@0", "janus.pull@1", "moe.experts@2",
                                    "moe.experts@0", "janus.pull@4", "moe.experts@1", "janus.pull@6", "moe.experts@4",
                                    "janus.pull@7", "moe.experts@6", "moe.experts@7", "moe.combine"}
        << std::vector<std::vector<int>>{{}, {0}, {1}, {1}, {0}, {2}, {5}, {3}, {7}, {6}, {9}, {8}, {10}, {4, 11, 12}};
  }
  void data_centric_forward_credits() {
    QFETCH(int, credits);
    QFETCH(std::vector<std::string>, names);
    QFETCH(std::vector<std::vector<int>>, deps);
    DcOptions o;
    o.credits = credits;
    const Built b = dc_build(o, MoePass::forward);
    QCOMPARE(b.names, names);
    QCOMPARE(deps_of(b.g), deps);
    const std::vector<int> owner_of = {0, 0, 1, 1, 2, 2, 3, 3};
    for (const GraphTask& t : b.g.tasks()) {
      QCOMPARE(t.layer, 3);
      QVERIFY(!t.action);
      if (t.name == "janus.pull") {
        QVERIFY(t.role == StreamRole::comm_inter && t.category == TaskCategory::comm);
        QCOMPARE(t.peer, owner_of[(size_t)t.expert]);
        QCOMPARE(t.cost.bytes_to_peer, (Sends{{owner_of[(size_t)t.expert], kDcExpertBytes}}));
        QVERIFY(t.cost.transfer == Transfer::get);  // the bytes come from the owner
      } else if (t.name == "moe.experts") {
        QVERIFY(t.role == StreamRole::compute);
        QCOMPARE(t.cost.flops, 4.0 * kDcCounts[(size_t)(1 * kDcE + t.expert)] * C * F);
      } else if (t.name == "janus.sync") {
        // The window barrier: zero bytes to every other rank of the EP group (rank 1's view).
        QVERIFY(t.role == StreamRole::comm_inter && t.cost.transfer == Transfer::send);
        QCOMPARE(t.cost.bytes_to_peer, (Sends{{0, 0}, {2, 0}, {3, 0}}));
      }
    }
  }

  // Prefetch (credits 1): the iteration start pulls e0 (the first internal expert, holding the
  // credit) and every external one; their pulls wait only for the window barrier, e1's for
  // the credit e0's compute returns.
  void data_centric_forward_prefetch() {
    DcOptions o;
    o.credits = 1;
    o.prefetch = true;
    const Built b = dc_build(o, MoePass::forward);
    QCOMPARE(b.names, (std::vector<std::string>{"moe.router", "janus.sync", "janus.pull@0", "moe.experts@2",
                                                "moe.experts@0", "janus.pull@1", "janus.pull@4", "janus.pull@6",
                                                "janus.pull@7", "moe.experts@1", "moe.experts@4", "moe.experts@6",
                                                "moe.experts@7", "moe.combine"}));
    QCOMPARE(deps_of(b.g), (std::vector<std::vector<int>>{
                               {}, {0}, {1}, {0}, {2}, {4}, {1}, {1}, {1}, {5}, {6}, {7}, {8}, {3, 9, 10, 11, 12}}));
    uint64_t pulled = 0;
    for (const GraphTask& t : b.g.tasks()) pulled += t.name == "janus.pull" ? t.cost.bytes_sent() : 0;
    QCOMPARE(pulled, 5 * kDcExpertBytes);  // every used remote expert once, prefetched or not
  }

  void data_centric_backward() {
    const Built b = dc_build(DcOptions{}, MoePass::backward);
    QCOMPARE(b.names, (std::vector<std::string>{"moe.combine_backward", "moe.experts_backward@2",
                                                "moe.experts_backward@0", "moe.experts_backward@1",
                                                "moe.experts_backward@4", "moe.experts_backward@6",
                                                "moe.experts_backward@7", "janus.sync", "janus.push_grad@0",
                                                "janus.push_grad@1", "janus.push_grad@4", "janus.push_grad@6",
                                                "janus.push_grad@7", "janus.sync", "moe.router_backward"}));
    QCOMPARE(deps_of(b.g), (std::vector<std::vector<int>>{{}, {0}, {0}, {0}, {0}, {0}, {0}, {0, 1}, {2, 7}, {3, 7},
                                                          {4, 7}, {5, 7}, {6, 7}, {7, 8, 9, 10, 11, 12}, {13}}));
    const std::vector<int> owner_of = {0, 0, 1, 1, 2, 2, 3, 3};
    for (const GraphTask& t : b.g.tasks()) {
      if (t.name == "moe.experts_backward") QCOMPARE(t.cost.flops, 8.0 * kDcCounts[(size_t)(kDcE + t.expert)] * C * F);
      if (t.name == "janus.push_grad") {
        QCOMPARE(t.cost.bytes_to_peer, (Sends{{owner_of[(size_t)t.expert], kDcExpertBytes}}));
        QVERIFY(t.cost.transfer == Transfer::put);
      }
    }
  }

  // Hierarchical: node 0 uses e4 (ranks 0, 1), e6 (0, 1), e7 (1); external index j = e - 4,
  // local rank 1 pulls j = 1, 3 when used: e7 only. The cached experts compute after the
  // node sync; e0, e1 are pulled by the rank itself.
  void data_centric_hierarchical() {
    DcOptions o;
    o.hierarchical = true;
    const Built f = dc_build(o, MoePass::forward);
    QCOMPARE(f.names, (std::vector<std::string>{"moe.router", "janus.sync", "janus.pull_node@7", "janus.pull@0",
                                                "janus.pull@1", "moe.experts@2", "janus.node_sync", "moe.experts@4",
                                                "moe.experts@6", "moe.experts@7", "moe.experts@0", "moe.experts@1",
                                                "moe.combine"}));
    QCOMPARE(deps_of(f.g), (std::vector<std::vector<int>>{
                               {}, {0}, {1}, {1}, {1}, {0}, {1, 2}, {6}, {6}, {6}, {3}, {4}, {5, 7, 8, 9, 10, 11}}));
    QCOMPARE(f.g.task(2).cost.bytes_to_peer, (Sends{{3, kDcExpertBytes}}));
    QCOMPARE(f.g.task(2).peer, 3);
    const Built b = dc_build(o, MoePass::backward);
    QCOMPARE(b.names, (std::vector<std::string>{"moe.combine_backward", "moe.experts_backward@2",
                                                "moe.experts_backward@0", "moe.experts_backward@1",
                                                "moe.experts_backward@4", "moe.experts_backward@6",
                                                "moe.experts_backward@7", "janus.node_sync", "janus.sync",
                                                "janus.push_grad@0", "janus.push_grad@1", "janus.node_reduce@7",
                                                "janus.push_grad@7", "janus.sync", "moe.router_backward"}));
    QCOMPARE(deps_of(b.g), (std::vector<std::vector<int>>{{}, {0}, {0}, {0}, {0}, {0}, {0}, {0, 4, 5, 6}, {0, 1, 7},
                                                          {2, 8}, {3, 8}, {7}, {8, 11}, {8, 9, 10, 12}, {13}}));
    QCOMPARE(b.g.task(11).cost.flops, 17.0);  // (m - 1) x 17 floats summed
    QCOMPARE(b.g.task(12).cost.bytes_to_peer, (Sends{{3, kDcExpertBytes}}));
    // Rank 0 (local 0) pulls j = 0, 2: e4 and e6, and pushes their node sums.
    const Built f0 = dc_build(o, MoePass::forward, 0);
    std::vector<std::string> node_pulls;
    for (const std::string& n : f0.names)
      if (n.rfind("janus.pull_node", 0) == 0) node_pulls.push_back(n);
    QCOMPARE(node_pulls, (std::vector<std::string>{"janus.pull_node@4", "janus.pull_node@6"}));
  }

  // pcie_pairing (pair = local ranks 0, 1): the pair uses e4, e6, e7 -> lower rank e4, e7,
  // higher (rank 1) e6; two rounds: cache copy e6, sync, peer copy e4; sync, peer copy e7.
  void data_centric_pcie_pairing() {
    DcOptions o;
    o.hierarchical = true;
    o.pcie_pairing = true;
    const Built f = dc_build(o, MoePass::forward);
    QCOMPARE(f.names, (std::vector<std::string>{"moe.router", "janus.sync", "janus.pull_node@7", "janus.pull@0",
                                                "janus.pull@1", "moe.experts@2", "janus.node_sync",
                                                "janus.cache_copy@6", "janus.node_sync", "janus.peer_copy@4",
                                                "janus.node_sync", "janus.peer_copy@7", "moe.experts@4",
                                                "moe.experts@6", "moe.experts@7", "moe.experts@0", "moe.experts@1",
                                                "moe.combine"}));
    QCOMPARE(deps_of(f.g), (std::vector<std::vector<int>>{{}, {0}, {1}, {1}, {1}, {0}, {1, 2}, {6}, {6, 7}, {8},
                                                          {8}, {10}, {9}, {7}, {11}, {3}, {4},
                                                          {5, 12, 13, 14, 15, 16}}));
    for (int i : {7, 9, 11}) {
      QVERIFY(f.g.task(i).role == StreamRole::copy && f.g.task(i).category == TaskCategory::copy);
      QCOMPARE(f.g.task(i).cost.copy_bytes, kDcExpertBytes);
      QVERIFY(f.g.task(i).cost.bytes_to_peer.empty());
    }
    QCOMPARE(f.g.task(7).peer, -1);
    QCOMPARE(f.g.task(9).peer, 0);  // from the pair peer's staging slot
  }

  // Without a node cache, the graph needs no communicator even with buffers: built with and
  // without buffers it is the same schedule (the former with an action on every task).
  void data_centric_same_schedule_with_buffers_data() {
    QTest::addColumn<int>("credits");
    QTest::addColumn<bool>("prefetch");
    QTest::newRow("credits 1") << 1 << false;
    QTest::newRow("credits 2") << 2 << false;
    QTest::newRow("credits 1 prefetch") << 1 << true;
  }
  void data_centric_same_schedule_with_buffers() {
    QFETCH(int, credits);
    QFETCH(bool, prefetch);
    DcOptions o;
    o.credits = credits;
    o.prefetch = prefetch;
    const size_t ef = 2 * F * C + F + C;
    std::vector<float> w(2 * ef), gw(2 * ef), rows((size_t)32 * C), out((size_t)32 * C);
    for (MoePass pass : {MoePass::forward, MoePass::backward}) {
      MoeContext plain = block_context(1, kDcE), bound = block_context(1, kDcE);
      for (int j = 0; j < 2; ++j) {
        float* p = w.data() + j * ef;
        float* q = gw.data() + j * ef;
        bound.local.push_back({p, p + F * C, p + F * C + F, p + 2 * F * C + F});
        bound.local_grads.push_back({q, q + F * C, q + F * C + F, q + 2 * F * C + F});
      }
      auto s1 = make_dc(o), s2 = make_dc(o);
      auto h1 = s1->layout(dc_counts(), plain), h2 = s2->layout(dc_counts(), bound);
      MoeBuffers buf;
      buf.xg = rows.data();
      buf.y = out.data();
      buf.dy = rows.data();
      buf.dxg = out.data();
      TaskGraph without, with;
      if (pass == MoePass::backward) {  // the backward uses the forward's handle
        TaskGraph fwd1, fwd2;
        s1->build(fwd1, *h1, MoePass::forward, {}, nullptr, plain);
        s2->build(fwd2, *h2, MoePass::forward, {}, &buf, bound);
      }
      const auto done1 = s1->build(without, *h1, pass, {}, nullptr, plain);
      const auto done2 = s2->build(with, *h2, pass, {}, &buf, bound);
      QVERIFY(with.same_schedule(without));
      QCOMPARE(done1.size(), done2.size());
      for (const GraphTask& t : with.tasks()) QVERIFY(t.action);
    }
  }

  // MoNTA O3 with 2 chunks (parts = 4): dispatch pieces of 5 rows to EP rank 1 are 1, 1, 1, 2,
  // so TP rank 0 sends q = 0 and q = 2: 1 row each. Received runs 3 (own) and 4: pieces 0,1,1,1
  // and 1,1,1,1; chunk 0's TP parts get 0+1 and 1+1 rows (AllGather padded to 2), chunk 1's
  // 1+1 and 1+1. Return trip (3 own, 4 to EP rank 1; receiving 3 and 5): chunk 1's parts get
  // 1+1 and 1+2 rows (padded to 3).
  void monta_o3_pipelines_alltoall_allgather_and_copy() {
    const MontaBuilt b = monta_build("O3", 2, false);
    QCOMPARE(b.names, (std::vector<std::string>{
                          "moe.router", "moe.counts", "moe.dispatch#0", "moe.dispatch.allgather#0", "moe.dispatch.copy#0",
                          "moe.dispatch#1", "moe.dispatch.allgather#1", "moe.dispatch.copy#1", "moe.experts",
                          "moe.combine#0", "moe.combine.allgather#0", "moe.combine.copy#0", "moe.combine#1",
                          "moe.combine.allgather#1", "moe.combine.copy#1", "moe.combine"}));
    const TaskGraph& g = b.g;
    const std::vector<std::vector<int>> deps = {{}, {0}, {1}, {2}, {3}, {1, 2}, {3, 5}, {4, 6}, {7},
                                                {8}, {9}, {10}, {8, 9}, {10, 12}, {11, 13}, {14}};
    QCOMPARE(deps_of(g), deps);
    for (int i : {2, 5, 9, 12}) QVERIFY(g.task(i).role == StreamRole::comm_inter);  // EP across the nodes
    for (int i : {3, 6, 10, 13}) QVERIFY(g.task(i).role == StreamRole::comm_intra);  // TP inside node 0
    for (int i : {4, 7, 11, 14}) QVERIFY(g.task(i).role == StreamRole::copy);        // O3: the copy stream
    QCOMPARE(g.task(2).cost.bytes_to_peer, (Sends{{2, 8}}));
    QCOMPARE(g.task(5).cost.bytes_to_peer, (Sends{{2, 8}}));
    QCOMPARE(g.task(3).cost.bytes_to_peer, (Sends{{1, 16}}));  // (t - 1) x 2 padded rows to the next TP rank
    QCOMPARE(g.task(3).cost.messages, 1);
    QCOMPARE(g.task(4).cost.copy_bytes, (uint64_t)3 * 8);
    QCOMPARE(g.task(7).cost.copy_bytes, (uint64_t)4 * 8);
    QCOMPARE(g.task(8).cost.flops, 4.0 * 7 * C * F);  // every received row: 3 + 4
    QCOMPARE(g.task(9).cost.bytes_to_peer, (Sends{{2, 8}}));
    QCOMPARE(g.task(13).cost.bytes_to_peer, (Sends{{1, 24}}));
    QCOMPARE(g.task(14).cost.copy_bytes, (uint64_t)5 * 8);
  }

  // O2: the copy stays on the AllGather's stream, so chunk 1's AllGather also waits for chunk
  // 0's copy; O1: one chunk (parts = t = 2): 5 rows to EP rank 1 in pieces 2, 3, TP rank 0 sends 2.
  void monta_o2_and_o1_schedules() {
    const MontaBuilt o2 = monta_build("O2", 2, false);
    QCOMPARE(o2.g.task(6).deps, (std::vector<int>{3, 4, 5}));
    QVERIFY(o2.g.task(4).role == StreamRole::comm_intra && o2.g.task(7).role == StreamRole::comm_intra);
    const MontaBuilt o1 = monta_build("O1", 4, false);  // O1 ignores chunks
    QCOMPARE(o1.names, (std::vector<std::string>{"moe.router", "moe.counts", "moe.dispatch", "moe.dispatch.allgather",
                                                 "moe.dispatch.copy", "moe.experts", "moe.combine",
                                                 "moe.combine.allgather", "moe.combine.copy", "moe.combine"}));
    QCOMPARE(o1.g.task(2).cost.bytes_to_peer, (Sends{{2, 16}}));
    // Received 3 (pieces 1, 2) and 4 (2, 2): TP parts 3 and 4 rows, padded to 4.
    QCOMPARE(o1.g.task(3).cost.bytes_to_peer, (Sends{{1, 32}}));
    QCOMPARE(o1.g.task(4).cost.copy_bytes, (uint64_t)7 * 8);
    const MontaBuilt base = monta_build("baseline", 1, false);
    QCOMPARE(base.names, (std::vector<std::string>{"moe.router", "moe.counts", "moe.dispatch", "moe.experts",
                                                   "moe.combine", "moe.combine"}));
    QCOMPARE(base.g.task(2).cost.bytes_to_peer, (Sends{{2, 40}}));  // all 5 rows: t-fold redundant
  }

  // Sliced experts return partial sums: each chunk of the return trip first packs the TP
  // parts' pieces as blocks and reduce-scatters them over the TP group; the block output
  // leaves whole (no moe.allreduce). Return rows 3 (own) and 4: pieces 1, 2 and 2, 2, so the
  // blocks hold 1 + 2 = 3 and 2 + 2 = 4 rows (padded to 4).
  void monta_sums_sliced_experts_before_the_return_trip() {
    const MontaBuilt b = monta_build("O1", 1, true);
    QCOMPARE(b.names, (std::vector<std::string>{"moe.router", "moe.counts", "moe.dispatch", "moe.dispatch.allgather",
                                                "moe.dispatch.copy", "moe.experts", "moe.combine.pack",
                                                "moe.combine.reduce_scatter", "moe.combine", "moe.combine.allgather",
                                                "moe.combine.copy", "moe.combine"}));
    const TaskGraph& g = b.g;
    QCOMPARE(g.task(6).cost.copy_bytes, (uint64_t)2 * 4 * 8);
    QCOMPARE(g.task(7).cost.bytes_to_peer, (Sends{{1, 32}}));
    QCOMPARE(g.task(8).deps, (std::vector<int>{5, 7}));
    QCOMPARE(g.task(8).cost.bytes_to_peer, (Sends{{2, 16}}));
    const MontaBuilt base = monta_build("baseline", 1, true);
    QCOMPARE(base.names.back(), std::string("moe.allreduce"));  // expert_centric's partial outputs
  }

  // level and chunks "auto": every rank of the EP group must choose the same schedule (their
  // AllToAlls match chunk by chunk) although their own volumes differ by 10^7 (EP rank 0 routes
  // 10 rows, rank 1 10^8): the choice is made on the group's mean volume, which is large enough
  // for pipelined chunks on this cluster.
  // The cluster file's measured curves reach the cost model: monta.toml holds the paper's
  // efficiencies as bus bandwidths (r1 0.427 / 0.632 / 0.741 of 25 GB/s at 8 / 32 / 256 MB, r2
  // 0.726 / 0.776 of 200 GB/s at 64 / 256 MB, copies at 1280 GB/s). One 8000-token sequence of
  // width 8000 per rank, top-2, fp16 (monta.toml's train_precision): I = 256 MB; t = 8, e = 2 (one
  // EP peer per node). With 4
  // chunks that is Table 8: baseline 6.909 ms, O1 1.012 + 1.443 ms, per chunk 0.374 / 0.385 / 0.05
  // ms, so O2 = 0.3747 + 4 (0.3857 + 0.05) and O3 = 0.3747 + 4 x 0.3857 + 0.05 ms.
  void monta_cluster_curves_give_table_8() {
    const std::string cluster = std::string(MOEBENCH_SOURCE_DIR) + "/sample_configs/clusters/monta.toml";
    const Config cfg = parse_config("", "t.toml",
                                    {"run.ranks=16", "parallel.tp=8", "train.batch_size=2", "model.seq_len=8000",
                                     "model.hidden=8000", "model.heads=64", "moe.experts=2", "moe.top_k=2",
                                     "moe.moe_layers=[1]", "strategy.name=monta", "strategy.monta.chunks=4",
                                     "cluster.file=" + cluster});
    const auto rows = monta_block_choices(cfg, cluster_model(cfg));
    QCOMPARE(rows.size(), size_t(1));
    const MontaBlockChoice& c = rows[0];
    QCOMPARE(c.I, 256e6);
    QVERIFY(c.measured_r1 && c.measured_r2);
    {  // the same workload in fp32 moves twice the bytes
      Config fp32 = cfg;
      fp32.cluster.train_precision = TrainPrecision::fp32;
      QCOMPARE(monta_block_choices(fp32, cluster_model(fp32)).at(0).I, 512e6);
    }
    auto near = [](double seconds, double ms) { return std::abs(seconds * 1e3 - ms) < 1e-3; };  // the paper prints 3 decimals
    QVERIFY2(near(c.baseline, 6.909), qPrintable(QString::number(c.baseline * 1e3, 'g', 8)));
    QVERIFY2(near(c.O1, 1.0127 + 1.4433), qPrintable(QString::number(c.O1 * 1e3, 'g', 8)));
    QCOMPARE(c.O2.chunks, 4);
    QVERIFY2(near(c.O2.seconds, 0.3747 + 4 * (0.3857 + 0.05)), qPrintable(QString::number(c.O2.seconds * 1e3, 'g', 8)));
    QVERIFY2(near(c.O3.seconds, 0.3747 + 4 * 0.3857 + 0.05), qPrintable(QString::number(c.O3.seconds * 1e3, 'g', 8)));
    QCOMPARE(monta_level_name(c.chosen.level), "O3");
    // Without the curves the link fallback decides (and says so).
    Config bare = cfg;
    bare.cluster.alltoall_busbw_bytes.clear();
    bare.cluster.alltoall_busbw_gbs.clear();
    QVERIFY(!monta_block_choices(bare, cluster_model(bare))[0].measured_r1);
  }

  void monta_auto_chooses_alike_on_every_ep_rank() {
    ClusterSpec spec;
    spec.nodes = 2;
    spec.devices_per_node = 2;
    spec.intra = {1e11, 1e-6};
    spec.inter = {1e10, 5e-6};
    spec.copy_bandwidth = 1e12;
    const ClusterModel cluster(spec);
    const std::vector<long> rows = {4, 6, 50000000, 50000000};
    const MontaBuilt r0 = monta_build("auto", 0, false, 0, rows, &cluster);
    const MontaBuilt r1 = monta_build("auto", 0, false, 1, rows, &cluster);
    QCOMPARE(r0.names, r1.names);
    QVERIFY(std::count(r0.names.begin(), r0.names.end(), "moe.dispatch#1") == 1);  // pipelined: 2+ chunks
  }

  void registry_makes_every_configurable_strategy() {
    for (const std::string& name : strategy_names()) {
      if (name == "janus" || name == "per_block") {  // chosen per block
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, make_strategy(name));
        continue;
      }
      QCOMPARE(make_strategy(name)->name(), name);
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, make_strategy("tutel"));
  }

  // A pass's handle goes back to the strategy that made it: another strategy's handle (another
  // type, or the same exchange handle without this strategy's state) is refused by name, and
  // the right one still builds.
  void foreign_handles_are_refused() {
    MoeContext ctx = block_context(1, E);
    StrategyConfig options;
    options.option("monta.level").s = "O1";
    auto ppmoe = make_strategy("ppmoe"), ec = make_strategy("expert_centric"), monta = make_strategy("monta", options),
         fastermoe = make_strategy("fastermoe");
    auto from_ppmoe = ppmoe->layout(counts_of(kCounts), ctx), from_ec = ec->layout(counts_of(kCounts), ctx),
         from_monta = monta->layout(counts_of(kCounts), ctx);
    auto refused = [&](MoeStrategy& s, MoeHandle& h, const std::string& words) {
      TaskGraph g;
      try {
        s.build(g, h, MoePass::forward, {}, nullptr, ctx);
      } catch (const std::logic_error& e) {
        return QString(e.what()).startsWith(QString::fromStdString(s.name() + ": ")) &&
               QString(e.what()).contains(QString::fromStdString(words));
      }
      return false;
    };
    QVERIFY(refused(*ec, *from_ppmoe, "a handle of another strategy"));
    QVERIFY(refused(*ppmoe, *from_ec, "a handle of another strategy"));
    QVERIFY(refused(*monta, *from_ec, "a pass without its state"));
    QVERIFY(refused(*fastermoe, *from_monta, "a handle of another strategy"));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, ppmoe->decisions(*from_monta));
    TaskGraph g;
    QVERIFY(!monta->build(g, *from_monta, MoePass::forward, {}, nullptr, ctx).empty());
    QCOMPARE(monta->decisions(*from_monta).front().key, std::string("monta.level"));
  }

  // [strategy.monta] ep_priority is monta's: its blocks' comm tasks go to the priority lanes,
  // and a rank whose MoE blocks disagree (they share their communicators) is refused.
  void comm_priority_is_the_strategys() {
    StrategyConfig options;
    options.option("monta.ep_priority").b = true;
    auto monta = make_strategy("monta", options), plain = make_strategy("monta"), ec = make_strategy("expert_centric");
    QVERIFY(monta->comm_priority());
    QVERIFY(!plain->comm_priority() && !ec->comm_priority());
    check_comm_priority({{0, monta.get()}, {2, monta.get()}});
    check_comm_priority({{0, plain.get()}, {2, ec.get()}});
    try {
      check_comm_priority({{0, monta.get()}, {2, ec.get()}});
      QFAIL("blocks that disagree on the priority lanes were accepted");
    } catch (const std::invalid_argument& e) {
      QCOMPARE(QString(e.what()), QString("MoE block 0 (monta) puts its comm tasks on the priority lanes, block 2 "
                                          "(expert_centric) does not: the MoE blocks of a rank share their "
                                          "communicators, so all or none of them may"));
    }
    MoeContext ctx = block_context(1, E);
    for (MoeStrategy* s : {monta.get(), plain.get()}) {
      auto h = s->layout(counts_of(kCounts), ctx);
      TaskGraph g;
      add_block_pass(g, *s, *h, MoePass::forward, ctx, {N, C, E, K}, {});
      int comm = 0, prioritised = 0;
      for (const GraphTask& t : g.tasks()) {
        comm += t.category == TaskCategory::comm;
        prioritised += t.priority;
        QVERIFY(!t.priority || t.category == TaskCategory::comm);
      }
      QVERIFY(comm > 0);
      QCOMPARE(prioritised, s == monta.get() ? comm : 0);
    }
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
