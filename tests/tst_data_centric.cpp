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
//   pull_order_algorithm1   janus_pull_order / janus_expert_order against Algorithm 1 and
//                           P_i^r (table-driven, no MPI).
//   pull_order_on_ranks     4 ranks = 2 nodes x 2, every expert used (forced routing):
//                           last_pulled() is the internal experts by ascending P_i^r, then the
//                           external ones (priority on), or ascending on every rank (off);
//                           also on 1 node x 4 (with m = 2 both orders coincide).
//   switches_one_layer      one layer with every priority/prefetch/hierarchical combination:
//                           outputs, dx and owners' gradients equal the local reference; with
//                           prefetch, forward issues no get for a prefetched expert; the
//                           inter-node bytes per machine per iteration (sum over its ranks,
//                           TrafficMeter) are data_centric's predict() on a 2 x 2 cluster
//                           model: expert_bytes * E*m*(n-1) (Comm_DC) each way when
//                           hierarchical, and m times that without.
//   pcie_pairing_copies     4 ranks = 2 nodes x 2, hierarchical, pcie_switch_pairs = [0, 1],
//                           every expert used: each rank copies its group (even / odd positions
//                           of the pair's sorted external experts: lower / higher local rank)
//                           from the node cache and the peer's group from the peer, interleaved
//                           own, peer, own, peer (Fig. 9); the two ranks of a pair never copy
//                           the same expert from the cache; results equal the local reference.
//   matches_single_rank also has rows with pcie_pairing on (with and without prefetch).
#include <QtTest>

#include <mpi.h>

#include <cmath>
#include <numeric>

#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/dist/traffic_meter.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/janus_order.h"
#include "moebench/config/strategy_spec.h"
#include "moebench/strategies/data_centric.h"
#include "moebench/strategies/registry.h"
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

struct Switches {
  bool priority = true, prefetch = false, hierarchical = false;
  int credits = 2;
  bool pcie_pairing = false;
  std::vector<int> pcie_switch_pairs;
};

// One MoE layer (Lr experts per rank, hidden c, ffn f, every token forced to K experts
// covering all experts) on 2 virtual nodes; forward + backward checked against the local
// reference holding every expert. Inter-node bytes of forward and backward are returned.
struct OneLayerResult {
  QString error;
  uint64_t fwd_inter = 0, bwd_inter = 0;
  std::vector<int> pulled, issued, prefetched;
  DataCentricStats stats;
  size_t expert_floats = 0;
  std::vector<DataCentricCopy> copies;
};

