// ctest-labels: mpi np=4
// expert_centric and hier_a2a as task graphs on the launched ranks (2 virtual nodes), with
// overlap degrees 1, 2 and 4: one MoE layer's forward and backward against the local
// reference holding every expert (outputs, input and router gradients, owned experts'
// gradients), and the graphs the layer executed against the same graphs built without
// buffers and without communicators from the gathered counts, task by task.
#include <QtTest>

#include <mpi.h>

#include <cmath>

#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/moe/block_graph.h"
#include "moebench/moe/moe_layer.h"
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
    std::vector<float> x = test::random_vector((size_t)N * C, 100 + me);
    std::vector<float> router = test::random_vector((size_t)E * C, 7);
    std::vector<float> dout = test::random_vector((size_t)N * C, 300 + me);
    std::vector<float> all_w;
    for (int r = 0; r < P; ++r) {
      const auto w = test::random_vector((size_t)L * EF, 50 + r, 0.3f);
      all_w.insert(all_w.end(), w.begin(), w.end());
    }
    std::vector<float> w(all_w.begin() + (long)(me * L * EF), all_w.begin() + (long)((me + 1) * L * EF));
    std::vector<float> g(w.size(), 0.0f);
    MoeContext ctx;
    ctx.ep = world.get();
    ctx.topology = &topo;
    ctx.layer = 1;
    ctx.experts = E;
    ctx.C = C;
    ctx.F = F;
    ctx.first_local = me * L;
    for (int j = 0; j < L; ++j) {
      ctx.local.push_back(view(w.data() + j * EF));
      ctx.local_grads.push_back(view(g.data() + j * EF));
    }
    MoeLayer layer;
    layer.set_strategy(test::make_strategy_with_degree(strategy.toStdString(), degree), ctx);
    const MoeLayerShape shape{N, C, F, E, K, 0.0f, true};
    std::vector<float> out((size_t)N * C), dx((size_t)N * C, 0.0f), drouter((size_t)E * C, 0.0f);
    layer.forward(out.data(), x.data(), router.data(), {}, shape);
    layer.backward(dx.data(), drouter.data(), {}, dout.data(), 0.01f, x.data(), router.data(), {});

    std::vector<float> all_g(all_w.size(), 0.0f);
    std::vector<ExpertParams> experts, dexperts;
    for (int e = 0; e < E; ++e) {
      experts.push_back(view(all_w.data() + (size_t)e * EF));
      dexperts.push_back(view(all_g.data() + (size_t)e * EF));
    }
    MoeLayer ref;
    std::vector<float> out_ref((size_t)N * C), dx_ref((size_t)N * C, 0.0f), drouter_ref((size_t)E * C, 0.0f);
    ref.forward(out_ref.data(), x.data(), router.data(), experts, shape);
    ref.backward(dx_ref.data(), drouter_ref.data(), dexperts, dout.data(), 0.01f, x.data(), router.data(), experts);
    QString err = close(out, out_ref, 1e-5f, "output");
    if (err.isEmpty()) err = close(dx, dx_ref, 1e-5f, "dx");
    if (err.isEmpty()) err = close(drouter, drouter_ref, 1e-5f, "drouter");
    MPI_Allreduce(MPI_IN_PLACE, all_g.data(), (int)all_g.size(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const std::vector<float> mine_ref(all_g.begin() + (long)(me * L * EF), all_g.begin() + (long)((me + 1) * L * EF));
    if (err.isEmpty()) err = close(g, mine_ref, 1e-4f, "expert gradient");
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
};

MOEBENCH_MPI_TEST_MAIN(TestExchangeGraph)
#include "tst_exchange_graph.moc"
