// ctest-labels: unit
// The strategies' predict() (moe/moe_strategy.h) on cluster models (perf/cluster_model.h):
//   two_nodes_by_hand        expert_centric, hier_a2a and data_centric (with and without the
//                            node cache) on 2 nodes x 2 devices sharing one NIC: bytes by link
//                            class per rank and per machine, comm and compute seconds worked
//                            out by hand;
//   placement_matters        the same block on one rank per node: no intra bytes, the NIC to
//                            itself;
//   sample_cluster_files     every sample_configs/clusters file: per machine, expert_centric's
//                            and hier_a2a's inter-node bytes are Comm_EC, data_centric's with
//                            the node cache Comm_DC (Janus §5.1.3); expert compute from the
//                            file's device rate and efficiency;
//   janus_and_johnny_seconds comm seconds on two paper clusters by hand (NICs shared by 2 and
//                            8 devices; a PCIe pair with its own link, one without);
//   bad_blocks               experts that do not divide over the group, ranks off the cluster.
#include <QtTest>

#include <stdexcept>
#include <string>

#include "moebench/config/cluster_file.h"
#include "moebench/config/config_loader.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/registry.h"

using namespace moebench;

namespace {

// 2 nodes x 2 devices, one NIC per node: 1 TFLOP/s, intra 100 GB/s 1 us, inter 10 GB/s 5 us.
ClusterModel two_by_two() {
  ClusterSpec spec;
  spec.nodes = 2;
  spec.devices_per_node = 2;
  spec.device_flops = 1e12;
  spec.intra = {100e9, 1e-6};
  spec.inter = {10e9, 5e-6};
  return ClusterModel(spec);
}

MoeContext block(int experts, int C, int F, std::vector<int> ep_world) {
  MoeContext ctx;
  ctx.experts = experts;
  ctx.C = C;
  ctx.F = F;
  ctx.ep_world = std::move(ep_world);
  ctx.ep_size = (int)ctx.ep_world.size();
  return ctx;
}

// Strategy `name`; data_centric with or without its node cache ([strategy.data_centric] hierarchical).
std::unique_ptr<MoeStrategy> strategy(const std::string& name, bool hierarchical) {
  StrategyConfig options;
  options.option("data_centric.hierarchical").b = hierarchical;
  return make_strategy(name, options);
}

std::vector<int> all_ranks(int world) {
  std::vector<int> r(world);
  for (int i = 0; i < world; ++i) r[i] = i;
  return r;
}

ClusterModel sample_cluster(const std::string& file) {
  const std::string path = std::string(MOEBENCH_SOURCE_DIR) + "/sample_configs/clusters/" + file;
  const ClusterConfig k = load_cluster_file(path);
  const int world = k.nodes * (k.devices_per_node > 0 ? k.devices_per_node : 4);
  return cluster_model(parse_config("", "t.toml",
                                    {"run.ranks=" + std::to_string(world), "train.batch_size=" + std::to_string(world),
                                     "cluster.file=" + path}));
}

}  // namespace

class TestStrategyPredict : public QObject {
  Q_OBJECT