OneLayerResult run_one_layer(Communicator& world, const Switches& sw, int c, int f, int Lr = 2, int nodes = 2) {
  OneLayerResult res;
  const int P = world.size(), E = Lr * P, me = world.rank(), n = 10, k = 2;
  const size_t ef = 2 * (size_t)f * c + f + c;
  res.expert_floats = ef;
  auto vw = [&](float* p) { return ExpertParams{p, p + f * c, p + f * c + f, p + 2 * f * c + f}; };
  const Topology topo = Topology::virtual_blocks(nodes, P / nodes);
  TrafficMeter meter(me, topo);
  std::vector<float> x = test::random_vector((size_t)n * c, 100 + me);
  std::vector<float> router = test::random_vector((size_t)E * c, 7);
  std::vector<float> dout = test::random_vector((size_t)n * c, 300 + me);
  std::vector<float> all_w;
  for (int r = 0; r < P; ++r) {
    const auto w = test::random_vector((size_t)Lr * ef, 50 + r, 0.3f);
    all_w.insert(all_w.end(), w.begin(), w.end());
  }
  std::vector<float> w(all_w.begin() + (size_t)me * Lr * ef, all_w.begin() + (size_t)(me + 1) * Lr * ef);
  std::vector<float> g(w.size(), 0.0f);
  std::vector<int> forced((size_t)n * k);
  for (int i = 0; i < n * k; ++i) forced[i] = (i + me) % E;  // every expert, distinct per token
  MoeContext ctx;
  ctx.ep = &world;
  ctx.topology = &topo;
  ctx.experts = E;
  ctx.C = c;
  ctx.F = f;
  ctx.first_local = me * Lr;
  ClusterSpec spec;  // data_centric's pcie_pairing reads the switch pairs from the cluster
  spec.nodes = nodes;
  spec.devices_per_node = P / nodes;
  spec.pcie_switch_pairs = sw.pcie_switch_pairs;
  const ClusterModel cluster(spec);
  ctx.cluster = &cluster;
  for (int j = 0; j < Lr; ++j) {
    ctx.local.push_back(vw(w.data() + j * ef));
    ctx.local_grads.push_back(vw(g.data() + j * ef));
  }
  DataCentricOptions options;
  options.credits = sw.credits;
  options.priority = sw.priority;
  options.prefetch = sw.prefetch;
  options.hierarchical = sw.hierarchical;
  options.pcie_pairing = sw.pcie_pairing;
  auto owned = std::make_unique<DataCentric>(options);
  DataCentric* dc = owned.get();
  MoeLayer layer;
  layer.set_strategy(std::move(owned), ctx);
  const MoeLayerShape shape{n, c, f, E, k, 0.0f, true};

  world.set_traffic_meter(&meter);
  std::vector<float> out((size_t)n * c), dx((size_t)n * c, 0.0f), drouter((size_t)E * c, 0.0f);
  layer.begin_iteration();
  layer.forward(out.data(), x.data(), router.data(), {}, shape, forced.data());
  res.fwd_inter = meter.bytes(LinkClass::inter_node);
  meter.reset();
  layer.backward(dx.data(), drouter.data(), {}, dout.data(), 0.01f, x.data(), router.data(), {});
  res.bwd_inter = meter.bytes(LinkClass::inter_node);
  world.set_traffic_meter(nullptr);
  res.pulled = dc->last_pulled();
  res.issued = dc->last_forward_issued();
  res.prefetched = dc->last_prefetched();
  res.stats = dc->stats();
  res.copies = dc->last_copy_order();

  std::vector<float> all_g(all_w.size(), 0.0f);
  std::vector<ExpertParams> experts, dexperts;
  for (int e = 0; e < E; ++e) {
    experts.push_back(vw(all_w.data() + (size_t)e * ef));
    dexperts.push_back(vw(all_g.data() + (size_t)e * ef));
  }
  MoeLayer ref;
  std::vector<float> out_ref((size_t)n * c), dx_ref((size_t)n * c, 0.0f), drouter_ref((size_t)E * c, 0.0f);
  ref.forward(out_ref.data(), x.data(), router.data(), experts, shape, forced.data());
  ref.backward(dx_ref.data(), drouter_ref.data(), dexperts, dout.data(), 0.01f, x.data(), router.data(), experts);
  for (size_t i = 0; i < out.size(); ++i) {
    if (!(std::abs(out[i] - out_ref[i]) <= 1e-5f * (1 + std::abs(out_ref[i])))) res.error = "forward output";
    if (!(std::abs(dx[i] - dx_ref[i]) <= 1e-5f * (1 + std::abs(dx_ref[i])))) res.error = "input gradient";
  }
  MPI_Allreduce(MPI_IN_PLACE, all_g.data(), (int)all_g.size(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (size_t i = 0; i < g.size(); ++i) {
    const float r = all_g[(size_t)me * Lr * ef + i];
    if (!(std::abs(g[i] - r) <= 1e-4f * (1 + std::abs(r))))
      res.error = QString("rank %1 expert grad %2: %3 vs %4").arg(me).arg(i).arg(g[i]).arg(r);
  }
  return res;
}

// Sum of v over the ranks of my (virtual, blocks of P/2) node.
uint64_t node_sum(uint64_t v, int me, int P) {
  std::vector<unsigned long long> all(P);
  unsigned long long mine = v;
  MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
  uint64_t s = 0;
  for (int p = 0; p < P; ++p)
    if (p / (P / 2) == me / (P / 2)) s += all[p];
  return s;
}

// data_centric's prediction for run_one_layer's layer (4 ranks = 2 nodes x 2, 10 tokens, top 2).
StrategyCost predicted(int c, int f, int per_rank, bool hierarchical) {
  ClusterSpec spec;
  spec.nodes = 2;
  spec.devices_per_node = 2;
  MoeContext ctx;
  ctx.experts = 4 * per_rank;
  ctx.C = c;
  ctx.F = f;
  ctx.ep_world = {0, 1, 2, 3};
  DataCentricOptions options;
  options.hierarchical = hierarchical;
  return DataCentric(options).predict({10, 2}, ctx, ClusterModel(spec));
}

}  // namespace

class TestDataCentric : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { MpiCommunicator::world()->enable_windows(); }  // as the trainer does for data_centric
  void registered() {
    QVERIFY(make_strategy("data_centric")->name() == "data_centric");
    const auto& names = strategy_names();
    QVERIFY(std::find(names.begin(), names.end(), "data_centric") != names.end());
  }

  // 8 EP ranks on 2 nodes x 4 (one NIC per device, no latency): of the 14 remote experts 6
  // are on the node and 8 off it; each surely gets a token at 8192 assignments.
  void predict_on_two_nodes() {
    ClusterSpec spec;
    spec.nodes = 2;
    spec.devices_per_node = 4;
    spec.devices_per_nic = 1;
    spec.device_flops = 1e12;
    spec.intra = {100e9, 0};
    spec.inter = {10e9, 0};
    const ClusterModel cluster(spec);
    MoeContext ctx;
    ctx.experts = 16;
    ctx.C = 64;
    ctx.F = 256;
    ctx.ep_world = {0, 1, 2, 3, 4, 5, 6, 7};
    const StrategyCost c = make_strategy("data_centric")->predict({4096, 2}, ctx, cluster);
    const double expert_bytes = (2.0 * 64 * 256 + 256 + 64) * 4;
    QCOMPARE(c.rank.intra, 6 * expert_bytes);
    QCOMPARE(c.rank.inter, 8 * expert_bytes);
    QCOMPARE(c.machine.inter, 4 * 8 * expert_bytes);
    QCOMPARE(c.comm_seconds, 8 * expert_bytes / 10e9);
    QCOMPARE(c.compute_seconds, 16 * (4.0 * 512 * 64 * 256) / 1e12);  // 16 experts of 8192 / 16 rows
  }

  void matches_single_rank_data() {
    QTest::addColumn<QString>("routing");
    QTest::addColumn<int>("top_k");
    QTest::addColumn<int>("credits");
    QTest::addColumn<bool>("priority");
    QTest::addColumn<bool>("prefetch");
    QTest::addColumn<bool>("hierarchical");
    QTest::addColumn<bool>("pcie_pairing");
    QTest::newRow("learned") << "learned" << 2 << 2 << true << false << false << false;
    QTest::newRow("zipf") << "zipf:1.2" << 2 << 2 << true << false << false << false;
    QTest::newRow("all tokens to expert 0") << "hot:0,1" << 1 << 2 << true << false << false << false;
    QTest::newRow("learned credits 1") << "learned" << 2 << 1 << true << false << false << false;
    QTest::newRow("zipf credits 3") << "zipf:1.2" << 2 << 3 << true << false << false << false;
    // Every switch combination (priority / prefetch / hierarchical).
    for (int bits = 0; bits < 8; ++bits) {
      const bool pr = bits & 1, pf = bits & 2, hi = bits & 4;
      const std::string name = std::string("learned priority ") + (pr ? "on" : "off") + " prefetch " +
                               (pf ? "on" : "off") + " hierarchical " + (hi ? "on" : "off");
      QTest::newRow(name.c_str()) << "learned" << 2 << 2 << pr << pf << hi << false;
    }
    QTest::newRow("uniform credits 1 prefetch hierarchical") << "uniform" << 2 << 1 << true << true << true << false;
    QTest::newRow("hot expert 0 prefetch hierarchical") << "hot:0,1" << 1 << 2 << true << true << true << false;
    // pcie_pairing (Fig. 9): same weights, so identical results.
    QTest::newRow("learned hierarchical pcie_pairing") << "learned" << 2 << 2 << true << false << true << true;
    QTest::newRow("learned prefetch hierarchical pcie_pairing") << "learned" << 2 << 2 << true << true << true << true;
    QTest::newRow("uniform credits 1 prefetch hierarchical pcie_pairing") << "uniform" << 2 << 1 << true << true << true << true;
  }
  void matches_single_rank() {
    QFETCH(QString, routing);
    QFETCH(int, top_k);
    QFETCH(int, credits);
    QFETCH(bool, priority);
    QFETCH(bool, prefetch);
    QFETCH(bool, hierarchical);
    QFETCH(bool, pcie_pairing);
    auto world = MpiCommunicator::world();
    const int P = world->size();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    const int nodes = P % 2 == 0 ? 2 : 1, experts = std::lcm(4, P);
    const std::vector<std::string> sets = {
        "train.steps=20", "train.batch_size=" + std::to_string(2 * P), "train.eval_every=0",
        "cluster.nodes=" + std::to_string(nodes), "run.ranks=" + std::to_string(P), "run.threads=1",
        "moe.experts=" + std::to_string(experts), "moe.top_k=" + std::to_string(top_k),
        "strategy.name=data_centric", "strategy.data_centric.credits=" + std::to_string(credits),
        "moe.routing=" + routing.toStdString(), std::string("strategy.data_centric.priority=") + (priority ? "true" : "false"),
        std::string("strategy.data_centric.prefetch=") + (prefetch ? "true" : "false"),
        std::string("strategy.data_centric.hierarchical=") + (hierarchical ? "true" : "false")};
    std::vector<std::string> all_sets = sets;
    if (pcie_pairing) {
      all_sets.push_back("strategy.data_centric.pcie_pairing=true");
      all_sets.push_back("cluster.pcie_switch_pairs=[0,1]");
    }
    const Config cfg = load_config(test::tiny_config_path(), all_sets);
    QTemporaryDir ref_dir, dist_dir;

    Trainer ref(cfg, ref_dir.path().toStdString());
    const std::vector<float> expected = test::train_losses(ref);
    Trainer dist(cfg, dist_dir.path().toStdString() + "/r" + std::to_string(world->rank()), world.get());
    QVERIFY(dist.distributed());
    const std::vector<float> got = test::train_losses(dist);

    const QString loss_diff = test::compare_losses(got, expected, world->rank());
    QVERIFY2(loss_diff.isEmpty(), qPrintable(loss_diff));
    // The strategy really ran and pulled (skewed routings still pull expert 0 on other ranks).
    long pulls = 0, prefetched = 0, node_pulls = 0, copies = 0;
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
        prefetched += dc->stats().prefetched;
        node_pulls += dc->stats().node_pulls;
        copies += dc->stats().cache_copies + dc->stats().peer_copies;
        if (!pcie_pairing) QCOMPARE(dc->stats().cache_copies + dc->stats().peer_copies, 0L);
        QVERIFY(dc->stats().max_in_use <= dc->stats().credits);
        if (!prefetch) QCOMPARE(dc->stats().prefetched, 0L);
        if (!hierarchical) QCOMPARE(dc->stats().node_pulls, 0L);
      }
    }
    long all_pulls = 0;
    MPI_Allreduce(&pulls, &all_pulls, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    QVERIFY2(all_pulls > 0, "no rank pulled an expert");
    // The switches reached the strategy: prefetch issued pulls, the node cache was filled.
    long all_prefetched = 0, all_node_pulls = 0;
    MPI_Allreduce(&prefetched, &all_prefetched, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&node_pulls, &all_node_pulls, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    QCOMPARE(all_prefetched > 0, prefetch);
    QCOMPARE(all_node_pulls > 0, hierarchical && nodes == 2);
    long all_copies = 0;
    MPI_Allreduce(&copies, &all_copies, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (pcie_pairing && hierarchical && nodes == 2 && P / nodes >= 2) QVERIFY2(all_copies > 0, "pcie_pairing made no copies");

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
    DataCentricOptions options;
    options.credits = credits;
    auto owned_strategy = std::make_unique<DataCentric>(options);
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

  void pull_order_algorithm1_data() {
    QTest::addColumn<int>("r");
    QTest::addColumn<int>("m");
    QTest::addColumn<int>("E");
    QTest::addColumn<QVector<int>>("expected");  // Algorithm 1, written out
    QTest::newRow("m2 E1 r0") << 0 << 2 << 1 << QVector<int>{1};
    QTest::newRow("m2 E1 r1") << 1 << 2 << 1 << QVector<int>{0};
    QTest::newRow("m2 E2 r1") << 1 << 2 << 2 << QVector<int>{0, 1};
    QTest::newRow("m4 E1 r0") << 0 << 4 << 1 << QVector<int>{1, 2, 3};
    QTest::newRow("m4 E1 r1") << 1 << 4 << 1 << QVector<int>{2, 3, 0};
    QTest::newRow("m4 E1 r3") << 3 << 4 << 1 << QVector<int>{0, 1, 2};
    QTest::newRow("m4 E2 r2") << 2 << 4 << 2 << QVector<int>{6, 7, 0, 1, 2, 3};
    QTest::newRow("m3 E3 r1") << 1 << 3 << 3 << QVector<int>{6, 7, 8, 0, 1, 2};
    QTest::newRow("m8 E2 r5") << 5 << 8 << 2 << QVector<int>{12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    QTest::newRow("m1 E4 r0") << 0 << 1 << 4 << QVector<int>{};
  }
  void pull_order_algorithm1() {
    QFETCH(int, r);
    QFETCH(int, m);
    QFETCH(int, E);
    QFETCH(QVector<int>, expected);
    const std::vector<int> got = janus_pull_order(r, m, E, true);
    QCOMPARE(QVector<int>(got.begin(), got.end()), expected);
    // The same order by ascending P_i^r (ties: ascending i), from the paper's formula.
    std::vector<int> by_p;
    for (int i = 0; i < m * E; ++i)
      if (i / E != r) by_p.push_back(i);
    auto P = [&](int i) { return i / E > r ? i / E - r : i / E + m - r; };
    std::stable_sort(by_p.begin(), by_p.end(), [&](int a, int b) { return P(a) < P(b); });
    QCOMPARE(got, by_p);
    for (int i : got) QCOMPARE(janus_priority(i, r, m, E), P(i));
    // Staggered: at pull step t every owner is pulled from by exactly one worker.
    for (int t = 0; t < (m - 1) * E; ++t) {
      std::vector<int> pulled_from(m, 0);
      for (int w = 0; w < m; ++w) ++pulled_from[janus_pull_order(w, m, E, true)[t] / E];
      for (int o = 0; o < m; ++o) QCOMPARE(pulled_from[o], 1);
    }
    // Priority off: ascending, the same sequence of owners for every worker.
    std::vector<int> asc;
    for (int i = 0; i < m * E; ++i)
      if (i / E != r) asc.push_back(i);
    QCOMPARE(janus_pull_order(r, m, E, false), asc);
  }

  void expert_order() {
    // 2 nodes x 2 ranks, 2 experts per rank.
    const std::vector<int> two_by_two = {0, 0, 1, 1};
    QCOMPARE(janus_expert_order(0, two_by_two, 2, true), (std::vector<int>{2, 3, 4, 5, 6, 7}));
    QCOMPARE(janus_expert_order(1, two_by_two, 2, true), (std::vector<int>{0, 1, 4, 5, 6, 7}));
    QCOMPARE(janus_expert_order(3, two_by_two, 2, true), (std::vector<int>{4, 5, 0, 1, 2, 3}));
    // 2 nodes x 4 ranks, 1 expert per rank: rank 6 is local rank 2 of node 1.
    const std::vector<int> two_by_four = {0, 0, 0, 0, 1, 1, 1, 1};
    QCOMPARE(janus_expert_order(6, two_by_four, 1, true), (std::vector<int>{7, 4, 5, 0, 1, 2, 3}));
    QCOMPARE(janus_expert_order(6, two_by_four, 1, false), (std::vector<int>{4, 5, 7, 0, 1, 2, 3}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, janus_pull_order(2, 2, 1));
  }

  void pull_order_on_ranks_data() {
    QTest::addColumn<bool>("priority");
    QTest::addColumn<int>("nodes");
    QTest::newRow("2 nodes x 2, priority on") << true << 2;
    QTest::newRow("2 nodes x 2, priority off") << false << 2;
    QTest::newRow("1 node x 4, priority on") << true << 1;
    QTest::newRow("1 node x 4, priority off") << false << 1;
  }
  void pull_order_on_ranks() {
    QFETCH(bool, priority);
    QFETCH(int, nodes);
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P != 4) QSKIP("written for 4 ranks (2 nodes x 2)");
    Switches sw;
    sw.priority = priority;
    const OneLayerResult res = run_one_layer(*world, sw, C, F, L, nodes);
    QVERIFY2(res.error.isEmpty(), qPrintable(res.error));
    // Expected directly from the paper: internal experts (my node) by P_i^r, then external.
    const int m = P / nodes, r = me % m, node = me / m;
    std::vector<int> internal, external;
    for (int e = 0; e < L * P; ++e) {
      if (e / L == me) continue;
      (e / L / m == node ? internal : external).push_back(e);
    }
    auto prio = [&](int e) {
      const int owner_local = e / L % m;
      return owner_local > r ? owner_local - r : owner_local + m - r;
    };
    if (priority) std::stable_sort(internal.begin(), internal.end(), [&](int a, int b) { return prio(a) < prio(b); });
    std::vector<int> expected = internal;
    expected.insert(expected.end(), external.begin(), external.end());
    QCOMPARE(res.pulled, expected);
    QCOMPARE(res.issued, expected);  // no prefetch, no node cache: forward pulled them all
    // The first owner each rank pulls from, gathered: with priority no two workers of a node
    // start at the same owner (for m > 2 the orders differ from the ascending ones).
    std::vector<int> first_owner(P);
    const int mine = res.pulled.front() / L;
    MPI_Allgather(&mine, 1, MPI_INT, first_owner.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int p = 0; p < P; ++p) {
      const int node_base = p / m * m, lr = p % m;
      const int want = priority ? node_base + (lr + 1) % m : node_base + (lr == 0 ? 1 : 0);
      QCOMPARE(first_owner[p], want);
    }
  }

  void switches_one_layer_data() {
    QTest::addColumn<bool>("priority");
    QTest::addColumn<bool>("prefetch");
    QTest::addColumn<bool>("hierarchical");
    QTest::addColumn<int>("credits");
    for (int bits = 0; bits < 8; ++bits) {
      const bool pr = bits & 1, pf = bits & 2, hi = bits & 4;
      for (int cr : {1, 3}) {
        const std::string name = std::string("priority ") + (pr ? "on" : "off") + " prefetch " + (pf ? "on" : "off") +
                                 " hierarchical " + (hi ? "on" : "off") + " credits " + std::to_string(cr);
        QTest::newRow(name.c_str()) << pr << pf << hi << cr;
      }
    }
  }
  void switches_one_layer() {
    QFETCH(bool, priority);
    QFETCH(bool, prefetch);
    QFETCH(bool, hierarchical);
    QFETCH(int, credits);
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P != 4) QSKIP("written for 4 ranks (2 nodes x 2)");
    Switches sw{priority, prefetch, hierarchical, credits, false, {}};
    // H = 4, FFN = 4H: the expert is exactly janus_expert_floats(H, 4).
    const int H = 4, a = 4, Lr = 2, n = 2, m = 2;
    const OneLayerResult res = run_one_layer(*world, sw, H, a * H, Lr);
    QVERIFY2(res.error.isEmpty(), qPrintable(res.error));
    QCOMPARE((double)res.expert_floats, 2.0 * a * H * H + (a + 1.0) * H);  // Janus's 8H^2 + the biases
    const uint64_t expert_bytes = res.expert_floats * sizeof(float);
    QVERIFY(res.stats.max_in_use <= credits);

    // Prefetch: the forward issues no get for an expert begin_iteration already pulled.
    if (prefetch) {
      QVERIFY(!res.prefetched.empty());
      QCOMPARE(res.stats.last_prefetched, (int)res.prefetched.size());
      for (int e : res.issued)
        QVERIFY2(std::find(res.prefetched.begin(), res.prefetched.end(), e) == res.prefetched.end(),
                 qPrintable(QString("rank %1 pulled prefetched expert %2 again").arg(me).arg(e)));
      if (!hierarchical) QCOMPARE((int)res.prefetched.size(), std::min(credits, (m - 1) * Lr) + (n - 1) * m * Lr);
      else QVERIFY((int)res.prefetched.size() >= std::min(credits, (m - 1) * Lr));
    } else {
      QVERIFY(res.prefetched.empty());
      QCOMPARE(res.stats.prefetched, 0L);
    }
    QCOMPARE((int)res.pulled.size(), P * Lr - Lr);  // every remote expert used

    // Inter-node bytes per machine per iteration, each way: the prediction, Comm_DC with the node cache.
    const uint64_t comm_dc = expert_bytes * Lr * m * (n - 1);
    const double predicted_dc = predicted(H, a * H, Lr, hierarchical).machine.inter;
    QCOMPARE(predicted_dc, hierarchical ? (double)comm_dc : (double)(m * comm_dc));
    const uint64_t fwd = node_sum(res.fwd_inter, me, P), bwd = node_sum(res.bwd_inter, me, P);
    const uint64_t expected = (uint64_t)predicted_dc;
    QVERIFY2(fwd == expected, qPrintable(QString("rank %1: machine pulled %2 inter-node bytes, expected %3").arg(me).arg(fwd).arg(expected)));
    QVERIFY2(bwd == expected, qPrintable(QString("rank %1: machine pushed %2 inter-node bytes, expected %3").arg(me).arg(bwd).arg(expected)));
    if (hierarchical) {
      QCOMPARE(node_sum(res.stats.node_pulls, me, P), (uint64_t)(n - 1) * m * Lr);
      QCOMPARE(node_sum(res.stats.node_pushes, me, P), (uint64_t)(n - 1) * m * Lr);
    } else {
      QCOMPARE(res.stats.node_pulls, 0L);
    }
    QVERIFY(res.copies.empty());  // pcie_pairing off
    QCOMPARE(res.stats.cache_copies + res.stats.peer_copies, 0L);
  }

  // Janus §5.1.3: with the node cache, a machine's inter-node bytes per iteration are
  // Comm_DC = expert_bytes * E * m * (n - 1) each way, for several expert shapes.
  void comm_dc_several_shapes_data() {
    QTest::addColumn<int>("hidden");
    QTest::addColumn<int>("ffn_mult");
    QTest::addColumn<int>("per_rank");
    QTest::newRow("H 4, a 4, E 1") << 4 << 4 << 1;
    QTest::newRow("H 6, a 2, E 2") << 6 << 2 << 2;
    QTest::newRow("H 8, a 4, E 3") << 8 << 4 << 3;
  }
  void comm_dc_several_shapes() {
    QFETCH(int, hidden);
    QFETCH(int, ffn_mult);
    QFETCH(int, per_rank);
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P != 4) QSKIP("written for 4 ranks (2 nodes x 2)");
    const int n = 2, m = 2;
    Switches sw;
    sw.hierarchical = true;
    const OneLayerResult res = run_one_layer(*world, sw, hidden, ffn_mult * hidden, per_rank);
    QVERIFY2(res.error.isEmpty(), qPrintable(res.error));
    const double comm_dc = predicted(hidden, ffn_mult * hidden, per_rank, true).machine.inter;
    QCOMPARE(comm_dc, (2.0 * ffn_mult * hidden * hidden + (ffn_mult + 1.0) * hidden) * per_rank * m * (n - 1) * 4);
    const uint64_t fwd = node_sum(res.fwd_inter, me, P), bwd = node_sum(res.bwd_inter, me, P);
    QVERIFY2((double)fwd == comm_dc, qPrintable(QString("machine pulled %1 inter-node bytes, Comm_DC %2").arg(fwd).arg(comm_dc)));
    QVERIFY2((double)bwd == comm_dc, qPrintable(QString("machine pushed %1 inter-node bytes, Comm_DC %2").arg(bwd).arg(comm_dc)));
  }

  void pcie_pairing_copies_data() {
    QTest::addColumn<bool>("prefetch");
    QTest::addColumn<bool>("priority");
    QTest::newRow("prefetch off") << false << true;
    QTest::newRow("prefetch on") << true << true;
    QTest::newRow("prefetch on, priority off") << true << false;
  }
  void pcie_pairing_copies() {
    QFETCH(bool, prefetch);
    QFETCH(bool, priority);
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P != 4) QSKIP("written for 4 ranks (2 nodes x 2)");
    Switches sw;
    sw.priority = priority;
    sw.prefetch = prefetch;
    sw.hierarchical = true;
    sw.pcie_pairing = true;
    sw.pcie_switch_pairs = {0, 1};
    const int m = 2, E = L * P, r = me % m, node = me / m;
    const OneLayerResult res = run_one_layer(*world, sw, C, F, L, 2);
    QVERIFY2(res.error.isEmpty(), qPrintable(res.error));
    // Every expert is used: the pair's sorted external experts, even -> local rank 0, odd -> 1.
    std::vector<int> own, theirs;
    int pos = 0;
    for (int e = 0; e < E; ++e) {
      if (e / L / m == node) continue;
      (pos % 2 == r ? own : theirs).push_back(e);
      ++pos;
    }
    QCOMPARE(res.stats.cache_copies, (long)own.size());
    QCOMPARE(res.stats.peer_copies, (long)theirs.size());
    // Fig. 9: own, peer, own, peer, ...
    std::vector<DataCentricCopy> expected;
    for (size_t t = 0; t < std::max(own.size(), theirs.size()); ++t) {
      if (t < own.size()) expected.push_back({own[t], false});
      if (t < theirs.size()) expected.push_back({theirs[t], true});
    }
    QCOMPARE((int)res.copies.size(), (int)expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      QVERIFY2(res.copies[i] == expected[i],
               qPrintable(QString("rank %1 copy %2: expert %3 from %4, expected expert %5 from %6")
                              .arg(me).arg(i).arg(res.copies[i].expert).arg(res.copies[i].from_peer ? "peer" : "cache")
                              .arg(expected[i].expert).arg(expected[i].from_peer ? "peer" : "cache")));
      QCOMPARE(res.copies[i].from_peer, i % 2 == 1);
    }
    // The two ranks of a pair never copy the same expert from the cache, and together they
    // copy every external expert from the cache exactly once.
    std::vector<int> from_cache(E, 0), all((size_t)E * P, 0);
    for (const auto& c : res.copies)
      if (!c.from_peer) ++from_cache[c.expert];
    MPI_Allgather(from_cache.data(), E, MPI_INT, all.data(), E, MPI_INT, MPI_COMM_WORLD);
    const int peer = node * m + (1 - r);
    for (int e = 0; e < E; ++e) {
      const int mine = all[(size_t)me * E + e], theirs_n = all[(size_t)peer * E + e];
      QVERIFY2(!(mine && theirs_n), qPrintable(QString("ranks %1 and %2 both copied expert %3 from the cache").arg(me).arg(peer).arg(e)));
      QCOMPARE(mine + theirs_n, e / L / m == node ? 0 : 1);
    }
  }
};

MOEBENCH_MPI_TEST_MAIN(TestDataCentric)
#include "tst_data_centric.moc"
