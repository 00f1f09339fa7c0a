// ctest-labels: unit
// Predicted DDL-roofline points (perf/ddl_prediction.h: FasterMoE eq. 1-4 on a run's routing
// and cluster model, or the fastermoe strategy's stored predictions): a hand-built run on a
// 2-node cluster against numbers computed by hand, replicated experts (parallel.ep < the ranks,
// FasterMoE's DP at ep = 1) adding their gradient all-reduce, stored metrics taking precedence
// (and scaled by the micro-batches), layouts that are not covered (TP, PP) giving reasons, and
// the stored config read back by config_from_json.
#include <QtTest>

#include <QTemporaryDir>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "moebench/config/config_json.h"
#include "moebench/config/config_loader.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/perf/ddl_prediction.h"
#include "moebench/store/run_store.h"

using namespace moebench;

namespace {

bool near(double a, double b, double rel = 1e-9) { return std::abs(a - b) <= rel * std::max(std::abs(b), 1e-300); }

// 2 nodes x 2 devices, 1 TFLOP/s per device (no efficiency curve), intra-node 100 GB/s per
// device port, one NIC of 10 GB/s per node. H = 64, F = 2 x 64 = 128; one MoE block (0) with 4
// experts, ep = 0 (the 4 data-parallel ranks): expert e on rank e.
Config two_node_config() {
  Config c;
  c.run.ranks = 4;
  c.cluster.nodes = 2;
  c.cluster.devices_per_node = 2;
  c.cluster.device_tflops = 1.0;
  c.cluster.intra_bw_gbs = 100.0;
  c.cluster.inter_bw_gbs = 10.0;
  c.model.hidden = 64;
  c.model.ffn_mult = 2;
  c.model.layers = 2;
  c.moe.moe_layers = {0, 1};
  c.moe.experts = {4, 4};
  return c;
}

// Step 2's tokens T[source][expert] of block 0; step 3 sends twice as many, step 1 (the
// warm-up, left out) something else entirely.
const double kT[4][4] = {{10, 20, 30, 0}, {0, 10, 0, 40}, {50, 0, 10, 0}, {0, 0, 0, 10}};

std::vector<RoutingRow> routing_of(int64_t step) {
  std::vector<RoutingRow> rows;
  for (int s = 0; s < 4; ++s)
    for (int e = 0; e < 4; ++e) {
      const double t = step == 1 ? (s == 3 && e == 0 ? 1000 : 0) : kT[s][e] * double(step - 1);
      if (t > 0) rows.push_back({step, 0, s, e, int64_t(t)});
      // block 1: every rank keeps its tokens (expert s on rank s): nothing to send
      if (e == s) rows.push_back({step, 1, s, e, 16});
    }
  return rows;
}

int64_t make_run(RunStore& store, const std::string& name, const Config& cfg, bool layer1 = true) {
  RunInfo info;
  info.name = name;
  info.strategy = cfg.strategy.name;
  info.config_json = config_to_json(cfg).dump();
  info.ranks = 4;
  const int64_t id = store.create_run(info).id;
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<RoutingRow> rows;
    for (const RoutingRow& r : routing_of(step))
      if (layer1 || r.layer == 0) rows.push_back(r);
    store.log_step(id, {{"loss", step, 1.0, 0}}, {}, {}, rows);
  }
  return id;
}

}  // namespace

class TestDdlPrediction : public QObject {
  Q_OBJECT