 private slots:
  // 64 tokens x top 2 = 128 rows per rank, H = 8 (32-byte rows), F = 32, 4 experts (1 a rank).
  void two_nodes_by_hand_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<bool>("hierarchical");
    QTest::addColumn<double>("rank_intra");
    QTest::addColumn<double>("rank_inter");
    QTest::addColumn<double>("machine_inter");
    QTest::addColumn<double>("comm");
    QTest::addColumn<double>("compute");
    const double expert_task = 4.0 * 128 * 8 * 32 / 1e12;  // 128 rows on one expert
    // expert_centric: 128/4 rows to each of 3 peers and back (2 messages a peer, 2048 bytes);
    // the node's NIC carries both devices: 5 GB/s each.
    QTest::newRow("expert_centric") << "expert_centric" << false << 2048.0 << 4096.0 << 8192.0
                                    << 4 * 5e-6 + 4096 / 5e9 << expert_task;
    // hier_a2a: phase 1 64 rows to the node peer, phase 2 64 rows to the other node, each way.
    QTest::newRow("hier_a2a") << "hier_a2a" << false << 4096.0 << 4096.0 << 8192.0
                              << 2 * ((1e-6 + 2048 / 100e9) + (5e-6 + 2048 / 5e9)) << expert_task;
    // data_centric: the 3 remote experts pulled whole ((2*8*32 + 32 + 8) * 4 = 2208 bytes);
    // 4 experts of 32 rows computed here.
    const double expert = 2208;
    QTest::newRow("data_centric") << "data_centric" << false << expert << 2 * expert << 4 * expert
                                  << 2 * 5e-6 + 2 * expert / 5e9 << expert_task;
    // node cache: each rank of a node pulls one of the node's 2 external experts.
    QTest::newRow("data_centric, node cache") << "data_centric" << true << expert << expert << 2 * expert
                                              << 5e-6 + expert / 5e9 << expert_task;
  }
  void two_nodes_by_hand() {
    QFETCH(QString, strategy);
    QFETCH(bool, hierarchical);
    QFETCH(double, rank_intra);
    QFETCH(double, rank_inter);
    QFETCH(double, machine_inter);
    QFETCH(double, comm);
    QFETCH(double, compute);
    const StrategyCost c = ::strategy(strategy.toStdString(), hierarchical)
                               ->predict({64, 2}, block(4, 8, 32, {0, 1, 2, 3}), two_by_two());
    QCOMPARE(c.rank.intra, rank_intra);
    QCOMPARE(c.rank.inter, rank_inter);
    QCOMPARE(c.machine.intra, 2 * rank_intra);
    QCOMPARE(c.machine.inter, machine_inter);
    QCOMPARE(c.comm_seconds, comm);
    QCOMPARE(c.compute_seconds, compute);
  }

  // EP group {0, 2}: one rank per node, so every byte crosses nodes and the NIC is not shared.
  void placement_matters() {
    const StrategyCost c = make_strategy("expert_centric")->predict({64, 2}, block(2, 8, 32, {0, 2}), two_by_two());
    QCOMPARE(c.rank.intra, 0.0);
    QCOMPARE(c.rank.inter, 2.0 * 64 * 32);  // 64 rows there and back
    QCOMPARE(c.machine.inter, c.rank.inter);
    QCOMPARE(c.comm_seconds, 2 * 5e-6 + 4096 / 10e9);
    QCOMPARE(c.compute_seconds, 4.0 * 128 * 8 * 32 / 1e12);
  }

  void sample_cluster_files_data() {
    QTest::addColumn<QString>("file");
    for (const char* f : {"fastermoe_johnny.toml", "fastermoe_trevor.toml", "janus.toml", "local.toml", "moesys.toml",
                          "monta.toml", "ppmoe.toml"})
      QTest::newRow(f) << QString::fromLatin1(f);
  }
  void sample_cluster_files() {
    QFETCH(QString, file);
    const ClusterModel cluster = sample_cluster(file.toStdString());
    const int n = cluster.nodes(), m = cluster.devices_per_node(), P = n * m;
    const int H = 1024, F = 4096, k = 2;
    const double tokens = 4096, T = tokens * k;  // T token copies per worker
    const CostInputs load{tokens, k};
    const double comm_ec = 2.0 * m * H * T * (n - 1) / n * 4;
    const double comm_dc = (2.0 * H * F + F + H) * 1 * m * (n - 1) * 4;  // E = 1 expert per worker
    for (const char* name : {"expert_centric", "hier_a2a", "data_centric"}) {
      const StrategyCost c = strategy(name, true)->predict(load, block(P, H, F, all_ranks(P)), cluster);
      const double expected = std::string(name) == "data_centric" ? comm_dc : comm_ec;
      QVERIFY2(std::abs(c.machine.inter - expected) <= 1e-9 * expected,
               qPrintable(QString("%1: %2 inter-node bytes per machine, expected %3").arg(name).arg(c.machine.inter).arg(expected)));
      // T rows of H on each worker's expert (token_exchange) or its own T rows over P experts.
      const double task = 4.0 * (std::string(name) == "data_centric" ? T / P : T) * H * F;
      const double tasks = std::string(name) == "data_centric" ? P : 1;
      QCOMPARE(c.compute_seconds, tasks * task / (cluster.device_flops() * cluster.efficiency_at(task)));
      QVERIFY(n == 1 ? c.machine.inter == 0 : c.comm_seconds > 0);
    }
  }

  // One forward of an EP group over the whole cluster, experts = devices, 4096 tokens x top 2,
  // H = 1024: expert_centric sends 2 x 8192/P rows of 4 KiB to every peer (2 messages each).
  void janus_and_johnny_seconds() {
    const CostInputs load{4096, 2};
    {  // janus: 4 x 8, NVSwitch 300 GB/s 2 us (the PCIe pair has no own link), a 25 GB/s NIC per 2 GPUs, 5 us.
      const ClusterModel c = sample_cluster("janus.toml");
      const double per_peer = 2.0 * 8192 / 32 * 4096;
      const double intra = 14 * 2e-6 + 7 * per_peer / 300e9, inter = 48 * 5e-6 + 24 * per_peer / 12.5e9;
      const StrategyCost ec = make_strategy("expert_centric")->predict(load, block(32, 1024, 4096, all_ranks(32)), c);
      QCOMPARE(ec.rank.intra, 7 * per_peer);
      QCOMPARE(ec.comm_seconds, std::max(intra, inter));
    }
    {  // johnny: 2 x 8, PCIe pair 12 GB/s 3 us, across switches 8 GB/s 5 us, one 6.25 GB/s NIC per 8 GPUs.
      const ClusterModel c = sample_cluster("fastermoe_johnny.toml");
      const double per_peer = 2.0 * 8192 / 16 * 4096;
      const double pair = 2 * 3e-6 + per_peer / 12e9, intra = 12 * 5e-6 + 6 * per_peer / 8e9;
      const double inter = 16 * 5e-6 + 8 * per_peer / (6.25e9 / 8);
      const StrategyCost ec = make_strategy("expert_centric")->predict(load, block(16, 1024, 4096, all_ranks(16)), c);
      QVERIFY(inter > intra && intra > pair);
      QCOMPARE(ec.comm_seconds, inter);
      // Only intra-node links in the group of one node's ranks: the slower intra link bounds.
      const StrategyCost node = make_strategy("expert_centric")
                                    ->predict(load, block(8, 1024, 4096, {0, 1, 2, 3, 4, 5, 6, 7}), c);
      const double per_local = 2.0 * 8192 / 8 * 4096;
      QCOMPARE(node.rank.inter, 0.0);
      QCOMPARE(node.comm_seconds, 12 * 5e-6 + 6 * per_local / 8e9);
    }
  }

  void bad_blocks() {
    const auto ec = make_strategy("expert_centric");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ec->predict({8, 1}, block(6, 8, 32, {0, 1, 2, 3}), two_by_two()));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             make_strategy("data_centric")->predict({8, 1}, block(2, 8, 32, {0, 1, 2, 3}), two_by_two()));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, ec->predict({8, 1}, block(2, 8, 32, {0, 9}), two_by_two()));
  }
};

QTEST_GUILESS_MAIN(TestStrategyPredict)
#include "tst_strategy_predict.moc"
