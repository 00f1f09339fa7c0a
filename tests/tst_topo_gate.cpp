// ctest-labels: unit
// FasterMoE's topology-aware gate (§4.3, moe/topo_gate.h): the cap L exactly (which remote
// assignments survive, where the others go, their gates, f_e, capacity after the gate), the
// fast-network / no-network / one-node cases, a node without an unchosen expert, rho from a
// cluster, fastermoe's choice policy, the saved inter-node assignments, the start-up note, and
// finite-difference gradients through a MoeLayer with the gate on.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/router.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/fastermoe_gate.h"
#include "moebench/strategies/registry.h"
#include "moebench/tensor/matmul.h"
#include "moe_problem.h"
#include "test_support.h"

using namespace moebench;

namespace {

using test::Problem;
using test::make_problem;

// N=8 tokens, E=4 experts, K=2. EP ranks {0, 1} on nodes {0, 1}: experts 0, 1 on node 0 (this
// rank's), experts 2, 3 on node 1. Rows are the tokens' router probabilities.
constexpr int kN = 8, kE = 4, kK = 2;
const std::vector<float> kProbs = {
    0.05f, 0.15f, 0.50f, 0.30f,  // t0: top-2 {2, 3}, both remote
    0.40f, 0.10f, 0.35f, 0.15f,  // t1: {0, 2}
    0.10f, 0.20f, 0.30f, 0.40f,  // t2: {3, 2}, both remote
    0.60f, 0.25f, 0.10f, 0.05f,  // t3: {0, 1}, local
    0.05f, 0.10f, 0.25f, 0.60f,  // t4: {3, 2}, both remote
    0.30f, 0.45f, 0.20f, 0.05f,  // t5: {1, 0}, local
    0.15f, 0.05f, 0.70f, 0.10f,  // t6: {2, 0}
    0.15f, 0.30f, 0.50f, 0.05f,  // t7: {2, 1}; its 0.50 ties t0's
};
// Top-k of kProbs (descending, ties to the lower index).
const std::vector<int> kTopK = {2, 3, 0, 2, 3, 2, 0, 1, 3, 2, 1, 0, 2, 0, 2, 1};
// rho = 0.2: L = floor(0.2 * 16) = 3. Nine remote assignments: t6/k0 .70, t4/k0 .60, t0/k0 .50,
// t7/k0 .50, t2/k0 .40, t1/k1 .35, t0/k1 .30, t2/k1 .30, t4/k1 .25. The first three go (t0 beats
// t7 on the tie by token index). The others take the best local expert the token has not
// chosen: t0/k1 -> 1 (.15 > .05), t1/k1 -> 1 (0 taken), t2/k0 -> 1 (.20), then t2/k1 -> 0
// (1 now taken), t4/k1 -> 1 (.10), t7/k0 -> 0 (1 taken).
const std::vector<int> kGated = {2, 1, 0, 1, 1, 0, 0, 1, 3, 1, 1, 0, 2, 0, 0, 1};

TopoGate two_nodes(double rho) {
  TopoGate g;
  g.ep_node = {0, 1};
  g.my_node = 0;
  g.rho = rho;
  return g;
}

Routing hand_routing() {
  Routing r;
  r.N = kN;
  r.E = kE;
  r.K = kK;
  r.probs = kProbs;
  r.expert = kTopK;
  return r;
}

std::vector<float> log_probs(std::vector<float> p) {
  for (float& v : p) v = std::log(v);
  return p;
}

// The layer's inputs and parameters (expert e: p[4e..4e+3] = w1, b1, w2, b2).

// Smallest logit gap any small perturbation would have to close to change the gated choice:
// between ranks 0..K of a token (top-k), between the L-th and (L+1)-th remote assignment (in
// log-probability), and between a moved slot's local expert and the token's next local one.
double gated_margin(const Problem& pr, const TopoGate& gate) {
  const auto& s = pr.s;
  Routing r;
  std::vector<float> logits((size_t)s.N * s.E);
  matmul_forward(logits.data(), pr.x.data(), pr.wr.data(), nullptr, s.N, s.C, s.E);
  route_from_logits(r, logits.data(), s.N, s.E, {s.K, 0.0f, s.gate_normalize});
  double m = 1e30;
  for (int n = 0; n < s.N; ++n) {
    std::vector<float> l(logits.begin() + n * s.E, logits.begin() + (n + 1) * s.E);
    std::sort(l.begin(), l.end(), std::greater<>());
    for (int j = 0; j < s.K && j + 1 < s.E; ++j) m = std::min(m, (double)(l[j] - l[j + 1]));
  }
  std::vector<double> remote;
  for (int i = 0; i < s.N * s.K; ++i)
    if (gate.expert_node(r.expert[i], s.E) != gate.my_node) remote.push_back(std::log(r.probs[(i / s.K) * s.E + r.expert[i]]));
  std::sort(remote.begin(), remote.end(), std::greater<>());
  const int L = topo_gate_cap(gate.rho, s.N, s.K);
  if (L > 0 && L < (int)remote.size()) m = std::min(m, remote[L - 1] - remote[L]);
  for (int n = 0; n < s.N; ++n) {  // local logits of a token, descending: re-selection order
    std::vector<float> l;
    for (int e = 0; e < s.E; ++e)
      if (gate.expert_node(e, s.E) == gate.my_node) l.push_back(logits[n * s.E + e]);
    std::sort(l.begin(), l.end(), std::greater<>());
    for (size_t j = 0; j + 1 < l.size(); ++j) m = std::min(m, (double)(l[j] - l[j + 1]));
  }
  return m;
}

// A layer's gate policy applying `gate`, keeping what it did in `st`.
GatePolicy recorded(const TopoGate& gate, TopoGateStats& st) {
  return [gate, &st](Routing& r) { st = apply_topo_gate(r, gate); };
}

Config fastermoe_config(int ranks, int nodes, int ep) {
  Config c;
  c.run.ranks = ranks;
  c.cluster.nodes = nodes;
  c.parallel.ep = ep;
  c.strategy.name = "fastermoe";
  c.strategy.option("fastermoe.topo_gate").b = true;
  return c;
}

}  // namespace

