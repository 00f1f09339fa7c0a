// ctest-labels: mpi np=4
// expert_centric and hier_a2a as task graphs on the launched ranks (2 virtual nodes), with
// overlap degrees 1, 2 and 4: one MoE layer's forward and backward against the local
// reference holding every expert (outputs, input and router gradients, owned experts'
// gradients), and the graphs the layer executed against the same graphs built without
// buffers and without communicators from the gathered counts, task by task. And the same
// exchange behind FasterMoE's topology-aware gate (fastermoe with topo_gate only).
#include <QtTest>

#include <mpi.h>

#include <cmath>

#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/moe/block_graph.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/parallel_context.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/fastermoe_gate.h"
#include "moebench/strategies/registry.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;

namespace {

constexpr int L = 2, C = 6, F = 8, N = 13, K = 2;  // L experts per rank; 13 tokens: uneven chunks
constexpr size_t EF = 2 * F * C + F + C;            // floats per expert

ExpertParams view(float* p) { return {p, p + F * C, p + F * C + F, p + 2 * F * C + F}; }

QString close(const std::vector<float>& got, const std::vector<float>& want, float tol, const char* what) {
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i]))))
      return QString("%1[%2]: %3 vs reference %4").arg(what).arg(i).arg(got[i]).arg(want[i]);
  return {};
}


// One rank's share of a layer over the launched ranks and its single-rank reference: inputs,
// every rank's experts (L each), this rank's copy and gradient.
struct LayerCase {
  int P, me, E;
  std::vector<float> x, router, dout, all_w, w, g;
  std::vector<float> out, dx, drouter;
  LayerCase(int P_, int me_) : P(P_), me(me_), E(L * P_) {
    x = test::random_vector((size_t)N * C, 100 + me);
    router = test::random_vector((size_t)E * C, 7);
    dout = test::random_vector((size_t)N * C, 300 + me);
    for (int r = 0; r < P; ++r) {
      const auto wr = test::random_vector((size_t)L * EF, 50 + r, 0.3f);
      all_w.insert(all_w.end(), wr.begin(), wr.end());
    }
    w.assign(all_w.begin() + (long)(me * L * EF), all_w.begin() + (long)((me + 1) * L * EF));
    g.assign(w.size(), 0.0f);
  }
  MoeLayerShape shape() const { return {N, C, F, E, K, 0.0f, true}; }
  // ctx's block shape and this rank's experts.
  void attach(MoeContext& ctx) {
    ctx.experts = E;
    ctx.C = C;
    ctx.F = F;
    ctx.first_local = me * L;
    for (int j = 0; j < L; ++j) {
      ctx.local.push_back(view(w.data() + j * EF));
      ctx.local_grads.push_back(view(g.data() + j * EF));
    }
  }
  // Forward and backward of the distributed layer.
  void run(MoeLayer& layer) {
    out.assign((size_t)N * C, 0.0f), dx.assign((size_t)N * C, 0.0f), drouter.assign((size_t)E * C, 0.0f);
    layer.forward(out.data(), x.data(), router.data(), {}, shape());
    layer.backward(dx.data(), drouter.data(), {}, dout.data(), 0.01f, x.data(), router.data(), {});
  }
  // The reference holding every expert (`ref`, with the gate set on it when any) against run()'s
  // results: "" or the first difference. Collective (sums the experts' gradients over the world).
  QString compare_with_reference(MoeLayer& ref) {
    std::vector<float> all_g(all_w.size(), 0.0f);
    std::vector<ExpertParams> experts, dexperts;
    for (int e = 0; e < E; ++e) {
      experts.push_back(view(all_w.data() + (size_t)e * EF));
      dexperts.push_back(view(all_g.data() + (size_t)e * EF));
    }
    std::vector<float> out_ref((size_t)N * C), dx_ref((size_t)N * C, 0.0f), drouter_ref((size_t)E * C, 0.0f);
    ref.forward(out_ref.data(), x.data(), router.data(), experts, shape());
    ref.backward(dx_ref.data(), drouter_ref.data(), dexperts, dout.data(), 0.01f, x.data(), router.data(), experts);
    MPI_Allreduce(MPI_IN_PLACE, all_g.data(), (int)all_g.size(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    QString err = close(out, out_ref, 1e-5f, "output");
    if (err.isEmpty()) err = close(dx, dx_ref, 1e-5f, "dx");
    if (err.isEmpty()) err = close(drouter, drouter_ref, 1e-5f, "drouter");
    const std::vector<float> mine_ref(all_g.begin() + (long)(me * L * EF), all_g.begin() + (long)((me + 1) * L * EF));
    if (err.isEmpty()) err = close(g, mine_ref, 1e-4f, "expert gradient");
    return err;
  }
};

}  // namespace

class TestExchangeGraph : public QObject {
  Q_OBJECT

