// ClusterNetwork: routes over directed links and the FIFO link model, against hand computations.
#include <QtTest>

#include "moebench/perf/cluster_network.h"

using namespace moebench;

namespace {

// 2 nodes x 4 devices, a NIC per 2 devices; intra 100 B/s 1 s, inter 10 B/s 5 s.
ClusterSpec small_spec() {
  ClusterSpec s;
  s.name = "small";
  s.nodes = 2;
  s.devices_per_node = 4;
  s.intra = {100.0, 1.0};
  s.inter = {10.0, 5.0};
  s.devices_per_nic = 2;
  return s;
}

}  // namespace

class TestClusterNetwork : public QObject {
  Q_OBJECT
 private slots:
  void routes() {
    const ClusterNetwork net{ClusterModel(small_spec())};
    // 8 dev_out + 8 dev_in + 4 nic_out + 4 nic_in.
    QCOMPARE(net.link_count(), 24);
    const Route self = net.route(3, 3);
    QCOMPARE(self.count, 0);
    const Route intra = net.route(1, 2);
    QCOMPARE(intra.count, 2);
    QCOMPARE(net.link(intra.links[0]).name, std::string("dev_out 1"));
    QCOMPARE(net.link(intra.links[1]).name, std::string("dev_in 2"));
    QCOMPARE(intra.latency, 1.0);
    QCOMPARE(intra.bandwidth, 100.0);
    const Route inter = net.route(1, 6);  // NIC 0 (devices 0, 1) -> NIC 3 (devices 6, 7)
    QCOMPARE(inter.count, 2);
    QCOMPARE(net.link(inter.links[0]).name, std::string("nic_out 0"));
    QCOMPARE(net.link(inter.links[1]).name, std::string("nic_in 3"));
    QCOMPARE(inter.bandwidth, 10.0);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, net.route(0, 8));
  }

  void spine_and_pcie_pairs() {
    ClusterSpec s = small_spec();
    s.nodes = 4;
    s.nodes_per_switch = 2;
    s.spine = {4.0, 3.0};
    s.pcie_switch_pairs = {0, 1};
    s.pcie_pair = {50.0, 0.5};
    const ClusterNetwork net{ClusterModel(s)};
    const Route across = net.route(0, 12);  // node 0 (switch 0) -> node 3 (switch 1)
    QCOMPARE(across.count, 4);
    QCOMPARE(net.link(across.links[1]).name, std::string("up 0"));
    QCOMPARE(net.link(across.links[2]).name, std::string("down 1"));
    QCOMPARE(across.latency, 8.0);   // NIC 5 s + spine 3 s
    QCOMPARE(across.bandwidth, 4.0);
    const Route same_switch = net.route(0, 4);
    QCOMPARE(same_switch.count, 2);
    const Route pair = net.route(4, 5);  // node 1's devices 0 and 1 share a switch
    QCOMPARE(pair.count, 1);
    QCOMPARE(net.link(pair.links[0]).name, std::string("pcie 4->5"));
    QCOMPARE(pair.latency, 0.5);
  }

  void fifo_contention() {
    const ClusterNetwork net{ClusterModel(small_spec())};
    std::vector<double> free_at((size_t)net.link_count(), 0.0);
    // Alone: 5 s latency + 100 B / 10 B/s.
    TransferTiming a = net.reserve(free_at.data(), 0, 4, 100.0, 0.0);
    QCOMPARE(a.start, 0.0);
    QCOMPARE(a.arrival, 15.0);
    // Device 1 shares NIC 0: it waits until the NIC is free at 10 s (not the latency).
    TransferTiming b = net.reserve(free_at.data(), 1, 6, 50.0, 2.0);
    QCOMPARE(b.start, 10.0);
    QCOMPARE(b.arrival, 20.0);
    // Device 2 has its own NIC (1), free at once, but node 1's NIC 2 (devices 4, 5) receives a's
    // bytes until 10 s: the transfer waits there (the switch buffers it), 10 + 1 + 5 = 16.
    TransferTiming c = net.reserve(free_at.data(), 2, 5, 10.0, 3.0);
    QCOMPARE(c.start, 3.0);
    QCOMPARE(c.arrival, 16.0);
    // Device 3: NIC 1 out free again at 4 s (c held it 3-4 s); device 7's NIC 3 in is held by b
    // until 15 s: 15 + 1 + 5 = 21.
    TransferTiming g = net.reserve(free_at.data(), 3, 7, 10.0, 0.0);
    QCOMPARE(g.start, 4.0);
    QCOMPARE(g.arrival, 21.0);
    // A busy second link: the transfer waits there while the first link is free again.
    std::vector<double> fresh((size_t)net.link_count(), 0.0);
    fresh[(size_t)net.route(0, 4).links[1]] = 8.0;  // NIC 2 in busy until 8 s
    TransferTiming h = net.reserve(fresh.data(), 0, 4, 100.0, 0.0);
    QCOMPARE(h.start, 0.0);
    QCOMPARE(h.arrival, 18.0 + 5.0);  // NIC 2 in from 8 s for 10 s
    // Intra-node traffic does not touch the NICs; the reverse direction is another link.
    TransferTiming d = net.reserve(free_at.data(), 4, 0, 100.0, 0.0);
    QCOMPARE(d.start, 0.0);
    TransferTiming e = net.reserve(free_at.data(), 0, 1, 200.0, 0.0, 3);
    QCOMPARE(e.start, 0.0);
    QCOMPARE(e.arrival, 3 * 1.0 + 2.0);  // three messages' latency + 200 B / 100 B/s
    // Device 0's port is busy until 2 s: its next intra transfer queues behind.
    TransferTiming f = net.reserve(free_at.data(), 0, 2, 100.0, 0.5);
    QCOMPARE(f.start, 2.0);
    QCOMPARE(f.arrival, 4.0);
  }

  // A measured rate by message size: the same bytes in many small messages hold the NIC longer
  // than in one large message, and the cap reaches every link of the route.
  void message_size_rates() {
    ClusterSpec s = small_spec();
    s.inter_message_bw = {{10.0, 2.0}, {100.0, 8.0}};  // 2 B/s at 10 B messages, 8 B/s at 100 B
    const ClusterNetwork net{ClusterModel(s)};
    std::vector<double> free_at((size_t)net.link_count(), 0.0);
    TransferTiming one = net.reserve(free_at.data(), 0, 4, 100.0, 0.0);  // one 100 B message
    QCOMPARE(one.arrival, 100.0 / 8.0 + 5.0);
    QCOMPARE(free_at[(size_t)net.route(0, 4).links[1]], 100.0 / 8.0);    // NIC 2 in held as long
    std::vector<double> fresh((size_t)net.link_count(), 0.0);
    TransferTiming ten = net.reserve(fresh.data(), 0, 4, 100.0, 0.0, 10);  // ten 10 B messages
    QCOMPARE(ten.arrival, 100.0 / 2.0 + 10 * 5.0);
    // Intra-node traffic has no curve here: the port's 100 B/s.
    TransferTiming intra = net.reserve(fresh.data(), 0, 1, 100.0, 0.0);
    QCOMPARE(intra.arrival, 1.0 + 1.0);
  }
};

QTEST_APPLESS_MAIN(TestClusterNetwork)
#include "tst_cluster_network.moc"
