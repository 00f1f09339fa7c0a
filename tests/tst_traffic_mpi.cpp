// ctest-labels: mpi np=4
// TrafficMeter against the exact byte counts the routing implies, for one MoE layer forward
// + backward on the launched ranks (CTest: 4 = 2 virtual nodes x 2; any even count works)
// with expert_centric and hier_a2a (overlap degrees 1 to 3: the same bytes in chunks):
//   expert_centric  to peer d: 2 x (rows me->d + rows d->me) x C x 4 bytes (dispatch and
//                   combine, forward and backward), plus the ring all-gather of the slot
//                   counts ((P-1) x E x 8 bytes to the right neighbour);
//   hier_a2a        phase 1 to the node peer with local index l: the rows bound for local
//                   index l on any node; phase 2 to the peer with my local index on node n:
//                   the rows of my whole node bound for it (same for the return trip with the
//                   transposed matrix), plus the same all-gather;
//   ppmoe           the tensor-parallel all-reduce of the block output, forward and backward.
#include <QtTest>

#include <mpi.h>

#include <numeric>

#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/traffic_meter.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/registry.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;

namespace {
constexpr int L = 2, C = 6, F = 8, N = 10, K = 2;  // L experts per rank

// This rank's `per_rank` experts of width c x f (random weights from `seed` + rank, zero
// gradients) of E over the EP group `ep`.
struct LocalExperts {
  std::vector<float> w, g;
  MoeContext ctx;
  LocalExperts(int me, int E, Communicator& ep, const Topology& topo, int per_rank = L, int c = C, int f = F,
               uint64_t seed = 50)
      : w(test::random_vector((size_t)per_rank * (2 * f * c + f + c), seed + me, 0.3f)), g(w.size(), 0.0f) {
    ctx.ep = &ep;
    ctx.topology = &topo;
    ctx.experts = E;
    ctx.C = c;
    ctx.F = f;
    ctx.first_local = me * per_rank;
    for (int j = 0; j < per_rank; ++j) {
      float* p = w.data() + (size_t)j * (2 * f * c + f + c);
      float* q = g.data() + (size_t)j * (2 * f * c + f + c);
      ctx.local.push_back({p, p + f * c, p + f * c + f, p + 2 * f * c + f});
      ctx.local_grads.push_back({q, q + f * c, q + f * c + f, q + 2 * f * c + f});
    }
  }
};

// Bytes one transfer sends from `me` to each peer, given the row matrix R[s][d].
std::vector<uint64_t> transfer_bytes(const std::string& strategy, const std::vector<long>& R, int me,
                                     const Topology& topo) {
  const int P = topo.world_size();
  std::vector<uint64_t> out(P, 0);
  auto rows = [&](int s, int d) { return (uint64_t)R[(size_t)s * P + d]; };
  if (strategy == "expert_centric") {
    for (int d = 0; d < P; ++d)
      if (d != me) out[d] = rows(me, d) * C * 4;
    return out;
  }
  const int n = topo.node_of(me), l = topo.local_index(me);
  for (int l2 = 0; l2 < topo.devices_per_node(); ++l2) {  // phase 1
    if (l2 == l) continue;
    for (int n2 = 0; n2 < topo.nodes(); ++n2) out[topo.rank_at(n, l2)] += rows(me, topo.rank_at(n2, l2)) * C * 4;
  }
  for (int n2 = 0; n2 < topo.nodes(); ++n2) {  // phase 2
    if (n2 == n) continue;
    for (int q = 0; q < topo.devices_per_node(); ++q)
      out[topo.rank_at(n2, l)] += rows(topo.rank_at(n, q), topo.rank_at(n2, l)) * C * 4;
  }
  return out;
}
}  // namespace

class TestTrafficMpi : public QObject {
  Q_OBJECT

