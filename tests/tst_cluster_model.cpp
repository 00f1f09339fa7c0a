// ctest-labels: unit
// The cluster model (perf/cluster_model.h) and cluster files (config/cluster_file.h): link
// classes of rank pairs on hand-made clusters (same node, PCIe pair, NIC sharing, other node,
// other leaf switch), transfer / compute / copy times against numbers worked out by hand, the
// sample cluster files, a config's keys over its cluster file's, and every kind of bad input
// with its exact message.
#include <QtTest>

#include <QTemporaryDir>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "moebench/config/cluster_file.h"
#include "moebench/config/config_loader.h"
#include "moebench/perf/cluster_model.h"

using namespace moebench;

namespace {

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(b), 1e-12); }

void write_file(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

// 2 nodes x 4 devices; PCIe switches {0,1} {2,3}; a NIC per 2 devices; 100 GB/s 2 us inside a
// node, 20 GB/s 3 us between PCIe peers, 25 GB/s 5 us per NIC; 10 TFLOP/s; copies 16 GB/s.
const char* kTwoNodes =
    "[run]\nranks = 8\n[cluster]\nname = \"two\"\nnodes = 2\ndevices_per_node = 4\n"
    "pcie_switch_pairs = [0, 1, 2, 3]\ndevices_per_nic = 2\n"
    "intra_bw_gbs = 100.0\nintra_latency_us = 2.0\npcie_bw_gbs = 20.0\npcie_latency_us = 3.0\n"
    "inter_bw_gbs = 25.0\ninter_latency_us = 5.0\ndevice_tflops = 10.0\ncopy_bw_gbs = 16.0\n";

// 4 nodes x 2 devices, 2 nodes per leaf switch, spine 10 GB/s 8 us; no PCIe pairs.
const char* kTwoSwitches =
    "[run]\nranks = 8\n[cluster]\nnodes = 4\ndevices_per_node = 2\nnodes_per_switch = 2\n"
    "intra_bw_gbs = 100.0\nintra_latency_us = 2.0\ninter_bw_gbs = 25.0\ninter_latency_us = 5.0\n"
    "spine_bw_gbs = 10.0\nspine_latency_us = 8.0\n";

ClusterModel model_of(const char* text) { return cluster_model(parse_config(text, "test.toml")); }

}  // namespace

