// ctest-labels: unit
// FasterMoE's performance model (perf/fastermoe_model.h; fastermoe-ppopp22.txt §3.1-3.2, §4.1):
// eq. 1 with an efficiency curve, eq. 2's per-link traffic of all-to-all-v, ring all-reduce and
// ring broadcast / reduce on a 2 x 2 cluster, Algorithm 1 (dynamic shadowing) on hand-computed
// cases, and eq. 9 / 10 tied to eq. 7 / 8 on random cases. Every expected number is worked out
// by hand in the comment next to it.
#include <QtTest>

#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>

#include "moebench/perf/cluster_model.h"
#include "moebench/perf/cluster_network.h"
#include "moebench/perf/fastermoe_model.h"

using namespace moebench;

namespace {

bool close(double a, double b, double rel = 1e-12) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }

// 2 nodes x 2 devices, one NIC per node: intra 100 GB/s, NIC 10 GB/s (one direction each).
ClusterModel two_by_two() {
  ClusterSpec s;
  s.nodes = 2;
  s.devices_per_node = 2;
  s.intra = {100e9, 1e-6};
  s.inter = {10e9, 2e-6};
  return ClusterModel(s);
}

int link_id(const ClusterNetwork& net, const std::string& name) {
  for (int l = 0; l < net.link_count(); ++l)
    if (net.link(l).name == name) return l;
  return -1;
}

// flops 1e12 FLOP/s, w_net 10 GB/s, fp32; T[s][e] = `hot` for e in hot_experts, else `cold`.
ShadowModel shadow_model(int P, int E, double H, double F, double cold, double hot, std::vector<int> hot_experts) {
  ShadowModel m;
  m.P = P;
  m.E = E;
  m.H = H;
  m.F = F;
  m.flops = 1e12;
  m.w_net = 1e10;
  m.T.assign((size_t)P * E, cold);
  for (int s = 0; s < P; ++s)
    for (int e : hot_experts) m.T[(size_t)s * E + e] = hot;
  return m;
}

std::vector<double> vec(const QList<double>& l) { return std::vector<double>(l.begin(), l.end()); }

struct BadInput {
  const char* name;
  const char* field;  // the message must contain it
  std::function<void()> call;
};

const std::vector<BadInput>& bad_inputs() {
  static const std::vector<BadInput> rows = [] {
    const ShadowModel ok = shadow_model(2, 2, 16, 64, 10, 10, {});
    auto with = [ok](std::function<void(ShadowModel&)> f) { ShadowModel m = ok; f(m); return m; };
    static const ClusterModel cluster = two_by_two();
    static const ClusterNetwork net(cluster);
    return std::vector<BadInput>{
        {"T of the wrong size", "ShadowModel.T", [=] { worker_loads(with([](ShadowModel& m) { m.T.pop_back(); })); }},
        {"E not divisible by P", "ShadowModel.E", [=] { worker_loads(with([](ShadowModel& m) { m.E = 3; m.T.assign(6, 1); })); }},
        {"negative tokens", "ShadowModel.T[1 * E + 0]", [=] { select_shadow_experts(with([](ShadowModel& m) { m.T[2] = -1; })); }},
        {"flops 0", "ShadowModel.flops", [=] { select_shadow_experts(with([](ShadowModel& m) { m.flops = 0; })); }},
        {"w_net negative", "ShadowModel.w_net", [=] { lat_imbl(10, with([](ShadowModel& m) { m.w_net = -1; })); }},
        {"w_net 0 in eq. 10", "ShadowModel.w_net", [=] { shadow_condition_10(1, 10, 5, with([](ShadowModel& m) { m.w_net = 0; })); }},
        {"negative H", "ShadowModel.H", [=] { shadow_condition_9(1, 10, with([](ShadowModel& m) { m.H = -1; })); }},
        {"max_shadows -2", "ShadowModel.max_shadows", [=] { select_shadow_experts(with([](ShadowModel& m) { m.max_shadows = -2; })); }},
        {"negative r", "r = -1", [=] { lat_shadow(-1, 10, ok); }},
        {"negative load", "tokens_per_worker[1]", [] { fastermoe_comp_seconds({1, -2}, 8, 32, cluster); }},
        {"more workers than devices", "tokens_per_worker", [] { fastermoe_comp_seconds({1, 1, 1, 1, 1}, 8, 32, cluster); }},
        {"a2a bytes of the wrong size", "bytes", [] { LinkTraffic(net).add_all_to_all_v({0, 1}, {0, 1, 2}); }},
        {"negative bytes", "bytes", [] { LinkTraffic(net).add(0, 1, -5); }},
        {"broadcast root outside", "root", [] { LinkTraffic(net).add_ring_broadcast({0, 1, 2}, 3, 8); }},
        {"reduce root outside", "root", [] { LinkTraffic(net).add_ring_reduce({0, 1, 2}, -1, 8); }},
        {"negative S", "S = -1", [] { LinkTraffic(net).add_ring_all_reduce({0, 1}, -1); }},
    };
  }();
  return rows;
}

}  // namespace