 private slots:
  void meter_equals_routing_formula_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("degree");  // overlap_degree: the chunks move the same bytes in all
    QTest::newRow("expert_centric") << "expert_centric" << 1;
    QTest::newRow("hier_a2a") << "hier_a2a" << 1;
    QTest::newRow("expert_centric D=2") << "expert_centric" << 2;
    QTest::newRow("hier_a2a D=3") << "hier_a2a" << 3;
  }
  void meter_equals_routing_formula() {
    QFETCH(QString, strategy);
    QFETCH(int, degree);
    auto world = MpiCommunicator::world();
    const int P = world->size(), E = L * P;
    if (P % 2 != 0) QSKIP("needs an even number of ranks (2 virtual nodes)");
    const int me = world->rank();
    const Topology topo = Topology::virtual_blocks(2, P / 2);
    TrafficMeter meter(me, topo);

    // Rank-dependent tokens, shared router, this rank's two experts.
    std::vector<float> x = test::random_vector((size_t)N * C, 100 + me);
    std::vector<float> router = test::random_vector((size_t)E * C, 7);
    LocalExperts experts(me, E, *world, topo);
    MoeContext& ctx = experts.ctx;
    MoeLayer layer;
    layer.set_strategy(test::make_strategy_with_degree(strategy.toStdString(), degree), ctx);
    world->set_traffic_meter(&meter);
    std::vector<float> out((size_t)N * C), dx((size_t)N * C, 0.0f), drouter((size_t)E * C, 0.0f);
    const MoeLayerShape shape{N, C, F, E, K, 0.0f, true};
    layer.forward(out.data(), x.data(), router.data(), {}, shape);
    layer.backward(dx.data(), drouter.data(), {}, out.data(), 0.01f, x.data(), router.data(), {});
    world->set_traffic_meter(nullptr);

    // Rows s -> d from every rank's routing (gathered outside the meter).
    std::vector<int> mine(layer.routing().counts.begin(), layer.routing().counts.end()), all(P * E);
    MPI_Allgather(mine.data(), E, MPI_INT, all.data(), E, MPI_INT, MPI_COMM_WORLD);
    std::vector<long> R((size_t)P * P, 0), RT((size_t)P * P, 0);
    for (int s = 0; s < P; ++s)
      for (int e = 0; e < E; ++e) R[(size_t)s * P + e / L] += all[(size_t)s * E + e];
    for (int s = 0; s < P; ++s)
      for (int d = 0; d < P; ++d) RT[(size_t)d * P + s] = R[(size_t)s * P + d];
    const auto out_bytes = transfer_bytes(strategy.toStdString(), R, me, topo);
    const auto back_bytes = transfer_bytes(strategy.toStdString(), RT, me, topo);
    uint64_t intra = 0, inter = 0;
    for (int p = 0; p < P; ++p) {
      uint64_t expected = 2 * (out_bytes[p] + back_bytes[p]);
      if (p == (me + 1) % P) expected += (uint64_t)(P - 1) * E * 8;  // counts all-gather (ring)
      QVERIFY2(meter.bytes_to(p) == expected,
               qPrintable(QString("rank %1 -> %2: meter %3, routing implies %4")
                              .arg(me).arg(p).arg(meter.bytes_to(p)).arg(expected)));
      (topo.link(me, p) == LinkClass::intra_node ? intra : inter) += p == me ? 0 : expected;
    }
    QCOMPARE(meter.bytes(LinkClass::intra_node), intra);
    QCOMPARE(meter.bytes(LinkClass::inter_node), inter);
  }

  // Pipeline MoE §3.3.4: ppmoe's tokens are the same on every rank of the tensor-parallel group,
  // so an MoE block moves no tokens: forward is one all-reduce of the [N, C] partial outputs
  // over the t ranks, backward the mirrored one, each 2 (t - 1) / t x N x C x 4 bytes per rank
  // (ring: all to the right neighbour). Nothing else: no all-to-all, no counts exchange.
  void ppmoe_moves_only_the_tensor_parallel_all_reduce() {
    auto world = MpiCommunicator::world();
    const int t = world->size(), E = L * t, me = world->rank();
    if ((N * C) % t != 0) QSKIP("N x C must divide over the ranks");
    const Topology topo = Topology::virtual_blocks(1, t);
    TrafficMeter meter(me, topo);
    const std::vector<float> x = test::random_vector((size_t)N * C, 100);  // identical on every rank
    const std::vector<float> router = test::random_vector((size_t)E * C, 7);
    LocalExperts experts(me, E, *world, topo);
    MoeContext& ctx = experts.ctx;  // ppmoe's expert-parallel group is the tensor-parallel group
    MoeLayer layer;
    layer.set_strategy(test::make_strategy_with_degree("ppmoe", 1), ctx);
    world->set_traffic_meter(&meter);
    std::vector<float> out((size_t)N * C), dx((size_t)N * C, 0.0f), drouter((size_t)E * C, 0.0f);
    const MoeLayerShape shape{N, C, F, E, K, 0.0f, true};
    layer.forward(out.data(), x.data(), router.data(), {}, shape);
    const uint64_t forward = meter.total();
    layer.backward(dx.data(), drouter.data(), {}, out.data(), 0.01f, x.data(), router.data(), {});
    world->set_traffic_meter(nullptr);
    const uint64_t pass = 2ull * (t - 1) * N * C * 4 / t;
    QCOMPARE(forward, pass);
    QCOMPARE(meter.total(), 2 * pass);
    for (int p = 0; p < t; ++p) QCOMPARE(meter.bytes_to(p), p == (me + 1) % t && t > 1 ? 2 * pass : 0ull);
  }

  // Janus §5.1.3: with balanced routing, the inter-node bytes a machine sends in one forward
  // of an expert_centric MoE block are the strategy's prediction, Comm_EC = 2mHT(n-1)/n floats
  // (T = tokens x k per worker), plus the ring all-gather of the slot counts where it crosses
  // nodes; hier_a2a moves the same inter-node volume in fewer, larger messages.
  void expert_centric_matches_comm_ec_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("hidden");
    QTest::addColumn<int>("tokens");
    QTest::addColumn<int>("top_k");
    QTest::addColumn<int>("per_rank");  // experts per rank
    for (const char* strategy : {"expert_centric", "hier_a2a"}) {
      const QString s = QString::fromLatin1(strategy);
      QTest::addRow("%s, H 6, 8 tokens, k 2, 2 experts/rank", strategy) << s << 6 << 8 << 2 << 2;
      QTest::addRow("%s, H 8, 12 tokens, k 1, 1 expert/rank", strategy) << s << 8 << 12 << 1 << 1;
      QTest::addRow("%s, H 4, 16 tokens, k 3, 2 experts/rank", strategy) << s << 4 << 16 << 3 << 2;
    }
  }
  void expert_centric_matches_comm_ec() {
    QFETCH(QString, strategy);
    QFETCH(int, hidden);
    QFETCH(int, tokens);
    QFETCH(int, top_k);
    QFETCH(int, per_rank);
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank(), E = per_rank * P, Fw = 8;
    if (P % 2 != 0) QSKIP("needs an even number of ranks (2 virtual nodes)");
    const int n = 2, m = P / 2;
    const Topology topo = Topology::virtual_blocks(n, m);
    TrafficMeter meter(me, topo);
    std::vector<float> x = test::random_vector((size_t)tokens * hidden, 300 + me);
    std::vector<float> router = test::random_vector((size_t)E * hidden, 9);
    LocalExperts experts(me, E, *world, topo, per_rank, hidden, Fw, 60);
    MoeLayer layer;
    layer.set_strategy(make_strategy(strategy.toStdString()), experts.ctx);
    std::vector<int> forced((size_t)tokens * top_k);
    synthetic_expert_choice(forced.data(), parse_routing("balanced"), tokens, top_k, E, 1, 0, 0, (long)me * tokens);
    std::vector<float> out((size_t)tokens * hidden);
    world->set_traffic_meter(&meter);
    layer.forward(out.data(), x.data(), router.data(), {}, MoeLayerShape{tokens, hidden, Fw, E, top_k, 0.0f, true},
                  forced.data());
    world->set_traffic_meter(nullptr);
    // This machine's inter-node bytes (rank 0 of each node sums its node).
    double mine = (double)meter.bytes(LinkClass::inter_node);
    if (topo.node_of((me + 1) % P) != topo.node_of(me)) mine -= (double)(P - 1) * E * 8;  // counts all-gather
    double machine = 0;
    MPI_Allreduce(&mine, &machine, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    machine /= n;  // every machine sends the same under balanced routing
    ClusterSpec spec;
    spec.nodes = n;
    spec.devices_per_node = m;
    MoeContext plan;
    plan.experts = E;
    plan.C = hidden;
    plan.F = Fw;
    plan.ep_world.resize(P);
    std::iota(plan.ep_world.begin(), plan.ep_world.end(), 0);
    const double expected =
        make_strategy(strategy.toStdString())->predict({(double)tokens, top_k}, plan, ClusterModel(spec)).machine.inter;
    QVERIFY2(std::abs(machine - expected) < 0.5,
             qPrintable(QString("machine inter-node bytes %1, predicted %2").arg(machine).arg(expected)));
    QCOMPARE(expected, 2.0 * m * hidden * tokens * top_k * (n - 1) / n * 4);
  }
};

MOEBENCH_MPI_TEST_MAIN(TestTrafficMpi)
#include "tst_traffic_mpi.moc"
