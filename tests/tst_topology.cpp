// ctest-labels: unit
// dist/: Topology (virtual blocks, host-name detection, resolution against the config),
// TrafficMeter (per peer, per link class, thread safety) and ProcessGroups over a one-rank
// LocalCommunicator. Multi-rank groups: tst_groups_mpi; the layout itself: tst_parallel_layout.
#include <QtTest>

#include <thread>

#include "moebench/dist/device_sharing.h"
#include "moebench/dist/local_communicator.h"
#include "moebench/dist/process_groups.h"
#include "moebench/dist/topology.h"
#include "moebench/dist/traffic_meter.h"
#include "test_support.h"

using namespace moebench;
using namespace Qt::StringLiterals;

namespace {
std::vector<std::string> to_hosts(const QStringList& l) {
  std::vector<std::string> out;
  for (const QString& s : l) out.push_back(s.toStdString());
  return out;
}
}  // namespace

class TestTopology : public QObject {
  Q_OBJECT

 private slots:
  void virtual_blocks_data() {
    QTest::addColumn<int>("nodes");
    QTest::addColumn<int>("per_node");
    QTest::newRow("1x1") << 1 << 1;
    QTest::newRow("1x4") << 1 << 4;
    QTest::newRow("2x2") << 2 << 2;
    QTest::newRow("4x1") << 4 << 1;
    QTest::newRow("2x4") << 2 << 4;
  }
  void virtual_blocks() {
    QFETCH(int, nodes);
    QFETCH(int, per_node);
    const Topology t = Topology::virtual_blocks(nodes, per_node);
    QCOMPARE(t.world_size(), nodes * per_node);
    QCOMPARE(t.nodes(), nodes);
    QCOMPARE(t.devices_per_node(), per_node);
    QVERIFY(t.is_virtual());
    for (int r = 0; r < t.world_size(); ++r) {
      QCOMPARE(t.node_of(r), r / per_node);
      QCOMPARE(t.local_index(r), r % per_node);
      QCOMPARE(t.rank_at(t.node_of(r), t.local_index(r)), r);
      for (int q = 0; q < t.world_size(); ++q) {
        const LinkClass expected = q == r ? LinkClass::self
                                   : q / per_node == r / per_node ? LinkClass::intra_node
                                                                  : LinkClass::inter_node;
        QCOMPARE(t.link(r, q), expected);
      }
    }
  }

  void describe_and_names() {
    QCOMPARE(Topology::virtual_blocks(2, 2).describe(), std::string("2 nodes x 2 devices (virtual)"));
    QCOMPARE(Topology::virtual_blocks(1, 1).describe(), std::string("1 node x 1 device (virtual)"));
    QCOMPARE(Topology::from_hostnames({"a", "b"}).describe(), std::string("2 nodes x 1 device (detected)"));
    QCOMPARE(std::string(link_class_name(LinkClass::self)), std::string("self"));
    QCOMPARE(std::string(link_class_name(LinkClass::intra_node)), std::string("intra_node"));
    QCOMPARE(std::string(link_class_name(LinkClass::inter_node)), std::string("inter_node"));
  }