class TestFasterMoeModel : public QObject {
  Q_OBJECT

 private slots:
  // eq. 1 on 2 nodes x 2 devices at 1 TFLOP/s. H = 1000, F = 4000: 4 H F = 1.6e7 FLOPs a token.
  // Curve: efficiency 0.5 at 1e9 FLOPs, 0.9 at 1e11 (linear in log10). Loads 62.5, 625, 0, 300
  // tokens = 1e9, 1e10, 0, 4.8e9 FLOPs. Busiest: 1e10 FLOPs, halfway in log10 -> 0.7:
  // 1e10 / 0.7e12 = 1/70 s (worker 3: 4.8e9 / (1e12 x (0.5 + 0.2 log10 4.8)) = 7.54 ms; worker
  // 0: 1e9 / 0.5e12 = 2 ms). Without the curve: 1e10 / 1e12 = 10 ms.
  void eq1_busiest_worker_data() {
    QTest::addColumn<bool>("curve");
    QTest::addColumn<QList<double>>("loads");
    QTest::addColumn<double>("seconds");
    QTest::newRow("curve, 4 workers") << true << QList<double>{62.5, 625, 0, 300} << 1.0 / 70;
    QTest::newRow("curve, 2 workers") << true << QList<double>{625, 62.5} << 1.0 / 70;
    QTest::newRow("no curve") << false << QList<double>{62.5, 625, 0, 300} << 0.01;
    QTest::newRow("no tokens") << true << QList<double>{0, 0} << 0.0;
  }
  void eq1_busiest_worker() {
    QFETCH(bool, curve);
    QFETCH(QList<double>, loads);
    QFETCH(double, seconds);
    ClusterSpec s = two_by_two().spec();
    s.device_flops = 1e12;
    if (curve) s.efficiency = {{1e9, 0.5}, {1e11, 0.9}};
    const double got = fastermoe_comp_seconds(vec(loads), 1000, 4000, ClusterModel(s));
    QVERIFY2(close(got, seconds), qPrintable(QString::number(got, 'g', 17)));
  }