class TestClusterModel : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  std::string at(const std::string& rel) const { return dir_.path().toStdString() + "/" + rel; }

  // The issues of a config naming the cluster file `cluster_text` (written as c.toml).
  std::vector<ConfigIssue> issues_with_file(const std::string& config_text, const std::string& cluster_text) {
    write_file(at("c.toml"), cluster_text);
    try {
      parse_config(config_text, "test.toml", {}, dir_.path().toStdString());
    } catch (const ConfigError& e) {
      return e.issues();
    }
    return {};
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void link_classes_data() {
    QTest::addColumn<QString>("cluster");
    QTest::addColumn<int>("a");
    QTest::addColumn<int>("b");
    QTest::addColumn<QString>("link");
    QTest::addColumn<int>("nic_a");
    QTest::addColumn<int>("nic_b");
    const QString two = kTwoNodes, sw = kTwoSwitches;
    QTest::newRow("itself") << two << 3 << 3 << "self" << -1 << -1;
    QTest::newRow("PCIe pair 0-1") << two << 0 << 1 << "pcie_pair" << -1 << -1;
    QTest::newRow("PCIe pair 3-2") << two << 3 << 2 << "pcie_pair" << -1 << -1;
    QTest::newRow("PCIe pair on node 1") << two << 4 << 5 << "pcie_pair" << -1 << -1;
    QTest::newRow("same node, other switch") << two << 1 << 2 << "intra_node" << -1 << -1;
    QTest::newRow("same node 0-3") << two << 0 << 3 << "intra_node" << -1 << -1;
    QTest::newRow("other node, first NICs") << two << 0 << 4 << "inter_node" << 0 << 2;
    QTest::newRow("other node, NIC shared by 0 and 1") << two << 1 << 7 << "inter_node" << 0 << 3;
    QTest::newRow("other node, second NICs") << two << 6 << 3 << "inter_node" << 3 << 1;
    QTest::newRow("one node, no pairs") << sw << 0 << 1 << "intra_node" << -1 << -1;
    QTest::newRow("nodes under one switch") << sw << 1 << 2 << "inter_node" << 0 << 1;
    QTest::newRow("nodes under two switches") << sw << 0 << 4 << "inter_switch" << 0 << 2;
    QTest::newRow("last switch to first") << sw << 7 << 3 << "inter_switch" << 3 << 1;
  }

  void link_classes() {
    QFETCH(QString, cluster);
    QFETCH(int, a);
    QFETCH(int, b);
    QFETCH(QString, link);
    QFETCH(int, nic_a);
    QFETCH(int, nic_b);
    const ClusterModel m = model_of(cluster.toUtf8().constData());
    const LinkInfo info = m.link_between(a, b);
    QCOMPARE(QString(cluster_link_name(info.link)), link);
    QCOMPARE(info.nic_a, nic_a);
    QCOMPARE(info.nic_b, nic_b);
    QCOMPARE(m.link_class(b, a), info.link);
  }

  void placement() {
    const ClusterModel m = model_of(kTwoNodes);
    QCOMPARE(m.world_size(), 8);
    QCOMPARE(m.node_of(5), 1);
    QCOMPARE(m.local_index(5), 1);
    QCOMPARE(m.nics_per_node(), 2);
    QCOMPARE(m.pcie_peer_of(6), 7);
    QCOMPARE(m.pcie_peer_of(1), 0);
    QCOMPARE(model_of(kTwoSwitches).pcie_peer_of(1), -1);
    QCOMPARE(model_of(kTwoSwitches).switch_of(5), 1);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, m.node_of(8));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, m.link_between(-1, 0));
  }

  // Expected times worked out by hand from the clusters above.
  void transfer_times_data() {
    QTest::addColumn<QString>("cluster");
    QTest::addColumn<int>("a");
    QTest::addColumn<int>("b");
    QTest::addColumn<double>("bytes");
    QTest::addColumn<double>("micros");
    const QString two = kTwoNodes, sw = kTwoSwitches;
    QTest::newRow("1 MB intra: 2 + 10 us") << two << 1 << 2 << 1e6 << 12.0;
    QTest::newRow("1 MB PCIe pair: 3 + 50 us") << two << 0 << 1 << 1e6 << 53.0;
    QTest::newRow("1 MB inter: 5 + 40 us") << two << 0 << 5 << 1e6 << 45.0;
    QTest::newRow("empty message inter: latency") << two << 2 << 6 << 0.0 << 5.0;
    QTest::newRow("64 MiB inter") << two << 3 << 4 << 67108864.0 << 2689.35456;
    QTest::newRow("itself: free") << two << 2 << 2 << 1e9 << 0.0;
    QTest::newRow("1 MB pair without its own link: intra") << sw << 0 << 1 << 1e6 << 12.0;
    QTest::newRow("1 MB spine: 8 + 100 us") << sw << 1 << 6 << 1e6 << 108.0;
    QTest::newRow("1 MB same switch: 5 + 40 us") << sw << 1 << 3 << 1e6 << 45.0;
  }

  void transfer_times() {
    QFETCH(QString, cluster);
    QFETCH(int, a);
    QFETCH(int, b);
    QFETCH(double, bytes);
    QFETCH(double, micros);
    const double t = model_of(cluster.toUtf8().constData()).transfer_seconds(a, b, bytes);
    QVERIFY2(near(t * 1e6, micros), (std::to_string(t * 1e6) + " us").c_str());
  }

  void compute_and_copy_times_data() {
    QTest::addColumn<double>("flops");
    QTest::addColumn<double>("seconds");
    // 10 TFLOP/s; curve 20 % at 1e6 FLOPs, 80 % at 1e10: 50 % at 1e8 (halfway in log10).
    QTest::newRow("below the curve: 20 %") << 1e4 << 5e-9;
    QTest::newRow("first point") << 1e6 << 5e-7;
    QTest::newRow("halfway: 50 %") << 1e8 << 2e-5;
    QTest::newRow("three quarters: 65 %") << 1e9 << 1.0 / 6500.0;
    QTest::newRow("above the curve: 80 %") << 1e12 << 0.125;
  }

  void compute_and_copy_times() {
    QFETCH(double, flops);
    QFETCH(double, seconds);
    const std::string text = std::string(kTwoNodes) + "efficiency_flops = [1e6, 1e10]\nefficiency = [0.2, 0.8]\n";
    const ClusterModel m = model_of(text.c_str());
    QVERIFY2(near(m.compute_seconds(flops), seconds), std::to_string(m.compute_seconds(flops)).c_str());
    // Without a curve: the plain rate. Copies: 16 GB/s, 8 GB take half a second.
    QVERIFY(near(model_of(kTwoNodes).compute_seconds(1e12), 0.1));
    QVERIFY(near(m.copy_seconds(8e9), 0.5));
    // Two devices share a 25 GB/s NIC.
    QVERIFY(near(m.inter_bandwidth_per_device(), 12.5e9));
  }

  // The rate by message size: log-linear between measured points, clamped at the ends, never
  // above the link; the inter curve serves the inter-node and spine classes, the intra curve
  // the intra-node and PCIe-pair ones; a class without a curve keeps its bandwidth.
  void message_rates() {
    const std::string text = std::string(kTwoNodes) +
                             "inter_msg_bytes = [1e4, 1e6, 1e8]\ninter_msg_gbs = [2.0, 10.0, 40.0]\n"
                             "intra_msg_bytes = [1e5]\nintra_msg_gbs = [50.0]\n";
    const ClusterModel m = model_of(text.c_str());
    QVERIFY(near(m.message_bandwidth(ClusterLink::inter_node, 1e3), 2e9));    // below the first point
    QVERIFY(near(m.message_bandwidth(ClusterLink::inter_node, 1e5), 6e9));    // halfway in log10
    QVERIFY(near(m.message_bandwidth(ClusterLink::inter_node, 1e7), 25e9));   // 25 of 40 GB/s: the NIC's
    QVERIFY(near(m.measured_message_rate(ClusterLink::inter_node, 1e7), 25e9));
    QVERIFY(near(m.message_bandwidth(ClusterLink::inter_switch, 1e5), 6e9));
    QVERIFY(near(m.message_bandwidth(ClusterLink::intra_node, 1e9), 50e9));
    QVERIFY(near(m.message_bandwidth(ClusterLink::pcie_pair, 1e9), 20e9));    // the pair's own 20 GB/s
    QCOMPARE(m.measured_message_rate(ClusterLink::self, 1e5), 0.0);
    QCOMPARE(model_of(kTwoNodes).measured_message_rate(ClusterLink::inter_node, 1e5), 0.0);
    // One 100 kB message between nodes: 5 us + 1e5 B / 6 GB/s.
    QVERIFY(near(m.transfer_seconds(0, 5, 1e5) * 1e6, 5.0 + 1e5 / 6e9 * 1e6));
  }

  void describe_is_one_line() {
    const std::string d = model_of(kTwoNodes).describe();
    QCOMPARE(QString::fromStdString(d),
             QString("two: 2 nodes x 4 devices, 10 TFLOP/s per device, intra 100 GB/s 2 us, PCIe pairs 2 per "
                     "node 20 GB/s 3 us, inter 25 GB/s 5 us per NIC (2 devices per NIC), copy 16 GB/s"));
  }

  void defaults_describe_one_machine() {
    const Config c = parse_config("[run]\nranks = 4\n", "test.toml");
    const ClusterModel m = cluster_model(c);
    QCOMPARE(m.world_size(), 4);
    QCOMPARE(m.nodes(), 1);
    QCOMPARE(m.link_class(0, 3), ClusterLink::intra_node);
    QCOMPARE(m.spec().name, std::string("local"));
  }

  void sample_cluster_files_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("world");
    QTest::addColumn<double>("intra_gbs");
    QTest::addColumn<double>("inter_gbs");
    QTest::addColumn<int>("devices_per_nic");
    QTest::newRow("janus") << "janus.toml" << 32 << 300.0 << 25.0 << 2;
    QTest::newRow("janus 4 gpu") << "janus_4gpu.toml" << 4 << 300.0 << 25.0 << 2;
    QTest::newRow("fastermoe johnny") << "fastermoe_johnny.toml" << 16 << 8.0 << 6.25 << 8;
    QTest::newRow("fastermoe trevor") << "fastermoe_trevor.toml" << 64 << 25.0 << 12.5 << 4;
    QTest::newRow("pipeline moe") << "ppmoe.toml" << 32 << 300.0 << 12.5 << 8;
    QTest::newRow("monta") << "monta.toml" << 16 << 200.0 << 25.0 << 1;
    QTest::newRow("moesys") << "moesys.toml" << 32 << 300.0 << 25.0 << 1;
    QTest::newRow("h100") << "h100.toml" << 16 << 450.0 << 50.0 << 1;
    QTest::newRow("local") << "local.toml" << 2 << 4.1546 << 4.1546 << 2;  // moebench calibrate --ranks 4
  }

  void sample_cluster_files() {
    QFETCH(QString, file);
    QFETCH(int, world);
    QFETCH(double, intra_gbs);
    QFETCH(double, inter_gbs);
    QFETCH(int, devices_per_nic);
    const std::string path = std::string(MOEBENCH_SOURCE_DIR) + "/sample_configs/clusters/" + file.toStdString();
    try {
      const ClusterConfig k = load_cluster_file(path);
      QCOMPARE(k.intra_bw_gbs, intra_gbs);
      // Through a config, with --set relative to the current directory.
      QDir::setCurrent(MOEBENCH_SOURCE_DIR);
      const Config c = parse_config("", "t.toml",
                                    {"run.ranks=" + std::to_string(world), "train.batch_size=64",
                                     "cluster.file=sample_configs/clusters/" + file.toStdString()});
      QCOMPARE(c.cluster.file, path);
      const ClusterModel m = cluster_model(c);
      QCOMPARE(m.world_size(), world);
      QCOMPARE(m.devices_per_nic(), devices_per_nic);
      QCOMPARE(m.link(ClusterLink::inter_node).bandwidth, inter_gbs * 1e9);
      QVERIFY(QString::fromStdString(m.describe()).startsWith(QString::fromStdString(k.name) + ": "));
    } catch (const ConfigError& e) {
      QFAIL(e.what());
    }
  }

  void janus_testbed_links() {
    const std::string path = std::string(MOEBENCH_SOURCE_DIR) + "/sample_configs/clusters/janus.toml";
    const ClusterModel m = cluster_model(parse_config("", "t.toml", {"run.ranks=32", "train.batch_size=64", "cluster.file=" + path}));
    // GPUs 0 and 1 share a PCIe switch and talk over NVLink; 1 and 2 do not share a switch.
    QCOMPARE(m.link_class(0, 1), ClusterLink::pcie_pair);
    QCOMPARE(m.link_between(0, 1).bandwidth, 300e9);
    QCOMPARE(m.link_class(1, 2), ClusterLink::intra_node);
    QCOMPARE(m.nic_of(0), m.nic_of(1));
    QVERIFY(m.nic_of(1) != m.nic_of(2));
    QCOMPARE(m.link_class(7, 8), ClusterLink::inter_node);
    QCOMPARE(m.nic_of(31), 15);
  }

  void config_keys_override_the_file() {
    write_file(at("big.toml"), "[cluster]\nname = \"big\"\nintra_bw_gbs = 300.0\ninter_bw_gbs = 25.0\n");
    const Config c = parse_config("[cluster]\nfile = \"big.toml\"\ninter_bw_gbs = 5.0\n", "test.toml",
                                  {"cluster.intra_bw_gbs=50"}, dir_.path().toStdString());
    QCOMPARE(c.cluster.name, std::string("big"));
    QCOMPARE(c.cluster.intra_bw_gbs, 50.0);
    QCOMPARE(c.cluster.inter_bw_gbs, 5.0);
    QCOMPARE(c.cluster.copy_bw_gbs, ClusterConfig{}.copy_bw_gbs);
    // The resolved config loads again to the same values, the file still named.
    const Config again = parse_config(config_to_toml(c), "resolved.toml", {}, "/elsewhere");
    QCOMPARE(config_to_json(again), config_to_json(c));
  }

  void file_errors_data() {
    QTest::addColumn<QString>("config");
    QTest::addColumn<QString>("cluster");
    QTest::addColumn<bool>("in_cluster_file");
    QTest::addColumn<int>("line");
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("message");
    const QString cfg = "[cluster]\nfile = \"c.toml\"\n";
    QTest::newRow("unknown key") << cfg << "[cluster]\nintra_bw_gb = 5.0\n" << true << 2 << "cluster.intra_bw_gb"
                                 << "unknown key in [cluster]; did you mean `intra_bw_gbs`?";
    QTest::newRow("wrong type") << cfg << "[cluster]\nname = \"x\"\ninter_bw_gbs = \"fast\"\n" << true << 3
                                << "cluster.inter_bw_gbs" << "expected a number, got string \"fast\"";
    QTest::newRow("negative bandwidth") << cfg << "[cluster]\n\ninter_bw_gbs = -1.0\n" << true << 3
                                        << "cluster.inter_bw_gbs" << "must be > 0, got -1";
    QTest::newRow("negative latency") << cfg << "[cluster]\nintra_latency_us = -0.5\n" << true << 2
                                      << "cluster.intra_latency_us" << "must be >= 0, got -0.5";
    QTest::newRow("another section") << cfg << "[cluster]\nnodes = 1\n[model]\nhidden = 4\n" << true << 3 << "model"
                                     << "a cluster file holds only a [cluster] section (got [model])";
    QTest::newRow("nested file") << cfg << "[cluster]\nfile = \"other.toml\"\n" << true << 2 << "cluster.file"
                                 << "a cluster file cannot name another cluster file";
    QTest::newRow("NIC share") << "[run]\nranks = 8\n[cluster]\nfile = \"c.toml\"\n"
                               << "[cluster]\nnodes = 1\ndevices_per_node = 8\ndevices_per_nic = 3\n" << true << 4
                               << "cluster.devices_per_nic" << "must divide cluster.devices_per_node (8), got 3";
    QTest::newRow("curve lengths") << cfg << "[cluster]\nefficiency_flops = [1e6, 1e9]\nefficiency = [0.5]\n" << true
                                   << 3 << "cluster.efficiency"
                                   << "has 1 entries but cluster.efficiency_flops has 2; give one efficiency per point";
    QTest::newRow("curve order") << cfg << "[cluster]\nefficiency_flops = [1e9, 1e6]\nefficiency = [0.5, 0.6]\n"
                                 << true << 2 << "cluster.efficiency_flops"
                                 << "must be > 0 and strictly ascending, entry 1 is 1e+06";
    QTest::newRow("efficiency above 1") << cfg << "[cluster]\nefficiency_flops = [1e9]\nefficiency = [1.5]\n" << true
                                        << 3 << "cluster.efficiency" << "must be in (0, 1], entry 0 is 1.5";
    QTest::newRow("task cost lengths")
        << cfg << "[cluster]\ntask_names = [\"a\", \"b\"]\ntask_overhead_us = [0, 1]\ntask_factors = [2.0]\n" << true << 4
        << "cluster.task_factors" << "has 1 entries but cluster.task_names has 2; give one per task name";
    QTest::newRow("task factor 0") << cfg << "[cluster]\ntask_names = [\"a\"]\ntask_overhead_us = [0]\ntask_factors = [0]\n"
                                   << true << 4 << "cluster.task_factors" << "must be > 0, entry 0 (a) is 0";
    QTest::newRow("negative comm overhead") << cfg << "[cluster]\ncomm_us_per_mb = -3\n" << true << 2
                                            << "cluster.comm_us_per_mb" << "must be >= 0, got -3";
    QTest::newRow("bad type under a config key") << "[cluster]\nfile = \"c.toml\"\nintra_bw_gbs = 5.0\n"
                                                 << "[cluster]\nintra_bw_gbs = \"x\"\n" << true << 2
                                                 << "cluster.intra_bw_gbs" << "expected a number, got string \"x\"";
    QTest::newRow("the file's nodes against run.ranks") << cfg << "[cluster]\nnodes = 2\ndevices_per_node = 4\n"
                                                        << true << 3 << "cluster.devices_per_node"
                                                        << "cluster.nodes x devices_per_node = 8 must equal run.ranks = 1";
    QTest::newRow("missing file") << "[cluster]\n\nfile = \"nope.toml\"\n" << "" << false << 3 << "cluster.file"
                                  << "cluster file not found: %1/nope.toml";
    QTest::newRow("bad config key") << "[cluster]\nspine_bw_gbs = -2\n" << "" << false << 2 << "cluster.spine_bw_gbs"
                                    << "must be >= 0 (0 = cluster.inter_bw_gbs), got -2";
  }

  void file_errors() {
    QFETCH(QString, config);
    QFETCH(QString, cluster);
    QFETCH(bool, in_cluster_file);
    QFETCH(int, line);
    QFETCH(QString, key);
    QFETCH(QString, message);
    const auto issues = issues_with_file(config.toStdString(), cluster.toStdString());
    std::string all;
    for (const auto& i : issues) all += "\n  " + i.to_string();
    QVERIFY2(issues.size() == 1, ("expected one issue, got:" + all).c_str());
    const ConfigIssue& i = issues[0];
    QCOMPARE(QString::fromStdString(i.file), in_cluster_file ? QString::fromStdString(at("c.toml")) : "test.toml");
    QCOMPARE(i.line, line);
    QCOMPARE(QString::fromStdString(i.key), key);
    if (message.contains("%1")) message = message.arg(dir_.path());
    QCOMPARE(QString::fromStdString(i.message), message);
  }

  void issues_listed_per_file() {
    // The config's issues by line, then the cluster file's, then --set's.
    const auto issues = [&] {
      write_file(at("c.toml"), "[cluster]\nintra_bw_gbs = 0\n\n\n\ninter_latency_us = -1\n");
      try {
        parse_config("[cluster]\nfile = \"c.toml\"\n\n[model]\nhidden = 0\n", "test.toml", {"cluster.copy_bw_gbs=0"},
                     dir_.path().toStdString());
      } catch (const ConfigError& e) {
        return e.issues();
      }
      return std::vector<ConfigIssue>{};
    }();
    std::vector<std::string> where;
    for (const auto& i : issues) where.push_back((i.file == "test.toml" || i.file == "--set" ? i.file : "c.toml") + ":" +
                                                 std::to_string(i.line) + " " + i.key);
    QCOMPARE(where, (std::vector<std::string>{"test.toml:5 model.hidden", "c.toml:2 cluster.intra_bw_gbs",
                                              "c.toml:6 cluster.inter_latency_us", "--set:0 cluster.copy_bw_gbs"}));
  }

  void standalone_file_errors() {
    // The same file alone: no run.ranks to compare with; syntax errors name the file and line.
    try {
      parse_cluster_file("[cluster]\nnodes = 2\nnodes = 3\n", "x.toml");
      QFAIL("accepted a duplicate key");
    } catch (const ConfigError& e) {
      QCOMPARE(e.issues().size(), size_t(1));
      QCOMPARE(e.issues()[0].file, std::string("x.toml"));
      QCOMPARE(e.issues()[0].line, 3);
      QVERIFY2(e.issues()[0].message.rfind("TOML syntax error: ", 0) == 0, e.what());
    }
    QCOMPARE(parse_cluster_file("[cluster]\nnodes = 2\ndevices_per_node = 4\n", "x.toml").nodes, 2);
    try {
      load_cluster_file(at("absent.toml"));
      QFAIL("read a missing file");
    } catch (const ConfigError& e) {
      QCOMPARE(QString(e.what()), QString::fromStdString(at("absent.toml") + ": cluster file not found: " +
                                                         at("absent.toml")));
    }
  }
};

QTEST_GUILESS_MAIN(TestClusterModel)
#include "tst_cluster_model.moc"
