// ctest-labels: mpi np=4 slow
// data_centric (Janus: pull experts, push gradients back, credit-based buffer) on the launched
// ranks (CTest: 4 = 2 virtual nodes x 2; any count works for the training rows):
//   matches_single_rank     20 training steps against the in-process single-rank Trainer
//                           (loss per step 1e-5 relative, final parameters 1e-4);
//   one_layer_pulls         one MoE layer driven directly: outputs, dx and the owners' expert
//                           gradients equal a local reference holding every expert; credits in
//                           use never exceed C; every distinct remote expert is pulled once
//                           and pushed back once: the meter counts 2 x expert bytes per such
//                           expert at its owner (gets counted on the puller's meter); a second
//                           iteration pulls again (the cache is per iteration).
#include <QtTest>

#include <mpi.h>

#include <cmath>
#include <numeric>

#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/dist/traffic_meter.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/strategies/data_centric.h"
#include "moebench/train/distributed.h"
#include "moebench/train/trainer.h"
#include "mpi_test_main.h"
#include "equivalence_support.h"
#include "test_support.h"

using namespace moebench;

namespace {

constexpr int L = 2, C = 6, F = 8, N = 10, K = 2;  // L experts per rank
constexpr size_t EXPERT = 2 * F * C + F + C;         // floats per expert

ExpertParams view(float* p) { return {p, p + F * C, p + F * C + F, p + 2 * F * C + F}; }

}  // namespace

class TestDataCentric : public QObject {
  Q_OBJECT

 private slots:
  void registered() {
    QVERIFY(make_strategy("data_centric")->name() == "data_centric");
    const auto& names = strategy_names();
    QVERIFY(std::find(names.begin(), names.end(), "data_centric") != names.end());
  }

  void predict_uniform() {
    CostInputs in;
    in.tokens = 4096;
    in.top_k = 2;
    in.hidden = 64;
    in.ffn = 256;
    in.experts = 16;
    in.ep_size = 8;
    in.devices_per_node = 4;
    in.intra_bw = 100e9;
    in.inter_bw = 10e9;
    in.flops_rate = 1e12;
    const StrategyCost c = make_strategy("data_centric")->predict(in);
    const double expert_bytes = (2.0 * 64 * 256 + 256 + 64) * 4;
    // 14 remote experts, 6 on the node, 8 off it; each surely gets a token at 8192 assignments.
    QVERIFY(std::abs(c.bytes_intra - 6 * expert_bytes) < 1e-6 * expert_bytes);
    QVERIFY(std::abs(c.bytes_inter - 8 * expert_bytes) < 1e-6 * expert_bytes);
    QVERIFY(std::abs(c.comm_seconds - 8 * expert_bytes / 10e9) < 1e-12);
    QVERIFY(c.compute_seconds > 0);
  }