  // eq. 2, all-to-all-v on 2 x 2 (ranks 0, 1 on node 0; 2, 3 on node 1), MB:
  //   from 0: [ 0, 5, 30, 10]   across: 30 + 10 + 20 + 4 = 64 MB on nic_out 0 and nic_in 1
  //   from 1: [ 2, 0, 20,  4]
  //   from 2: [ 1, 3,  0,  6]   across: 1 + 3 + 2 + 1 = 7 MB on nic_out 1 and nic_in 0
  //   from 3: [ 2, 1,  8,  0]
  // Intra-node: dev_out 0 / dev_in 1 = 5, dev_out 1 / dev_in 0 = 2, dev_out 2 / dev_in 3 = 6,
  // dev_out 3 / dev_in 2 = 8 MB. Busiest: 64 MB / 10 GB/s = 6.4 ms on nic_out 0 (nic_in 1
  // carries the same 64 MB at the same bandwidth; ties go to the lowest id, nic_out before nic_in).
  void all_to_all_v_busiest_nic() {
    const ClusterNetwork net(two_by_two());
    LinkTraffic t(net);
    QCOMPARE(t.busiest_link(), -1);
    QCOMPARE(t.seconds(), 0.0);
    const double MB = 1e6;
    t.add_all_to_all_v({0, 1, 2, 3}, {0, 5 * MB, 30 * MB, 10 * MB, 2 * MB, 0, 20 * MB, 4 * MB,
                                      1 * MB, 3 * MB, 0, 6 * MB, 2 * MB, 1 * MB, 8 * MB, 0});
    QCOMPARE(net.link(t.busiest_link()).name, std::string("nic_out 0"));
    QVERIFY2(close(t.seconds(), 6.4e-3), qPrintable(QString::number(t.seconds(), 'g', 17)));
    const std::vector<std::pair<std::string, double>> want = {
        {"nic_out 0", 64}, {"nic_in 1", 64}, {"nic_out 1", 7}, {"nic_in 0", 7},
        {"dev_out 0", 5},  {"dev_in 1", 5},  {"dev_out 1", 2}, {"dev_in 0", 2},
        {"dev_out 2", 6},  {"dev_in 3", 6},  {"dev_out 3", 8}, {"dev_in 2", 8}};
    QCOMPARE((int)t.bytes().size(), net.link_count());
    for (const auto& [name, mb] : want) QVERIFY2(close(t.bytes()[(size_t)link_id(net, name)], mb * MB), name.c_str());
    t.add(1, 1, 1e9);  // to itself: no link
    QVERIFY(close(t.seconds(), 6.4e-3));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, t.add(0, 4, 1));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, t.add_all_to_all_v({0, 7}, {0, 1, 1, 0}));
  }

  // Ring all-reduce of S = 8 MB over n = 4: 2 (n-1)/n S = 12 MB on every hop.
  //   ring 0,1,2,3: hops 0->1 (dev_out 0, dev_in 1), 1->2 (nic_out 0, nic_in 1),
  //                 2->3 (dev_out 2, dev_in 3), 3->0 (nic_out 1, nic_in 0): 12 MB each, the
  //                 other four links 0; 12 MB / 10 GB/s = 1.2 ms.
  //   ring 0,2,1,3: every hop crosses nodes, each NIC direction twice: 24 MB, 2.4 ms, devs 0.
  void ring_all_reduce_data() {
    QTest::addColumn<QList<int>>("ring");
    QTest::addColumn<QStringList>("loaded");
    QTest::addColumn<double>("mb");
    QTest::addColumn<double>("seconds");
    QTest::newRow("node order") << QList<int>{0, 1, 2, 3}
                                << QStringList{"dev_out 0", "dev_in 1", "nic_out 0", "nic_in 1", "dev_out 2", "dev_in 3", "nic_out 1", "nic_in 0"}
                                << 12.0 << 1.2e-3;
    QTest::newRow("crossing") << QList<int>{0, 2, 1, 3} << QStringList{"nic_out 0", "nic_in 1", "nic_out 1", "nic_in 0"} << 24.0 << 2.4e-3;
  }
  void ring_all_reduce() {
    QFETCH(QList<int>, ring);
    QFETCH(QStringList, loaded);
    QFETCH(double, mb);
    QFETCH(double, seconds);
    const ClusterNetwork net(two_by_two());
    LinkTraffic t(net);
    t.add_ring_all_reduce(std::vector<int>(ring.begin(), ring.end()), 8e6);
    for (int l = 0; l < net.link_count(); ++l) {
      const bool on = loaded.contains(QString::fromStdString(net.link(l).name));
      QVERIFY2(close(t.bytes()[(size_t)l], on ? mb * 1e6 : 0.0), net.link(l).name.c_str());
    }
    QVERIFY(close(t.seconds(), seconds));
  }

  // Ring 0,1,2,3, root 1, S = 8 MB, S on each of the n-1 = 3 hops:
  //   broadcast 1->2 (nic_out 0, nic_in 1), 2->3 (dev_out 2, dev_in 3), 3->0 (nic_out 1, nic_in 0);
  //             nothing on the hop into the root, 0->1 (dev_out 0, dev_in 1).
  //   reduce    2->3, 3->0, 0->1 (dev_out 0, dev_in 1); nothing on 1->2 (nic_out 0, nic_in 1).
  // Both: 8 MB / 10 GB/s = 0.8 ms.
  void ring_broadcast_and_reduce_data() {
    QTest::addColumn<bool>("broadcast");
    QTest::addColumn<QStringList>("loaded");
    QTest::newRow("broadcast") << true << QStringList{"nic_out 0", "nic_in 1", "dev_out 2", "dev_in 3", "nic_out 1", "nic_in 0"};
    QTest::newRow("reduce") << false << QStringList{"dev_out 2", "dev_in 3", "nic_out 1", "nic_in 0", "dev_out 0", "dev_in 1"};
  }
  void ring_broadcast_and_reduce() {
    QFETCH(bool, broadcast);
    QFETCH(QStringList, loaded);
    const ClusterNetwork net(two_by_two());
    LinkTraffic t(net);
    if (broadcast) t.add_ring_broadcast({0, 1, 2, 3}, 1, 8e6);
    else t.add_ring_reduce({0, 1, 2, 3}, 1, 8e6);
    for (int l = 0; l < net.link_count(); ++l) {
      const bool on = loaded.contains(QString::fromStdString(net.link(l).name));
      QVERIFY2(t.bytes()[(size_t)l] == (on ? 8e6 : 0.0), net.link(l).name.c_str());
    }
    QVERIFY(close(t.seconds(), 0.8e-3));
  }

  // (a) Balanced: P = E = 4, H = 1024, F = 4096 (H F = 4194304), 100 tokens every pair: loads
  // 400. Shadowing expert 0 leaves it 100 and raises the others to 500:
  //   c = 12 x 500 x 4194304 / 1e12 + 4 x 4194304 x 4 / 1e10 = 25.17 + 6.71 = 31.88 ms
  //   > lat_imbl(400) = 12 x 400 x 4194304 / 1e12 + 4 x 400 x 1024 x 4 / 1e10 = 20.13 + 0.66 = 20.79 ms.
  void balanced_selects_nothing() {
    const ShadowModel m = shadow_model(4, 4, 1024, 4096, 100, 100, {});
    const ShadowSelection s = select_shadow_experts(m);
    QVERIFY(s.experts.empty());
    QCOMPARE(s.loads_before, std::vector<double>(4, 400));
    QCOMPARE(s.loads_after, s.loads_before);
    QVERIFY(close(s.seconds_before, 0.0207880192));
    QCOMPARE(s.seconds_after, s.seconds_before);
  }

  // (b) One hot expert, cheap parameters: P = E = 4, H = 16, F = 64 (H F = 1024), T[s][0] = 1000,
  // every other T[s][e] = 10. Loads 4000, 40, 40, 40.
  //   before: 12 x 4000 x 1024 / 1e12 + 4 x 4000 x 16 x 4 / 1e10 = 4.9152e-5 + 1.024e-4 = 1.51552e-4
  //   shadow 0: owner keeps T[0][0] = 1000, others 40 + 1000 = 1040:
  //     c = 12 x 1040 x 1024 / 1e12 + 2 x 2 x 1024 x 4 / 1e10 = 1.277952e-5 + 1.6384e-6 = 1.441792e-5: kept
  //   then expert 1 (40 tokens, lowest of the ties): loads 1010, 1010, 1050, 1050:
  //     c = 12 x 1050 x 1024 / 1e12 + 2 x 1.6384e-6 = 1.61792e-5 > 1.441792e-5: stop.
  // (c) Two hot experts (0 and 1): loads 4000, 4000, 40, 40.
  //   shadow 0: 1000, 5000, 1040, 1040 (the max rises, but eq. 7's token traffic goes):
  //     c = 12 x 5000 x 1024 / 1e12 + 1.6384e-6 = 6.30784e-5 < 1.51552e-4: kept
  //   shadow 1: its owner keeps 1000 of its 4000: 2000, 2000, 2040, 2040:
  //     c = 12 x 2040 x 1024 / 1e12 + 2 x 1.6384e-6 = 2.834432e-5: kept
  //   expert 2: 2010, 2010, 2010, 2050: c = 2.51904e-5 + 3 x 1.6384e-6 = 3.01056e-5: stop.
  //   With max_shadows = 1 the search ends after expert 0.
  // (d) E = 2 P: P = 2, E = 4, T[s] = [10, 1000, 10, 10]; worker 0 owns experts 0 and 1: loads
  //   2020, 40. before: 12 x 2020 x 1024 / 1e12 + 4 x 2020 x 64 / 1e10 = 2.482176e-5 + 5.1712e-5.
  //   shadow 1 (hot): 2020 - 1000 = 1020, 40 + 1000 = 1040: c = 1.441792e-5 as in (b): kept.
  //   expert 0 (the cold neighbour, 20 tokens): 1010, 1050: c = 1.61792e-5: stop.
  // Algorithm 1 on eq. 1-2 (what the strategy runs) on 2 nodes x 1 device, 1e12 FLOP/s, NICs
  // of 1e9 B/s; P = E = 2, H = 16, F = 64 (H F = 1024), 64-byte rows, 8192-byte experts.
  // Hot: T = [[10, 1000], [10, 1000]] (expert 1 on rank 1). Loads 20, 2000:
  //   before = 3 x 4 x 2000 x 1024 / 1e12 + 4 x (1000 x 64 B on the NIC 0 -> 1) / 1e9
  //          = 2.4576e-5 + 2.56e-4 = 2.80576e-4
  //   shadow 1: loads 1020, 1000; tokens 640 B (rank 1 -> 0); its broadcast (1 -> 0) and its
  //     reduce (0 -> 1) put 8192 B on each NIC:
  //     3 x 4 x 1020 x 1024 / 1e12 + 4 x 640 / 1e9 + 8192 / 1e9 = 2.328576e-5: kept
  //   then 0: loads 1010, 1010, no tokens, two experts' rings: 16384 B a NIC: 1.241088e-5 +
  //     1.6384e-5 = 2.879488e-5: stop.
  // Balanced, 100 everywhere: before = 3 x 4 x 200 x 1024 / 1e12 + 4 x 6400 / 1e9 = 2.80576e-5;
  //   shadow 0: loads 100, 300, 6400 B still 0 -> 1, 8192 B a NIC: 3.6864e-6 + 2.56e-5 +
  //   8.192e-6 = 3.74784e-5: nothing (eq. 8 as printed shadows it: 7.7824e-6 < its eq. 7).
  void topology_aware_selection() {
    ClusterSpec spec;
    spec.nodes = 2;
    spec.devices_per_node = 1;
    spec.device_flops = 1e12;
    spec.inter = {1e9, 0};
    const ClusterNetwork net{ClusterModel(spec)};
    ShadowModel m = shadow_model(2, 2, 16, 64, 10, 1000, {1});
    const ShadowSelection hot = select_shadow_experts(m, net, {0, 1});
    QCOMPARE(hot.experts, std::vector<int>{1});
    QVERIFY(close(hot.seconds_before, 2.80576e-4));
    QVERIFY(close(hot.seconds_after, 2.328576e-5));
    QCOMPARE(hot.loads_after, (std::vector<double>{1020, 1000}));
    m = shadow_model(2, 2, 16, 64, 100, 100, {});
    const ShadowSelection balanced = select_shadow_experts(m, net, {0, 1});
    QVERIFY(balanced.experts.empty());
    QVERIFY(close(balanced.seconds_before, 2.80576e-5));
    QCOMPARE(select_shadow_experts(m).experts, std::vector<int>{0});  // eq. 7-8 as printed
  }

  void select_shadow_experts_by_hand_data() {
    QTest::addColumn<int>("P");
    QTest::addColumn<int>("E");
    QTest::addColumn<QList<int>>("hot");
    QTest::addColumn<int>("max_shadows");
    QTest::addColumn<QList<int>>("experts");
    QTest::addColumn<QList<double>>("before");
    QTest::addColumn<QList<double>>("after");
    QTest::addColumn<double>("seconds_before");
    QTest::addColumn<double>("seconds_after");
    QTest::newRow("(b) one hot") << 4 << 4 << QList<int>{0} << -1 << QList<int>{0} << QList<double>{4000, 40, 40, 40}
                                 << QList<double>{1000, 1040, 1040, 1040} << 1.51552e-4 << 1.441792e-5;
    QTest::newRow("(c) two hot") << 4 << 4 << QList<int>{0, 1} << -1 << QList<int>{0, 1} << QList<double>{4000, 4000, 40, 40}
                                 << QList<double>{2000, 2000, 2040, 2040} << 1.51552e-4 << 2.834432e-5;
    QTest::newRow("(c) max_shadows 1") << 4 << 4 << QList<int>{0, 1} << 1 << QList<int>{0} << QList<double>{4000, 4000, 40, 40}
                                       << QList<double>{1000, 5000, 1040, 1040} << 1.51552e-4 << 6.30784e-5;
    QTest::newRow("(c) max_shadows 0") << 4 << 4 << QList<int>{0, 1} << 0 << QList<int>{} << QList<double>{4000, 4000, 40, 40}
                                       << QList<double>{4000, 4000, 40, 40} << 1.51552e-4 << 1.51552e-4;
    QTest::newRow("(d) E = 2P") << 2 << 4 << QList<int>{1} << -1 << QList<int>{1} << QList<double>{2020, 40}
                                << QList<double>{1020, 1040} << 2.482176e-5 + 5.1712e-5 << 1.441792e-5;
  }
  void select_shadow_experts_by_hand() {
    QFETCH(int, P);
    QFETCH(int, E);
    QFETCH(QList<int>, hot);
    QFETCH(int, max_shadows);
    QFETCH(QList<int>, experts);
    QFETCH(QList<double>, before);
    QFETCH(QList<double>, after);
    QFETCH(double, seconds_before);
    QFETCH(double, seconds_after);
    ShadowModel m = shadow_model(P, E, 16, 64, 10, 1000, std::vector<int>(hot.begin(), hot.end()));
    m.max_shadows = max_shadows;
    const ShadowSelection s = select_shadow_experts(m);
    QCOMPARE(s.experts, std::vector<int>(experts.begin(), experts.end()));
    QCOMPARE(s.loads_before, vec(before));
    QCOMPARE(s.loads_after, vec(after));
    QVERIFY2(close(s.seconds_before, seconds_before), qPrintable(QString::number(s.seconds_before, 'g', 17)));
    QVERIFY2(close(s.seconds_after, seconds_after), qPrintable(QString::number(s.seconds_after, 'g', 17)));
  }

  // (f) Realistic parameters, P = E = 4, H = 1024, F = 4096, T[s][0] = 1000, others 10: B = 4000
  // < r F = 4096, so eq. 9 fails and eq. 10 decides (B' = 1040 after shadowing expert 0):
  //   3 (B - B') F / (r F - B) = 3 x 2960 x 4096 / 96 = 378880 > P / W = 1e12 / (w_net / 4)
  //   <=> w_net > 4e12 / 378880 = 1.0557e7 B/s.
  //   10 GB/s: before 12 x 4000 x 4194304 / 1e12 + 4 x 4000 x 1024 x 4 / 1e10 = 0.201326592 + 0.0065536;
  //            after 12 x 1040 x 4194304 / 1e12 + 16 x 4194304 / 1e10 = 0.05234491392 + 0.0067108864.
  //   1 MB/s:  before 0.201326592 + 65.536 = 65.737 s < after 0.0523 + 67.109 = 67.161 s: nothing.
  void slow_network_selects_nothing_data() {
    QTest::addColumn<double>("w_net");
    QTest::addColumn<bool>("shadowed");
    QTest::addColumn<double>("seconds_before");
    QTest::newRow("10 GB/s") << 1e10 << true << 0.201326592 + 0.0065536;
    QTest::newRow("1 MB/s") << 1e6 << false << 0.201326592 + 65.536;
  }
  void slow_network_selects_nothing() {
    QFETCH(double, w_net);
    QFETCH(bool, shadowed);
    QFETCH(double, seconds_before);
    ShadowModel m = shadow_model(4, 4, 1024, 4096, 10, 1000, {0});
    m.w_net = w_net;
    QVERIFY(!shadow_condition_9(1, 4000, m));
    QCOMPARE(shadow_condition_10(1, 4000, 1040, m), shadowed);
    const ShadowSelection s = select_shadow_experts(m);
    QVERIFY(close(s.seconds_before, seconds_before));
    if (shadowed) {
      QCOMPARE(s.experts, std::vector<int>{0});
      QCOMPARE(s.loads_after, (std::vector<double>{1000, 1040, 1040, 1040}));
      QVERIFY(close(s.seconds_after, 0.05234491392 + 0.0067108864));
    } else {
      QVERIFY(s.experts.empty());
      QCOMPARE(s.loads_after, s.loads_before);
      QCOMPARE(s.seconds_after, s.seconds_before);
    }
  }

  // eq. 9: B_max > r F (F = 4096): 4000 no, 5000 with r = 1 yes, with r = 2 (8192) no.
  void condition_9_by_hand() {
    const ShadowModel m = shadow_model(4, 4, 1024, 4096, 10, 10, {});
    QVERIFY(!shadow_condition_9(1, 4000, m));
    QVERIFY(shadow_condition_9(1, 5000, m));
    QVERIFY(!shadow_condition_9(2, 5000, m));
  }

  // eq. 9 assumes shadowing does not raise the max load. P = E = 2, H = 16, F = 1,
  // T = [[5, 0], [5, 9]]: loads 10, 9; shadowing expert 0 gives 5, 14. eq. 9 holds (10 > 1),
  // but with a fast network (1 PB/s) compute decides:
  //   lat_imbl(10) = 12 x 10 x 16 / 1e12 + 4 x 10 x 16 x 4 / 1e15 = 1.92e-9 + 2.56e-12
  //   lat_shadow(1, 14) = 12 x 14 x 16 / 1e12 + 4 x 16 x 4 / 1e15 = 2.688e-9 + 2.56e-13: larger.
  void condition_9_with_a_raised_max() {
    ShadowModel m = shadow_model(2, 2, 16, 1, 0, 0, {});
    m.T = {5, 0, 5, 9};
    m.w_net = 1e15;
    QVERIFY(shadow_condition_9(1, 10, m));
    QVERIFY(!shadow_condition_10(1, 10, 14, m));
    QVERIFY(select_shadow_experts(m).experts.empty());
  }

  // (e) Random small cases, r = 1: Algorithm 1 shadows its first candidate exactly when eq. 9 or
  // eq. 10 holds, wherever shadowing does not raise the max load (the paper's assumption; see
  // condition_9_with_a_raised_max). Where it does, shadowing still implies eq. 9 or eq. 10.
  // The first candidate and the loads are recomputed here independently of the model.
  void random_first_shadow_matches_eq9_eq10() {
    std::mt19937 rng(20220402);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    int yes = 0, no = 0, raised = 0, by_10_alone = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      ShadowModel m;
      m.P = pick(2, 4);
      m.E = m.P * pick(1, 2);
      m.H = std::vector<double>{8, 16, 64}[(size_t)pick(0, 2)];
      m.F = pick(16, 8192);
      m.flops = 1e12;
      m.w_net = std::pow(10.0, pick(6, 11));
      m.max_shadows = 1;
      m.T.resize((size_t)m.P * m.E);
      const int hot = pick(0, m.E - 1), factor = pick(1, 20);
      for (int s = 0; s < m.P; ++s)
        for (int e = 0; e < m.E; ++e) m.T[(size_t)s * m.E + e] = pick(0, 200) * (e == hot ? factor : 1);
      const int per = m.E / m.P;
      std::vector<double> loads((size_t)m.P, 0.0), total((size_t)m.E, 0.0);
      for (int s = 0; s < m.P; ++s)
        for (int e = 0; e < m.E; ++e) {
          loads[(size_t)(e / per)] += m.T[(size_t)s * m.E + e];
          total[(size_t)e] += m.T[(size_t)s * m.E + e];
        }
      int first = 0;
      for (int e = 1; e < m.E; ++e)
        if (total[(size_t)e] > total[(size_t)first]) first = e;
      std::vector<double> after = loads;
      for (int s = 0; s < m.P; ++s)
        if (s != first / per) {
          after[(size_t)(first / per)] -= m.T[(size_t)s * m.E + first];
          after[(size_t)s] += m.T[(size_t)s * m.E + first];
        }
      const double B = *std::max_element(loads.begin(), loads.end());
      const double B_after = *std::max_element(after.begin(), after.end());
      const ShadowSelection sel = select_shadow_experts(m);
      QCOMPARE(sel.loads_before, loads);
      const bool shadowed = !sel.experts.empty();
      if (shadowed) {
        QCOMPARE(sel.experts, std::vector<int>{first});
        QCOMPARE(sel.loads_after, after);
      }
      const bool cond = shadow_condition_9(1, B, m) || shadow_condition_10(1, B, B_after, m);
      if (B_after <= B) {
        QVERIFY2(shadowed == cond, qPrintable(QString("trial %1: shadowed %2, eq. 9 or 10 %3").arg(trial).arg(shadowed).arg(cond)));
        ++(shadowed ? yes : no);
        if (shadowed && !shadow_condition_9(1, B, m)) ++by_10_alone;
      } else {
        QVERIFY2(!shadowed || cond, qPrintable(QString("trial %1").arg(trial)));
        ++raised;
      }
    }
    // Both outcomes, and shadowing that only eq. 10 explains, occur often enough to mean something.
    QVERIFY2(yes > 100 && no > 100 && by_10_alone > 100 && raised > 100,
             qPrintable(QString("yes %1 (eq. 10 alone %2), no %3, raised %4").arg(yes).arg(by_10_alone).arg(no).arg(raised)));
  }

  void bad_input_names_the_field_data() {
    QTest::addColumn<int>("row");
    for (size_t i = 0; i < bad_inputs().size(); ++i) QTest::newRow(bad_inputs()[i].name) << (int)i;
  }
  void bad_input_names_the_field() {
    QFETCH(int, row);
    const BadInput& b = bad_inputs()[(size_t)row];
    try {
      b.call();
      QFAIL("no exception");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find(b.field) != std::string::npos, e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestFasterMoeModel)
#include "tst_fastermoe_model.moc"