 private slots:
  void hand_computed_two_nodes() {
    // Step 2, block 0. Loads (expert e on rank e): B_0 = 10+0+50+0 = 60, B_1 = 20+10 = 30,
    //   B_2 = 30+10 = 40, B_3 = 40+10 = 50; sum = 180 = every routing row of the step.
    // eq. 1: Lat_comp = 4 x 60 x 64 x 128 / 1e12 = 1.96608e-6 s.
    // eq. 2: rows of 64 x 4 = 256 bytes; flows 0->1 20 rows (intra), 0->2 30, 1->3 40, 2->0 50
    //   (inter). NIC out of node 0 carries 0->2 and 1->3: 70 x 256 = 17920 bytes / 1e10 B/s =
    //   1.792e-6 s (also NIC in of node 1); node 1's NIC out 12800 B -> 1.28e-6 s; the intra link
    //   5120 B / 1e11 -> 5.12e-8 s. Lat_comm = 1.792e-6 s.
    // Step 3 doubles every count: both latencies double (eq. 1 and 2 are linear here).
    // Means over steps 2 and 3 (step 1 is the warm-up: 3 steps have routing, none has spans):
    //   Lat_comp = 1.5 x 1.96608e-6 = 2.94912e-6, Lat_comm = 1.5 x 1.792e-6 = 2.688e-6,
    //   the step's 3 and 4 rounds: 8.84736e-6 and 10.752e-6,
    //   R_CC = 3 x 1.96608 / (4 x 1.792) = 0.8228571428...
    //   Lat_e2e = 3 x 2.94912e-6 + 4 x 2.688e-6 = 19.59936e-6
    //   FLOPs = 12 x 2 x 64^2 x 180 x 1.5 = 26,542,080
    //   P-bar = 26,542,080 / (4 x 19.59936e-6) / 1e9 = 338.5583... GFLOP/s per worker
    QTemporaryDir dir;
    RunStore store(dir.filePath("runs.db").toStdString());
    const int64_t id = make_run(store, "ec", two_node_config());
    const auto points = ddl_predicted_points(store, store.find_run("ec"));
    QCOMPARE(points.size(), size_t(3));  // blocks 0, 1, whole run
    const DdlPredictedPoint& p = points[0];
    QCOMPARE(p.run_id, id);
    QCOMPARE(p.layer, 0);
    QVERIFY2(p.has_point(), p.reason.c_str());
    QVERIFY(p.warmup_excluded);
    QCOMPARE(p.steps_used, int64_t(2));
    QCOMPARE(p.steps_from_routing, int64_t(2));
    QCOMPARE(p.steps_from_metrics, int64_t(0));
    QVERIFY(near(p.lat_comp_s, 8.84736e-6));
    QVERIFY(near(p.lat_comm_s, 10.752e-6));
    QVERIFY(near(p.r_cc, 3 * 1.96608 / (4 * 1.792)));
    QVERIFY(near(p.lat_e2e_s, 19.59936e-6));
    QVERIFY(near(p.flops_per_step, 26542080.0));
    QVERIFY(near(p.achieved_gflops, 26542080.0 / (4 * 19.59936e-6) / 1e9));
    QVERIFY(near(p.achieved_gflops, 338.5583, 1e-6));
    // Block 1 keeps every token on its rank: no traffic, no R_CC; so no whole-run point.
    QCOMPARE(points[1].layer, 1);
    QVERIFY(!points[1].has_point());
    QVERIFY2(points[1].reason.find("communication") != std::string::npos, points[1].reason.c_str());
    QCOMPARE(points[2].layer, -1);
    QVERIFY(!points[2].has_point());
    QVERIFY2(points[2].reason.find("MoE layer 1") != std::string::npos, points[2].reason.c_str());

    // The step function alone, step 2's matrix: the same numbers, and the loads.
    const ClusterModel cluster = cluster_model(two_node_config());
    const ClusterNetwork net(cluster);
    std::vector<double> T;
    for (const auto& row : kT) T.insert(T.end(), std::begin(row), std::end(row));
    const DdlStepPrediction s = ddl_predict_step(T, 4, 4, 4, 64, 128, cluster, net);
    QVERIFY(near(s.comp_s, 1.96608e-6));
    QVERIFY(near(s.comm_s, 1.792e-6));
    QCOMPARE(s.loads, (std::vector<double>{60, 30, 40, 50}));
    // EP groups of 2 ({0,1} on node 0, {2,3} on node 1), experts 0-1 on the group's first
    // rank, 2-3 on its second: B = {10+20+0+10, 30+0+0+40, 50+0+0+0, 10+0+0+10}
    // = {40, 70, 50, 20}; only intra-node traffic: rank 0 -> 1: 30 rows, 1 -> 0: 10, 2 -> 3: 10,
    // 3 -> 2: 0; the busiest port 30 x 256 B / 1e11 = 7.68e-8 s.
    const DdlStepPrediction g = ddl_predict_step(T, 4, 4, 2, 64, 128, cluster, net);
    QCOMPARE(g.loads, (std::vector<double>{40, 70, 50, 20}));
    QVERIFY(near(g.comp_s, 4 * 70 * 64 * 128 / 1e12));
    QVERIFY(near(g.comm_s, 30 * 256 / 1e11));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ddl_predict_step(T, 4, 4, 3, 64, 128, cluster, net));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ddl_predict_step({1, 2}, 4, 4, 4, 64, 128, cluster, net));
  }

  void replicated_experts_add_their_allreduce() {
    // ep = 1 (FasterMoE's DP): every rank holds the 4 experts of each block, no token moves.
    // One expert: w1 64 x 128, b1 128, w2 128 x 64, b2 64 = 16,576 parameters; per rank
    // S = 4 x 16,576 x 4 bytes = 265,216 B, summed in the ring 0 -> 1 -> 2 -> 3 -> 0: each rank
    // sends 2 x 3/4 x S = 397,824 B to the next; 1 -> 2 and 3 -> 0 cross a node, each alone on
    // its NIC: Lat_ar = 397,824 / 1e10 = 3.97824e-5 s (the intra-node hops: / 1e11).
    const double ar = 397824.0 / 1e10;
    // Block 0, step 2: B_w = each rank's own tokens (row sums of kT) = {60, 50, 60, 10}:
    //   Lat_comp = 4 x 60 x 64 x 128 / 1e12 = 1.96608e-6 s; step 3 doubles it. Lat_comm = 0.
    //   lat_comp_s = 3 x 1.5 x 1.96608e-6 = 8.84736e-6, lat_comm_s = 4 x 0 + Lat_ar,
    //   Lat_e2e = 8.84736e-6 + 3.97824e-5 = 4.862976e-5 s, FLOPs 26,542,080 as with ep = 4.
    // Block 1 (16 tokens per rank, kept): 3 x 4 x 16 x 64 x 128 / 1e12 = 1.572864e-6 s of
    // compute and the same all-reduce: a point, where ep = 4 gives none (hand_computed_two_nodes).
    QTemporaryDir dir;
    RunStore store(dir.filePath("runs.db").toStdString());
    Config cfg = two_node_config();
    cfg.parallel.ep = 1;
    make_run(store, "dp", cfg);
    const auto points = ddl_predicted_points(store, store.find_run("dp"));
    QCOMPARE(points.size(), size_t(3));
    const DdlPredictedPoint& p = points[0];
    QVERIFY2(p.has_point(), p.reason.c_str());
    QCOMPARE(p.steps_from_routing, int64_t(2));
    QVERIFY(near(p.lat_comp_s, 8.84736e-6));
    QVERIFY(near(p.lat_comm_s, ar));
    QVERIFY(near(p.lat_e2e_s, 8.84736e-6 + ar));
    QVERIFY(near(p.r_cc, 8.84736e-6 / ar));
    QVERIFY(near(p.achieved_gflops, 26542080.0 / (4 * (8.84736e-6 + ar)) / 1e9));
    QVERIFY2(points[1].has_point(), points[1].reason.c_str());
    QVERIFY(near(points[1].lat_comp_s, 1.572864e-6));
    QVERIFY(near(points[1].lat_comm_s, ar));
    QVERIFY2(points[2].has_point(), points[2].reason.c_str());
    QVERIFY(near(points[2].lat_comm_s, 2 * ar));

    // ep = 2: replicas {0, 2} and {1, 3}, S = 2 experts x 16,576 x 4 = 132,608 B each; each
    // rank sends 2 x 1/2 x S = S to its replica on the other node; node 0's NIC carries
    // 0 -> 2 and 1 -> 3: 2 S / 1e10 = 2.65216e-5 s. ep = 4: no replicas, nothing.
    const ClusterModel cluster = cluster_model(two_node_config());
    const ClusterNetwork net(cluster);
    QVERIFY(near(ddl_expert_allreduce_seconds(4, 4, 2, 16576, net), 2 * 132608.0 / 1e10));
    QVERIFY(near(ddl_expert_allreduce_seconds(4, 4, 1, 16576, net), ar));
    QCOMPARE(ddl_expert_allreduce_seconds(4, 4, 4, 16576, net), 0.0);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ddl_expert_allreduce_seconds(4, 4, 3, 16576, net));
    // In the point: 4 x block 0's exchange inside the groups (ddl_predict_step, checked by hand
    // in hand_computed_two_nodes; step 3 doubles step 2's) plus the all-reduce.
    cfg.parallel.ep = 2;
    make_run(store, "ep2", cfg);
    std::vector<double> T;
    for (const auto& row : kT) T.insert(T.end(), std::begin(row), std::end(row));
    const double a2a = ddl_predict_step(T, 4, 4, 2, 64, 128, cluster, net).comm_s;
    const DdlPredictedPoint q = ddl_predicted_points(store, store.find_run("ep2"))[0];
    QVERIFY2(q.has_point(), q.reason.c_str());
    QVERIFY(near(q.lat_comm_s, 4 * 1.5 * a2a + 2 * 132608.0 / 1e10));
  }

  void whole_run_sums_layers() {
    // Only block 0 routed (the config still names block 1: it has no routing rows, no point);
    // with moe_layers = [0] the whole run is block 0 alone.
    QTemporaryDir dir;
    RunStore store(dir.filePath("runs.db").toStdString());
    Config cfg = two_node_config();
    make_run(store, "two", cfg, false);
    auto points = ddl_predicted_points(store, store.find_run("two"));
    QCOMPARE(points.size(), size_t(3));
    QVERIFY(!points[1].has_point());
    QVERIFY2(points[1].reason.find("no routing rows of MoE layer 1") != std::string::npos, points[1].reason.c_str());
    cfg.moe.moe_layers = {0};
    cfg.moe.experts = {4};
    make_run(store, "one", cfg, false);
    points = ddl_predicted_points(store, store.find_run("one"));
    QCOMPARE(points.size(), size_t(2));
    const DdlPredictedPoint& w = points[1];
    QVERIFY2(w.has_point(), w.reason.c_str());
    QCOMPARE(w.layer, -1);
    QVERIFY(near(w.lat_comp_s, points[0].lat_comp_s));
    QVERIFY(near(w.r_cc, points[0].r_cc));
    QVERIFY(near(w.achieved_gflops, points[0].achieved_gflops));
    QCOMPARE(w.steps_used, int64_t(2));
    QCOMPARE(w.steps_from_routing, int64_t(2));
  }

  void stored_fastermoe_metrics_win() {
    // Block 0 stores fastermoe's eq. 1 / eq. 2 (ms) in steps 1 and 2; step 3 has none and is
    // computed from its routing (2 x step 2's: 3.93216e-6 s, 3.584e-6 s).
    //   Lat_comp = (0.5e-3 + 3.93216e-6) / 2, Lat_comm = (0.25e-3 + 3.584e-6) / 2
    QTemporaryDir dir;
    RunStore store(dir.filePath("runs.db").toStdString());
    Config cfg = two_node_config();
    cfg.strategy.name = "fastermoe";
    cfg.moe.moe_layers = {0};
    cfg.moe.experts = {4};
    const int64_t id = make_run(store, "fm", cfg, false);
    for (int64_t step = 1; step <= 2; ++step)
      store.log_step(id,
                     {{ddl_stored_comp_key(0), step, 0.5, 0},
                      {ddl_stored_comm_key(0), step, 0.25, 0},
                      {"fastermoe.shadowed/block0", step, 1, 0},
                      {"fastermoe.shadow.e0/block0", step, 1, 0}},
                     {}, {}, {});
    QCOMPARE(ddl_stored_comp_key(3), std::string("fastermoe.predicted_comp_ms/block3"));
    auto points = ddl_predicted_points(store, store.find_run("fm"));
    QCOMPARE(points.size(), size_t(2));
    DdlPredictedPoint p = points[0];
    QVERIFY2(p.has_point(), p.reason.c_str());
    QCOMPARE(p.steps_from_metrics, int64_t(1));
    QCOMPARE(p.steps_from_routing, int64_t(1));
    const double comp = (0.5e-3 + 3.93216e-6) / 2, comm = (0.25e-3 + 3.584e-6) / 2;
    QVERIFY(near(p.lat_comp_s, 3 * comp));
    QVERIFY(near(p.lat_comm_s, 4 * comm));
    QVERIFY(near(p.r_cc, 3 * comp / (4 * comm)));
    QVERIFY(near(p.lat_e2e_s, 3 * comp + 4 * comm));
    QVERIFY(near(p.achieved_gflops, 26542080.0 / (4 * (3 * comp + 4 * comm)) / 1e9));

    // Both steps stored, with 2 micro-batches: the stored (one micro-batch) values doubled.
    store.log_step(id, {{ddl_stored_comp_key(0), 3, 0.5, 0}, {ddl_stored_comm_key(0), 3, 0.25, 0}}, {}, {}, {});
    RunInfo info = store.find_run("fm");
    p = ddl_predicted_points(store, info)[0];
    QCOMPARE(p.steps_from_metrics, int64_t(2));
    QVERIFY(near(p.lat_comp_s, 1.5e-3));
    QVERIFY(near(p.r_cc, 1.5));
    cfg.parallel.microbatches = 2;
    info.config_json = config_to_json(cfg).dump();
    p = ddl_predicted_points(store, info)[0];
    QVERIFY(near(p.lat_comp_s, 3e-3));
    QVERIFY(near(p.lat_comm_s, 2e-3));
    QVERIFY(near(p.lat_e2e_s, 3e-3 + 2e-3));
  }

  void uncovered_layouts_give_reasons_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QString>("expected");
    QTest::newRow("tp 2") << 2 << 1 << "expert_centric" << "parallel.tp = 2";
    QTest::newRow("pp 2") << 1 << 2 << "expert_centric" << "parallel.pp = 2";
    QTest::newRow("ppmoe") << 1 << 1 << "ppmoe" << "ppmoe";
  }
  void uncovered_layouts_give_reasons() {
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(QString, strategy);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    RunStore store(dir.filePath("runs.db").toStdString());
    Config cfg = two_node_config();
    cfg.parallel.tp = tp;
    cfg.parallel.pp = pp;
    cfg.strategy.name = strategy.toStdString();
    cfg.moe.moe_layers = {0};
    cfg.moe.experts = {4};
    const int64_t id = make_run(store, "x", cfg, false);
    auto points = ddl_predicted_points(store, store.find_run("x"));
    QCOMPARE(points.size(), size_t(2));
    for (const auto& p : points) {
      QVERIFY(!p.has_point());
      QVERIFY2(p.reason.find(expected.toStdString()) != std::string::npos, p.reason.c_str());
    }
    QVERIFY2(points[0].reason.find("no stored fastermoe predictions") != std::string::npos, points[0].reason.c_str());
    // Stored predictions in every step used still give the point.
    for (int64_t step = 2; step <= 3; ++step)
      store.log_step(id, {{ddl_stored_comp_key(0), step, 0.3, 0}, {ddl_stored_comm_key(0), step, 0.1, 0}}, {}, {}, {});
    points = ddl_predicted_points(store, store.find_run("x"));
    QVERIFY2(points[0].has_point(), points[0].reason.c_str());
    QVERIFY(near(points[0].r_cc, 3 * 0.3 / (4 * 0.1)));
  }

  void missing_data_reasons() {
    QTemporaryDir dir;
    RunStore store(dir.filePath("runs.db").toStdString());
    RunInfo bare;
    bare.name = "bare";
    bare.ranks = 4;
    const RunInfo b = store.create_run(bare);
    auto points = ddl_predicted_points(store, b);
    QCOMPARE(points.size(), size_t(1));
    QVERIFY(points[0].reason.find("no routing rows") != std::string::npos);
    store.log_step(b.id, {}, {}, {}, {{1, 0, 0, 1, 5}});
    points = ddl_predicted_points(store, store.find_run("bare"));
    QCOMPARE(points.size(), size_t(2));
    QVERIFY2(points[0].reason.find("no config") != std::string::npos, points[0].reason.c_str());
    RunInfo unknown;
    unknown.id = 4242;
    QVERIFY_THROWS_EXCEPTION(StoreError, ddl_predicted_points(store, unknown));
  }

  void stored_config_round_trip() {
    Config c = two_node_config();
    c.strategy.name = "fastermoe";
    c.cluster.efficiency_flops = {1e6, 1e9};
    c.cluster.efficiency = {0.5, 0.9};
    c.cluster.task_names = {"moe.experts"};
    const nlohmann::json j = config_to_json(c);
    const Config back = config_from_json(j.dump());
    QCOMPARE(config_to_json(back), j);
    QCOMPARE(back.cluster.nodes, 2);
    QCOMPARE(back.moe.experts, (std::vector<int>{4, 4}));
    // Missing keys keep their defaults, unknown keys are ignored, wrong types are named.
    const Config partial = config_from_json(std::string(R"({"model": {"hidden": 96, "future_key": 1}})"));
    QCOMPARE(partial.model.hidden, 96);
    QCOMPARE(partial.model.ffn_mult, Config{}.model.ffn_mult);
    try {
      config_from_json(std::string(R"({"model": {"hidden": "wide"}})"));
      QFAIL("no error");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("model.hidden: expected integer") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, config_from_json(std::string("[1, 2]")));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, config_from_json(std::string("{nope")));
  }
};

QTEST_MAIN(TestDdlPrediction)
#include "tst_ddl_prediction.moc"