 private slots:
  void one_layer_matches_single_rank_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("degree");
    for (const char* s : {"expert_centric", "hier_a2a"})
      for (int d : {1, 2, 4}) QTest::newRow(qPrintable(QString("%1 D=%2").arg(s).arg(d))) << QString(s) << d;
  }
  void one_layer_matches_single_rank() {
    QFETCH(QString, strategy);
    QFETCH(int, degree);
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank(), E = L * P;
    if (P % 2 != 0) QSKIP("needs an even number of ranks (2 virtual nodes)");
    const Topology topo = Topology::virtual_blocks(2, P / 2);
    LayerCase lc(P, me);
    MoeContext ctx;
    ctx.ep = world.get();
    ctx.topology = &topo;
    ctx.layer = 1;
    lc.attach(ctx);
    MoeLayer layer;
    layer.set_strategy(test::make_strategy_with_degree(strategy.toStdString(), degree), ctx);
    lc.run(layer);
    MoeLayer ref;
    const QString err = lc.compare_with_reference(ref);
    QVERIFY2(err.isEmpty(), qPrintable(QString("rank %1: ").arg(me) + err));

    // The executed graphs = the graphs built without buffers from the gathered counts.
    std::vector<long> mine(layer.routing().counts.begin(), layer.routing().counts.end()), all((size_t)P * E);
    MPI_Allgather(mine.data(), E, MPI_LONG, all.data(), E, MPI_LONG, MPI_COMM_WORLD);
    MoeContext plan = ctx;
    plan.sync_group();  // the group without its communicator
    plan.ep = nullptr;
    plan.streams = nullptr;
    ExchangeCounts counts;
    counts.P = P;
    counts.E = E;
    counts.rows = all;
    auto s = test::make_strategy_with_degree(strategy.toStdString(), degree);
    auto h = s->layout(counts, plan);
    const BlockDims d{N, C, E, K};
    TaskGraph fwd, bwd;
    add_block_pass(fwd, *s, *h, MoePass::forward, plan, d, {});
    add_block_pass(bwd, *s, *h, MoePass::backward, plan, d, {});
    QVERIFY2(fwd.same_schedule(layer.last_forward_graph()), "forward graph differs from the one executed");
    QVERIFY2(bwd.same_schedule(layer.last_backward_graph()), "backward graph differs from the one executed");
    QCOMPARE((int)fwd.size(), 3 + (strategy == "hier_a2a" ? 5 : 3) * degree + (degree > 1 ? 2 * degree : 0));
  }

  // FasterMoE's topology-aware gate (§4.3) through the distributed path: fastermoe with
  // topo_gate alone (no shadowing, no smart schedule: expert_centric's exchange) on a block
  // context whose cluster has 2 nodes makes each rank's gate (choice_policy: make_topo_gate
  // on that cluster) and exchanges the gated choice: outputs and gradients equal the local
  // reference with the same gate, and no rank sends more than L assignments to the other node.
  void topology_aware_gate_matches_single_rank() {
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank(), E = L * P;
    if (P % 2 != 0) QSKIP("needs an even number of ranks (2 virtual nodes)");
    const Topology topo = Topology::virtual_blocks(2, P / 2);
    ClusterSpec spec;
    spec.nodes = 2;
    spec.devices_per_node = P / 2;
    spec.intra = {100e9, 1e-6};
    spec.inter = {10e9 * P / 2, 5e-6};  // rho = W_net / (M W_local) = 0.1 for M = P / 2
    const ClusterModel cluster(spec);
    std::vector<int> ep_world;
    for (int r = 0; r < P; ++r) ep_world.push_back(r);

    ParallelContext par;
    par.ep = world.get();
    par.topology = &topo;
    par.cluster = &cluster;
    MoeContext ctx = par.block_context(1);
    const TopoGate gate = make_topo_gate(cluster, ep_world, me);
    QVERIFY(std::abs(gate.rho - 0.1) < 1e-12);

    LayerCase lc(P, me);
    lc.attach(ctx);
    StrategyConfig options;
    options.option("fastermoe.topo_gate").b = true;
    MoeLayer layer;
    layer.set_strategy(make_strategy("fastermoe", options), ctx);
    lc.run(layer);
    TopoGateStats st;  // the reference's gate: the same choice (checked below)
    MoeLayer ref;
    ref.set_gate_policy([gate, &st](Routing& r) { st = apply_topo_gate(r, gate); });
    const QString err = lc.compare_with_reference(ref);
    int moved = st.moved;
    MPI_Allreduce(MPI_IN_PLACE, &moved, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    // No collective below: a failing check on one rank cannot leave the others waiting.

    // The gate's cap on this rank: L = floor(0.1 x 26) = 2 inter-node assignments.
    QCOMPARE(st.cap, 2);
    long inter = 0;
    for (int e = 0; e < E; ++e)
      if (gate.expert_node(e, E) != gate.my_node) inter += layer.routing().counts[e];
    QCOMPARE(inter, (long)st.remote_after);
    QVERIFY(inter <= st.cap);
    QVERIFY2(moved > 0, "the gate should move some assignments on this data");
    QCOMPARE(ref.routing().expert, layer.routing().expert);
    QVERIFY2(err.isEmpty(), qPrintable(QString("rank %1: ").arg(me) + err));
  }
};

MOEBENCH_MPI_TEST_MAIN(TestExchangeGraph)
#include "tst_exchange_graph.moc"