  void matches_single_rank_data() {
    QTest::addColumn<QString>("routing");
    QTest::addColumn<int>("top_k");
    QTest::addColumn<int>("credits");
    QTest::newRow("learned") << "learned" << 2 << 2;
    QTest::newRow("zipf") << "zipf:1.2" << 2 << 2;
    QTest::newRow("all tokens to expert 0") << "hot:0,1" << 1 << 2;
    QTest::newRow("learned credits 1") << "learned" << 2 << 1;
    QTest::newRow("zipf credits 3") << "zipf:1.2" << 2 << 3;
  }
  void matches_single_rank() {
    QFETCH(QString, routing);
    QFETCH(int, top_k);
    QFETCH(int, credits);
    auto world = MpiCommunicator::world();
    const int P = world->size();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    const int nodes = P % 2 == 0 ? 2 : 1, experts = std::lcm(4, P);
    const std::vector<std::string> sets = {
        "train.steps=20", "train.batch_size=" + std::to_string(2 * P), "train.eval_every=0",
        "cluster.nodes=" + std::to_string(nodes), "run.ranks=" + std::to_string(P), "run.threads=1",
        "moe.experts=" + std::to_string(experts), "moe.top_k=" + std::to_string(top_k),
        "strategy.name=data_centric", "strategy.credits=" + std::to_string(credits),
        "moe.routing=" + routing.toStdString()};
    const Config cfg = load_config(test::tiny_config_path(), sets);
    QTemporaryDir ref_dir, dist_dir;

    Trainer ref(cfg, ref_dir.path().toStdString());
    const std::vector<float> expected = test::train_losses(ref);
    Trainer dist(cfg, dist_dir.path().toStdString() + "/r" + std::to_string(world->rank()), world.get());
    QVERIFY(dist.distributed());
    const std::vector<float> got = test::train_losses(dist);

    const QString loss_diff = test::compare_losses(got, expected, world->rank());
    QVERIFY2(loss_diff.isEmpty(), qPrintable(loss_diff));
    // The strategy really ran and pulled (skewed routings still pull expert 0 on other ranks).
    long pulls = 0;
    for (int b = 0; b < 64; ++b) {
      const MoeLayer* layer = nullptr;
      try {
        layer = dist.model().moe_layer(b);
      } catch (const std::exception&) {
        break;
      }
      if (!layer) continue;
      if (const auto* dc = dynamic_cast<const DataCentric*>(layer->strategy())) {
        pulls += dc->stats().pulls;
        QVERIFY(dc->stats().max_in_use <= dc->stats().credits);
      }
    }
    long all_pulls = 0;
    MPI_Allreduce(&pulls, &all_pulls, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    QVERIFY2(all_pulls > 0, "no rank pulled an expert");

    const QString param_diff = test::compare_params(dist.model().params(), ref.model().params(), world->rank());
    QVERIFY2(param_diff.isEmpty(), qPrintable(param_diff));
  }

  void one_layer_pulls_data() {
    QTest::addColumn<int>("credits");
    QTest::newRow("credits 1") << 1;
    QTest::newRow("credits 2") << 2;
    QTest::newRow("credits 3") << 3;
  }
  void one_layer_pulls() {
    QFETCH(int, credits);
    auto world = MpiCommunicator::world();
    const int P = world->size(), E = L * P, me = world->rank();
    if (P % 2 != 0) QSKIP("needs an even number of ranks (2 virtual nodes)");
    const Topology topo = Topology::virtual_blocks(2, P / 2);
    TrafficMeter meter(me, topo);

    // Rank-dependent tokens, shared router, rank r's experts from seed 50 + r (so every rank
    // can build the full reference).
    std::vector<float> x = test::random_vector((size_t)N * C, 100 + me);
    std::vector<float> router = test::random_vector((size_t)E * C, 7);
    std::vector<float> dout = test::random_vector((size_t)N * C, 300 + me);
    std::vector<float> all_w;
    for (int r = 0; r < P; ++r) {
      const auto w = test::random_vector((size_t)L * EXPERT, 50 + r, 0.3f);
      all_w.insert(all_w.end(), w.begin(), w.end());
    }
    std::vector<float> w(all_w.begin() + (size_t)me * L * EXPERT, all_w.begin() + (size_t)(me + 1) * L * EXPERT);
    std::vector<float> g(w.size(), 0.0f);
    MoeContext ctx;
    ctx.ep = world.get();
    ctx.topology = &topo;
    ctx.experts = E;
    ctx.C = C;
    ctx.F = F;
    ctx.first_local = me * L;
    for (int j = 0; j < L; ++j) {
      ctx.local.push_back(view(w.data() + j * EXPERT));
      ctx.local_grads.push_back(view(g.data() + j * EXPERT));
    }
    auto owned_strategy = std::make_unique<DataCentric>(credits);
    DataCentric* dc = owned_strategy.get();
    MoeLayer layer;
    layer.set_strategy(std::move(owned_strategy), ctx);
    const MoeLayerShape shape{N, C, F, E, K, 0.0f, true};

    world->set_traffic_meter(&meter);
    std::vector<float> out((size_t)N * C), dx((size_t)N * C, 0.0f), drouter((size_t)E * C, 0.0f);
    layer.forward(out.data(), x.data(), router.data(), {}, shape);
    layer.backward(dx.data(), drouter.data(), {}, dout.data(), 0.01f, x.data(), router.data(), {});
    world->set_traffic_meter(nullptr);

    // Reference: every expert on this rank.
    std::vector<float> all_g(all_w.size(), 0.0f);
    std::vector<ExpertParams> experts, dexperts;
    for (int e = 0; e < E; ++e) {
      experts.push_back(view(all_w.data() + (size_t)e * EXPERT));
      dexperts.push_back(view(all_g.data() + (size_t)e * EXPERT));
    }
    MoeLayer ref;
    std::vector<float> out_ref((size_t)N * C), dx_ref((size_t)N * C, 0.0f), drouter_ref((size_t)E * C, 0.0f);
    ref.forward(out_ref.data(), x.data(), router.data(), experts, shape);
    ref.backward(dx_ref.data(), drouter_ref.data(), dexperts, dout.data(), 0.01f, x.data(), router.data(), experts);
    for (size_t i = 0; i < out.size(); ++i) {
      QVERIFY2(std::abs(out[i] - out_ref[i]) <= 1e-5f * (1 + std::abs(out_ref[i])), "forward output");
      QVERIFY2(std::abs(dx[i] - dx_ref[i]) <= 1e-5f * (1 + std::abs(dx_ref[i])), "input gradient");
    }
    MPI_Allreduce(MPI_IN_PLACE, all_g.data(), (int)all_g.size(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < g.size(); ++i) {
      const float r = all_g[(size_t)me * L * EXPERT + i];
      QVERIFY2(std::abs(g[i] - r) <= 1e-4f * (1 + std::abs(r)),
               qPrintable(QString("rank %1 expert grad %2: %3 vs %4").arg(me).arg(i).arg(g[i]).arg(r)));
    }

    // Distinct remote experts this rank routed rows to, by owner.
    const std::vector<int>& off = layer.expert_offsets();
    std::vector<int> used_of(P, 0);
    int remote = 0;
    for (int e = 0; e < E; ++e)
      if (off[e + 1] > off[e] && e / L != me) ++used_of[e / L], ++remote;
    const uint64_t expert_bytes = EXPERT * sizeof(float);
    const DataCentricStats& st = dc->stats();
    QCOMPARE(st.credits, credits);
    QVERIFY2(st.max_in_use <= credits, qPrintable(QString("max in use %1 > C %2").arg(st.max_in_use).arg(credits)));
    QCOMPARE(st.max_in_use, std::min(credits, remote));
    QCOMPARE(st.pulls, (long)remote);
    QCOMPARE(st.bytes_pulled, (uint64_t)remote * expert_bytes);
    QCOMPARE(st.pushes, (long)remote);
    QCOMPARE(st.bytes_pushed, (uint64_t)remote * expert_bytes);
    QCOMPARE(st.cache_hits, (long)remote);
    QCOMPARE((int)dc->last_pulled().size(), remote);
    for (int p = 0; p < P; ++p) {
      const uint64_t expected = p == me ? 0 : 2 * (uint64_t)used_of[p] * expert_bytes;  // get + accumulate
      QVERIFY2(meter.bytes_to(p) == expected, qPrintable(QString("rank %1 -> %2: meter %3, expected %4")
                                                             .arg(me).arg(p).arg(meter.bytes_to(p)).arg(expected)));
    }
    long remote_all = remote;
    MPI_Allreduce(MPI_IN_PLACE, &remote_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    QVERIFY2(remote_all > 0, "no rank pulled an expert");

    // A second iteration pulls again (no stale cache) and the gradients double.
    std::fill(dx.begin(), dx.end(), 0.0f);
    layer.forward(out.data(), x.data(), router.data(), {}, shape);
    layer.backward(dx.data(), drouter.data(), {}, dout.data(), 0.01f, x.data(), router.data(), {});
    QCOMPARE(dc->stats().pulls, 2L * remote);
    QVERIFY(dc->stats().max_in_use <= credits);
    for (size_t i = 0; i < g.size(); ++i) {
      const float r = 2 * all_g[(size_t)me * L * EXPERT + i];
      QVERIFY2(std::abs(g[i] - r) <= 1e-4f * (1 + std::abs(r)), "expert gradient after two iterations");
    }
  }
};

MOEBENCH_MPI_TEST_MAIN(TestDataCentric)
#include "tst_data_centric.moc"