class TestTopoGate : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { set_num_threads(1); }

  void cap() {
    QCOMPARE(topo_gate_cap(0.2, 8, 2), 3);
    QCOMPARE(topo_gate_cap(0.3, 10, 1), 3);  // 0.3 * 10 is 2.9999999999999996 in double
    QCOMPARE(topo_gate_cap(0.0, 8, 2), 0);
    QCOMPARE(topo_gate_cap(1.0, 8, 2), 16);
    QCOMPARE(topo_gate_cap(7.5, 8, 2), 16);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, topo_gate_cap(-0.1, 8, 2));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, topo_gate_cap(std::nan(""), 8, 2));
  }

  // The hand-built routing: exactly L = 3 remote assignments survive, the highest-probability
  // ones (the tie to the lower token), the others on the best unchosen local expert.
  void capExactly() {
    Routing r = hand_routing();
    const TopoGateStats st = apply_topo_gate(r, two_nodes(0.2));
    QCOMPARE(r.expert, kGated);
    QCOMPARE(st.cap, 3);
    QCOMPARE(st.remote_before, 9);
    QCOMPARE(st.remote_after, 3);
    QCOMPARE(st.moved, 6);
    QCOMPARE(st.over_cap, 0);
    int remote = 0;
    for (int e : r.expert) remote += e >= 2;
    QCOMPARE(remote, 3);
  }

  // Through the router (logits = log p, so the softmax gives kProbs up to rounding; t7's
  // remote choice lowered to 0.48 so no tie depends on it): the gates are the final experts'
  // probabilities, renormalised over the token's two; f_e counts the final choice; capacity
  // drops among the final choices.
  void throughTheRouter_data() {
    QTest::addColumn<bool>("normalize");
    QTest::newRow("normalised") << true;
    QTest::newRow("raw") << false;
  }
  void throughTheRouter() {
    QFETCH(bool, normalize);
    std::vector<float> p = kProbs;
    p[7 * kE + 2] = 0.48f, p[7 * kE + 3] = 0.07f;
    const std::vector<float> logits = log_probs(p);
    TopoGateStats st;
    RouterOptions opt{kK, 0.0f, normalize};
    const GatePolicy policy = [&](Routing& r) { st = apply_topo_gate(r, two_nodes(0.2)); };
    Routing r;
    route_from_logits(r, logits.data(), kN, kE, opt, nullptr, policy);
    QCOMPARE(r.expert, kGated);
    QCOMPARE(st.moved, 6);
    // (p of slot 0, p of slot 1) per token, by hand from the table.
    const std::vector<std::pair<double, double>> chosen = {
        {0.50, 0.15}, {0.40, 0.10}, {0.20, 0.10}, {0.60, 0.25},
        {0.60, 0.10}, {0.45, 0.30}, {0.70, 0.15}, {0.15, 0.30}};
    for (int n = 0; n < kN; ++n) {
      const auto [a, b] = chosen[n];
      const double s = normalize ? a + b : 1.0;
      QVERIFY2(std::abs(r.gate[n * 2] - a / s) < 1e-6, qPrintable(QString("token %1 k0: %2").arg(n).arg(r.gate[n * 2])));
      QVERIFY2(std::abs(r.gate[n * 2 + 1] - b / s) < 1e-6, qPrintable(QString("token %1 k1: %2").arg(n).arg(r.gate[n * 2 + 1])));
    }
    QCOMPARE(r.selected, (std::vector<int>{6, 7, 2, 1}));
    QCOMPARE(r.f, (std::vector<float>{6 / 16.0f, 7 / 16.0f, 2 / 16.0f, 1 / 16.0f}));
    double aux = 0;
    for (int e = 0; e < kE; ++e) aux += r.f[e] * r.P[e];
    QVERIFY(std::abs(r.aux - kE * aux) < 1e-6);

    // Capacity 4 (cf 1): round k0 admits e0 {t1, t3, t7}, e1 {t2, t5}, e2 {t0, t6}, e3 {t4};
    // round k1 admits t0, t1 on e1 and t2 on e0, then e1 (t3, t4, t7) and e0 (t5, t6) are full.
    opt.capacity_factor = 1.0f;
    route_from_logits(r, logits.data(), kN, kE, opt, nullptr, policy);
    QCOMPARE(r.capacity, 4);
    QCOMPARE(r.kept, (std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}));
    QCOMPARE(r.counts, (std::vector<int>{4, 4, 2, 1}));
  }

  // rho >= 1 (a network as fast as M local links) changes nothing; rho = 0 sends nothing
  // remote; on one node nothing is remote.
  void limits() {
    for (double rho : {1.0, 3.0}) {
      Routing r = hand_routing();
      const TopoGateStats st = apply_topo_gate(r, two_nodes(rho));
      QCOMPARE(r.expert, kTopK);
      QCOMPARE(st.moved, 0);
      QCOMPARE(st.remote_after, 9);
    }
    Routing r = hand_routing();
    TopoGateStats st = apply_topo_gate(r, two_nodes(0.0));
    QCOMPARE(st.cap, 0);
    QCOMPARE(st.remote_after, 0);
    QCOMPARE(st.moved, 9);
    for (int n = 0; n < kN; ++n) {  // each token holds both local experts, best first where both moved
      QVERIFY(r.expert[n * 2] < 2 && r.expert[n * 2 + 1] < 2);
      QVERIFY(r.expert[n * 2] != r.expert[n * 2 + 1]);
    }
    QCOMPARE(r.expert[0], 1);  // t0: {2, 3} -> {1, 0}
    QCOMPARE(r.expert[1], 0);

    TopoGate one = two_nodes(0.0);
    one.ep_node = {0, 0};
    QVERIFY(one.single_node());
    r = hand_routing();
    st = apply_topo_gate(r, one);
    QCOMPARE(r.expert, kTopK);
    QCOMPARE(st.remote_before, 0);
    QCOMPARE(st.moved, 0);
    QVERIFY(!two_nodes(0.0).single_node());
  }

  // K = 3 with one expert on this node: a token whose three choices are remote gets that
  // expert once; the other two stay remote, beyond L.
  void noLocalExpertLeft() {
    Routing r;
    r.N = 1, r.E = 4, r.K = 3;
    r.probs = {0.1f, 0.2f, 0.3f, 0.4f};
    r.expert = {3, 2, 1};
    TopoGate g;
    g.ep_node = {0, 1, 1, 1};
    g.my_node = 0;
    g.rho = 0.0;
    const TopoGateStats st = apply_topo_gate(r, g);
    QCOMPARE(r.expert, (std::vector<int>{0, 2, 1}));
    QCOMPARE(st.moved, 1);
    QCOMPARE(st.over_cap, 2);
    QCOMPARE(st.remote_after, 2);
    g.ep_node = {0, 1, 1};  // 4 experts on 3 ranks
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, apply_topo_gate(r, g));
    g.ep_node = {1, 1, 1, 1};  // my node holds no EP rank
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, apply_topo_gate(r, g));
  }

  // The gate on a synthetic choice (the predicted step's): exactly L remote assignments stay,
  // the moved ones spread over the node's experts (stand-in probabilities, not the lowest
  // index), a token's experts stay distinct, local choices are untouched, and the same key
  // gives the same choice.
  void onASyntheticChoice() {
    const int N = 400, K = 2, E = 8;
    std::vector<int> forced((size_t)N * K);
    synthetic_expert_choice(forced.data(), parse_routing("uniform"), N, K, E, 7, 1, 0, 0);
    TopoGate g;
    g.ep_node = {0, 0, 0, 0, 1, 1, 1, 1};  // one expert per EP rank
    g.my_node = 0;
    g.rho = 0.1;
    std::vector<int> a = forced, b = forced;
    const TopoGateStats st = apply_topo_gate_to_choice(a, N, K, E, g, 11, 0);
    QCOMPARE(st.cap, 80);
    QVERIFY(st.remote_before > 300);
    QCOMPARE(st.remote_after, 80);
    std::vector<int> moved_to(E, 0);
    for (int i = 0; i < N * K; ++i) {
      if (forced[(size_t)i] < 4) QCOMPARE(a[(size_t)i], forced[(size_t)i]);
      else if (a[(size_t)i] != forced[(size_t)i]) ++moved_to[(size_t)a[(size_t)i]];
    }
    for (int n = 0; n < N; ++n) QVERIFY(a[(size_t)n * K] != a[(size_t)n * K + 1]);
    for (int e = 0; e < 4; ++e) QVERIFY2(moved_to[(size_t)e] > st.moved / 8, std::to_string(moved_to[(size_t)e]).c_str());
    apply_topo_gate_to_choice(b, N, K, E, g, 11, 0);
    QCOMPARE(a, b);
    std::vector<int> short_choice(3);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, apply_topo_gate_to_choice(short_choice, N, K, E, g, 11, 0));
  }

  // rho from the cluster: 2 nodes x 4 devices, intra 100 GB/s, inter 25 GB/s per NIC. EP group
  // of world ranks {0, 2, 4, 6} (tp = 2): 2 EP ranks per node, rho = 25 / (2 x 100).
  void fromCluster() {
    ClusterSpec spec;
    spec.nodes = 2;
    spec.devices_per_node = 4;
    spec.intra = {100e9, 1e-6};
    spec.inter = {25e9, 5e-6};
    const ClusterModel cluster(spec);
    const TopoGate g = make_topo_gate(cluster, {0, 2, 4, 6}, 2);
    QCOMPARE(g.ep_node, (std::vector<int>{0, 0, 1, 1}));
    QCOMPARE(g.my_node, 1);
    QCOMPARE(g.rho, 0.125);
    QCOMPARE(g.expert_node(3, 8), 0);
    QCOMPARE(g.expert_node(4, 8), 1);
    // fastermoe's blocks get the gate of their EP rank on the block's cluster (choice_policy);
    // other strategies, and fastermoe with topo_gate off, rewrite nothing.
    Config cfg = fastermoe_config(8, 2, 4);
    MoeContext ctx;
    ctx.cluster = &cluster;
    ctx.ep_world = {0, 2, 4, 6};
    ctx.ep_rank = 0;
    const GatePolicy policy = make_strategy("fastermoe", cfg.strategy)->choice_policy(ctx);
    QVERIFY(policy);
    Routing r, ref;  // two tokens of E = 8 on experts 4 and 6 (node 1); L = floor(0.125 x 2) = 0
    r.N = 2, r.E = 8, r.K = 1;
    r.probs = {0.1f, 0.2f, 0.05f, 0.05f, 0.3f, 0.1f, 0.1f, 0.1f, 0.05f, 0.05f, 0.3f, 0.1f, 0.1f, 0.1f, 0.2f, 0.0f};
    r.expert = {4, 6};
    ref = r;
    policy(r);
    const TopoGateStats st = apply_topo_gate(ref, make_topo_gate(cluster, {0, 2, 4, 6}, 0));
    QCOMPARE(st.moved, 2);
    QCOMPARE(r.expert, ref.expert);
    QCOMPARE(r.expert, (std::vector<int>{1, 2}));
    QVERIFY(!make_strategy("expert_centric", cfg.strategy)->choice_policy(ctx));
    cfg.strategy.option("fastermoe.topo_gate").b = false;
    QVERIFY(!make_strategy("fastermoe", cfg.strategy)->choice_policy(ctx));
  }

  // Known numbers: 10 tokens, top-2, forced (synthetic) onto experts 2 and 3 of 4, which live on
  // the other node (EP ranks {0, 1, 2, 3} on nodes {0, 0, 1, 1}); rho = 0.125 from the cluster
  // above: L = floor(0.125 x 20) = 2, so 18 of the 20 inter-node assignments stay on node 0.
  void savedAssignments() {
    ClusterSpec spec;
    spec.nodes = 2;
    spec.devices_per_node = 2;
    spec.intra = {100e9, 1e-6};
    spec.inter = {25e9, 5e-6};  // M = 2: rho = 25 / (2 x 100)
    const TopoGate g = make_topo_gate(ClusterModel(spec), {0, 1, 2, 3}, 0);
    QCOMPARE(g.rho, 0.125);
    const int N = 10, C = 6;
    Problem pr = make_problem({N, C, 8, 4, 2, 0.0f, true}, 5);
    std::vector<int> forced;
    for (int n = 0; n < N; ++n) forced.insert(forced.end(), {2, 3});
    MoeLayer layer;
    TopoGateStats st;
    layer.set_gate_policy(recorded(g, st));
    std::vector<float> out((size_t)N * C);
    layer.forward(out.data(), pr.x.data(), pr.wr.data(), pr.params(), pr.s, forced.data());
    QCOMPARE(st.cap, 2);
    QCOMPARE(st.remote_before, 20);
    QCOMPARE(st.moved, 18);
    QCOMPARE(st.remote_after, 2);
    int remote = 0;
    for (int e : layer.routing().expert) remote += e >= 2;
    QCOMPARE(remote, 2);
    const long bytes = (long)st.moved * C * (long)sizeof(float);  // rows not sent, each way
    QCOMPARE(bytes, 18L * 6 * 4);
    qInfo("topo_gate: %d of %d inter-node assignments kept on the node (L = %d), %ld bytes per direction",
          st.moved, st.remote_before, st.cap, bytes);
    layer.set_gate_policy({});  // off again: the forced choice as given
    layer.forward(out.data(), pr.x.data(), pr.wr.data(), pr.params(), pr.s, forced.data());
    QCOMPARE(layer.routing().expert, forced);
  }

  // A policy that writes an expert out of range is the policy's bug: the router says so.
  void badPolicy() {
    const GatePolicy policy = [](Routing& r) { r.expert[0] = r.E; };
    Routing r;
    const std::vector<float> logits = log_probs(kProbs);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, route_from_logits(r, logits.data(), kN, kE, {kK, 0.0f, true}, nullptr, policy));
  }

  void startupNote() {
    QCOMPARE(QString::fromStdString(topo_gate_note(fastermoe_config(4, 1, 0))),
             QString("fastermoe: topo_gate on a single node (cluster.nodes = 1) changes nothing"));
    QCOMPARE(topo_gate_note(fastermoe_config(8, 2, 0)), std::string());
    QCOMPARE(QString::fromStdString(topo_gate_note(fastermoe_config(8, 2, 4))),
             QString("fastermoe: topo_gate with every expert-parallel group inside one node (parallel.ep = 4, 4 ranks "
                     "per node) changes nothing"));
    Config tp = fastermoe_config(8, 2, 4);
    tp.parallel.tp = 2;  // dp 4: EP ranks 2 apart span both nodes
    QCOMPARE(topo_gate_note(tp), std::string());
    Config off = fastermoe_config(4, 1, 0);
    off.strategy.option("fastermoe.topo_gate").b = false;
    QCOMPARE(topo_gate_note(off), std::string());
    off = fastermoe_config(4, 1, 0);
    off.strategy.name = "expert_centric";
    QCOMPARE(topo_gate_note(off), std::string());
    Config mixed = fastermoe_config(4, 1, 0);  // per_block with a fastermoe block: the same note
    mixed.strategy.name = "per_block";
    mixed.strategy.option("per_block.blocks").strings = {"expert_centric", "fastermoe"};
    QCOMPARE(QString::fromStdString(topo_gate_note(mixed)),
             QString("fastermoe: topo_gate on a single node (cluster.nodes = 1) changes nothing"));
    mixed.strategy.option("per_block.blocks").strings = {"expert_centric", "monta"};
    QCOMPARE(topo_gate_note(mixed), std::string());
  }

  // Finite differences through a MoeLayer with the gate on (rho = 0.2: L = 3 of 16, moving
  // some assignments), on a seed whose gated choice is away from ties.
  void gradients_data() {
    QTest::addColumn<bool>("normalize");
    QTest::addColumn<float>("cf");
    QTest::newRow("normalised") << true << 0.0f;
    QTest::newRow("raw") << false << 0.0f;
    QTest::newRow("normalised capacity") << true << 1.0f;
  }
  void gradients() {
    QFETCH(bool, normalize);
    QFETCH(float, cf);
    const int N = 8, C = 5, F = 8, E = 4, K = 2;
    const float aux_weight = 0.5f;
    const TopoGate gate = two_nodes(0.2);
    const MoeLayerShape s{N, C, F, E, K, cf, normalize};
    Problem pr = make_problem(s, 1);
    for (uint64_t seed = 1; seed < 2000; ++seed) {
      pr = make_problem(s, seed);
      if (gated_margin(pr, gate) <= 0.03) continue;
      MoeLayer probe;
      TopoGateStats st;
      probe.set_gate_policy(recorded(gate, st));
      std::vector<float> o((size_t)N * C);
      probe.forward(o.data(), pr.x.data(), pr.wr.data(), pr.params(), pr.s);
      if (st.moved >= 2 && (cf == 0.0f || probe.routing().dropped() > 0)) break;
    }
    QVERIFY(gated_margin(pr, gate) > 0.03);
    const auto wout = test::random_vector((size_t)N * C, 4242, 1.0f);

    MoeLayer layer;
    TopoGateStats st;
    layer.set_gate_policy(recorded(gate, st));
    std::vector<float> out((size_t)N * C);
    layer.forward(out.data(), pr.x.data(), pr.wr.data(), pr.params(), pr.s);
    const Routing base = layer.routing();
    QVERIFY(st.moved >= 2);
    layer.backward(pr.dx.data(), pr.dwr.data(), pr.grads(), wout.data(), aux_weight, pr.x.data(), pr.wr.data(),
                   pr.params());

    MoeLayer probe;
    probe.set_gate_policy([gate](Routing& r) { apply_topo_gate(r, gate); });
    bool changed = false;
    const auto loss = test::weighted_output_loss(probe, pr, wout, aux_weight, base, changed);
    const double eps = 1e-3, atol = 5e-4, rtol = 2e-2;
    test::check_gradient("router_w", pr.wr, pr.dwr, loss, eps, atol, rtol);
    test::check_gradient("x", pr.x, pr.dx, loss, eps, atol, rtol);
    for (int e = 0; e < E; ++e)
      test::check_gradient(qPrintable(QString("expert %1 w1").arg(e)), pr.p[4 * e], pr.g[4 * e], loss, eps, atol, rtol);
    QVERIFY(!changed);
  }
};

QTEST_APPLESS_MAIN(TestTopoGate)
#include "tst_topo_gate.moc"