  void bad_shapes_throw() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Topology::virtual_blocks(0, 4));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Topology::virtual_blocks(2, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Topology::from_hostnames({}));
    const Topology t = Topology::virtual_blocks(2, 2);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, t.rank_at(2, 0));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, t.rank_at(0, 2));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, t.node_of(4));
  }

  void from_hostnames_blocks() {
    const Topology t = Topology::from_hostnames({"n0", "n0", "n1", "n1"});
    QVERIFY(!t.is_virtual());
    QCOMPARE(t.nodes(), 2);
    QCOMPARE(t.devices_per_node(), 2);
    QCOMPARE(t.world_size(), 4);
    const int node[] = {0, 0, 1, 1}, local[] = {0, 1, 0, 1};
    for (int r = 0; r < 4; ++r) {
      QCOMPARE(t.node_of(r), node[r]);
      QCOMPARE(t.local_index(r), local[r]);
      QCOMPARE(t.rank_at(node[r], local[r]), r);
    }
    QCOMPARE(t.link(0, 1), LinkClass::intra_node);
    QCOMPARE(t.link(1, 2), LinkClass::inter_node);
  }

  void from_hostnames_interleaved() {
    // Round-robin placement (mpirun --map-by node): nodes numbered by first appearance.
    const Topology t = Topology::from_hostnames({"beta", "alpha", "beta", "alpha", "beta", "alpha"});
    QCOMPARE(t.nodes(), 2);
    QCOMPARE(t.devices_per_node(), 3);
    const int node[] = {0, 1, 0, 1, 0, 1}, local[] = {0, 0, 1, 1, 2, 2};
    for (int r = 0; r < 6; ++r) {
      QCOMPARE(t.node_of(r), node[r]);
      QCOMPARE(t.local_index(r), local[r]);
      QCOMPARE(t.rank_at(node[r], local[r]), r);
    }
    QCOMPARE(t.link(0, 2), LinkClass::intra_node);
    QCOMPARE(t.link(0, 1), LinkClass::inter_node);
    QCOMPARE(t.link(3, 3), LinkClass::self);
  }

  void from_hostnames_uneven_nodes_throw() {
    const QString msg = test::error_message<std::runtime_error>([] { Topology::from_hostnames({"a", "a", "b"}); });
    QVERIFY2(msg.contains(u"2 hosts with 2, 1 ranks"_s), qPrintable(msg));
  }

  void resolve_topology_data() {
    QTest::addColumn<int>("nodes");
    QTest::addColumn<int>("per_node");
    QTest::addColumn<QStringList>("hosts");
    QTest::addColumn<QString>("expected");  // describe() on success, else a substring of the error
    QTest::addColumn<bool>("ok");
    const QStringList one4 = {u"h"_s, u"h"_s, u"h"_s, u"h"_s};
    QTest::newRow("single host, 1 node") << 1 << 4 << one4 << u"1 node x 4 devices (virtual)"_s << true;
    QTest::newRow("single host, virtual 2x2") << 2 << 2 << one4 << u"2 nodes x 2 devices (virtual)"_s << true;
    QTest::newRow("single host, virtual 4x1") << 4 << 1 << one4 << u"4 nodes x 1 device (virtual)"_s << true;
    QTest::newRow("single rank") << 1 << 1 << QStringList{u"h"_s} << u"1 node x 1 device (virtual)"_s << true;
    QTest::newRow("two hosts match") << 2 << 2 << QStringList{u"a"_s, u"a"_s, u"b"_s, u"b"_s}
                                     << u"2 nodes x 2 devices (detected)"_s << true;
    QTest::newRow("two hosts interleaved") << 2 << 2 << QStringList{u"a"_s, u"b"_s, u"a"_s, u"b"_s}
                                           << u"2 nodes x 2 devices (detected)"_s << true;
    QTest::newRow("single host, wrong rank count")
        << 2 << 4 << one4 << u"config says 2 nodes x 4 devices = 8 ranks, the launch has 4 ranks on one host"_s << false;
    QTest::newRow("uneven hosts")
        << 2 << 4 << QStringList{u"a"_s, u"a"_s, u"a"_s, u"a"_s, u"b"_s, u"b"_s, u"b"_s, u"b"_s, u"c"_s, u"c"_s}
        << u"config says 2 nodes x 4 devices, the launch has 3 hosts with 4, 4, 2 ranks"_s << false;
    QTest::newRow("host count differs")
        << 2 << 2 << QStringList{u"a"_s, u"b"_s, u"c"_s, u"d"_s}
        << u"config says 2 nodes x 2 devices, the launch has 4 hosts with 1, 1, 1, 1 ranks"_s << false;
    QTest::newRow("devices differ")
        << 2 << 1 << QStringList{u"a"_s, u"a"_s, u"b"_s, u"b"_s}
        << u"config says 2 nodes x 1 device, the launch has 2 hosts with 2, 2 ranks"_s << false;
    QTest::newRow("zero nodes") << 0 << 4 << one4 << u"at least 1"_s << false;
  }
  void resolve_topology() {
    QFETCH(int, nodes);
    QFETCH(int, per_node);
    QFETCH(QStringList, hosts);
    QFETCH(QString, expected);
    QFETCH(bool, ok);
    const auto h = to_hosts(hosts);
    if (ok) {
      const Topology t = moebench::resolve_topology(nodes, per_node, h);
      QCOMPARE(QString::fromStdString(t.describe()), expected);
      QCOMPARE(t.world_size(), (int)h.size());
    } else {
      const QString msg = test::error_message<std::runtime_error>([&] { moebench::resolve_topology(nodes, per_node, h); });
      QVERIFY2(msg.contains(expected), qPrintable(msg));
    }
  }

  void traffic_meter_per_peer_and_link_class() {
    TrafficMeter m(1, Topology::virtual_blocks(2, 2));  // rank 1 on node 0 with rank 0
    QCOMPARE(m.rank(), 1);
    QCOMPARE(m.topology().world_size(), 4);
    m.add(0, 100);
    m.add(2, 50);
    m.add(3, 7);
    m.add(3, 3);
    m.add(1, 1000);  // self: a copy, not traffic
    QCOMPARE(m.bytes_to(0), uint64_t(100));
    QCOMPARE(m.bytes_to(1), uint64_t(0));
    QCOMPARE(m.bytes_to(2), uint64_t(50));
    QCOMPARE(m.bytes_to(3), uint64_t(10));
    QCOMPARE(m.bytes(LinkClass::self), uint64_t(0));
    QCOMPARE(m.bytes(LinkClass::intra_node), uint64_t(100));
    QCOMPARE(m.bytes(LinkClass::inter_node), uint64_t(60));
    QCOMPARE(m.total(), uint64_t(160));
    QCOMPARE(m.per_peer(), (std::vector<uint64_t>{100, 0, 50, 10}));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, m.add(4, 1));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, m.add(-1, 1));
    m.reset();
    QCOMPARE(m.total(), uint64_t(0));
    QCOMPARE(m.per_peer(), (std::vector<uint64_t>(4, 0)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, TrafficMeter(4, Topology::virtual_blocks(2, 2)));
  }

  void traffic_meter_detected_topology() {
    // Interleaved hosts: rank 0 shares a node with rank 2 only.
    TrafficMeter m(0, Topology::from_hostnames({"a", "b", "a", "b"}));
    for (int p = 0; p < 4; ++p) m.add(p, 1u << p);
    QCOMPARE(m.bytes(LinkClass::intra_node), uint64_t(4));
    QCOMPARE(m.bytes(LinkClass::inter_node), uint64_t(2 + 8));
  }

  void traffic_meter_concurrent_add() {
    TrafficMeter m(0, Topology::virtual_blocks(2, 2));
    constexpr int kAdds = 20000;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&m, t] {
        for (int i = 0; i < kAdds; ++i) m.add(i % 4, uint64_t(t + 1));
      });
    for (auto& th : threads) th.join();
    // Each thread adds t+1 bytes kAdds/4 times to every peer: per peer (1+2+3+4) * kAdds/4.
    const uint64_t per_peer = uint64_t(10) * kAdds / 4;
    QCOMPARE(m.per_peer(), (std::vector<uint64_t>{0, per_peer, per_peer, per_peer}));
    QCOMPARE(m.bytes(LinkClass::intra_node), per_peer);
    QCOMPARE(m.bytes(LinkClass::inter_node), 2 * per_peer);
    QCOMPARE(m.total(), 3 * per_peer);
  }

  void process_groups_on_one_rank() {
    LocalCommunicator world;
    ProcessGroups g(world, ParallelLayout{});
    QCOMPARE(&g.world(), static_cast<Communicator*>(&world));
    QCOMPARE(g.dp_size(), 1);
    QCOMPARE(g.ep_size(), 1);
    for (Communicator* c : {&g.dp(), &g.ep(), &g.expert_dp(), &g.tp(), &g.pp()}) {
      QCOMPARE(c->size(), 1);
      QCOMPARE(c->rank(), 0);
      QCOMPARE(c->world_rank(0), 0);
    }
    QCOMPARE(g.describe(), std::string("world 1 = pp 1 x dp 1 x tp 1; ep 1, expert-dp 1"));
    float x = 2.5f;
    g.dp().all_reduce(&x, 1, DType::f32);
    QCOMPARE(x, 2.5f);
  }

  void process_groups_reject_a_layout_of_another_world() {
    LocalCommunicator world;
    const QString msg = test::error_message<std::invalid_argument>(
        [&] { ProcessGroups g(world, ParallelLayout(ParallelSizes{.world = 2, .tp = 2})); });
    QVERIFY2(msg.contains(u"the layout (world 2 = pp 1 x dp 1 x tp 2; ep 1, expert-dp 1) is for 2 ranks, the world has 1"_s),
             qPrintable(msg));
  }

  // Two ranks of one host on one GPU are told apart (NcclCommunicator then gives them
  // distinct NCCL host identities); the same device index on another host is no sharing.
  void ranks_sharing_a_gpu_are_found() {
    const uint64_t a = host_identity("node-a"), b = host_identity("node-b");
    QVERIFY(a != b);
    QCOMPARE(host_identity("node-a"), a);
    QCOMPARE(ranks_sharing_a_device({a, a, b, b}, {0, 1, 0, 1}), (std::vector<bool>{false, false, false, false}));
    QCOMPARE(ranks_sharing_a_device({a, a, a, b}, {0, 0, 1, 0}), (std::vector<bool>{true, true, false, false}));
    QCOMPARE(ranks_sharing_a_device({a, a, a}, {0, 0, 0}), (std::vector<bool>{true, true, true}));
    QCOMPARE(ranks_sharing_a_device({a}, {0}), (std::vector<bool>{false}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ranks_sharing_a_device({a, b}, {0}));
  }
};

QTEST_GUILESS_MAIN(TestTopology)
#include "tst_topology.moc"
