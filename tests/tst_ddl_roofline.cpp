// ctest-labels: unit
// DDL-roofline points (FasterMoE §3.3, eq. 3-6) from stored runs: the fixture's runs against
// values from its span rules (by hand for one layer, from the generator functions for all),
// a data-parallel run whose only layer communication is its experts' gradient all-reduce (on
// the host stream), the ideal and semi-ideal curves, the stored peak reader, and missing data
// giving reasons.
#include <QtTest>

#include <QTemporaryDir>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gui_fixture.h"
#include "moebench/perf/ddl_roofline.h"
#include "moebench/store/run_store.h"

using namespace moebench;
namespace fx = moebench::test::gui_fixture;

namespace {

bool near(double a, double b, double rel = 1e-9) { return std::abs(a - b) <= rel * std::max(std::abs(b), 1e-300); }

// From the fixture's span rules, per (step, rank w = 1 + rank % 2), in units of D:
//   compute spans of layer L: moe.experts 0.02w + moe.experts_backward 0.04w = 0.06w
//     -> Lat_comp = max_w = 0.12 D (rank 1 and 3)
//   comm spans of layer L: 0.01 + 0.01 + 0.015 + 0.015 = 0.05 on every rank -> Lat_comm = 0.05 D
//   union of the layer's intervals (layer 0; layer 1 is the same shifted by 0.1 / 0.2):
//     w = 1: [.02,.03] [.05,.07] [.08,.09] [.32,.335] [.35,.39] [.42,.435] = 0.11 (disjoint)
//     w = 2: [.02,.03] [.05,.09] (experts swallow combine [.08,.09]) [.32,.335]
//            [.35,.435] (backward [.35,.43] overlaps combine_grad [.42,.435]) = 0.15
//     -> Lat_e2e = 0.15 D
struct Expected {
  double comp = 0, comm = 0, e2e = 0, flops = 0;
  int64_t steps = 0;
};

// Means over steps 2..6 (step 1 is the warm-up: 6 steps have spans).
Expected expected(int variant, int layer) {
  Expected e;
  for (int step = 2; step <= fx::kSteps; ++step) {
    const double D = fx::stepMs(variant, step) / 1000.0;
    e.comp += 0.12 * D;
    e.comm += 0.05 * D;
    e.e2e += 0.15 * D;
    int64_t tokens = 0;
    for (int r = 0; r < fx::kRanks; ++r)
      for (int x = 0; x < fx::kExperts; ++x) tokens += fx::routedTokens(step, layer, r, x);
    e.flops += 12.0 * fx::kFfnMult * fx::kHidden * fx::kHidden * double(tokens);
    ++e.steps;
  }
  e.comp /= double(e.steps);
  e.comm /= double(e.steps);
  e.e2e /= double(e.steps);
  e.flops /= double(e.steps);
  return e;
}

SpanRow span(int64_t step, int rank, const char* stream, const char* name, const char* category, double start,
             double duration, int layer) {
  SpanRow s;
  s.step = step;
  s.rank = rank;
  s.stream = stream;
  s.name = name;
  s.category = category;
  s.start = start;
  s.duration = duration;
  s.layer = layer;
  return s;
}

// A 2-rank run of the fixture's config in `store`.
RunInfo two_rank_run(RunStore& store, const char* name) {
  RunInfo info;
  info.name = name;
  info.ranks = 2;
  info.config_json = fx::configJson();
  return store.create_run(info);
}

}  // namespace

class TestDdlRoofline : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    m_store = std::make_unique<RunStore>(fx::write(m_dir).toStdString());
  }

  void hand_computed_layer() {
    // Run "ec" (variant 0), MoE layer 0. D = stepMs / 1000 = (20 + (step - 1) % 2) ms; steps 2..6
    // give 21, 20, 21, 20, 21 -> mean D = 20.6 ms.
    //   Lat_comp = 0.12 * 20.6 ms = 2.472 ms, Lat_comm = 0.05 * 20.6 = 1.03 ms,
    //   Lat_e2e = 0.15 * 20.6 = 3.09 ms, R_CC = 2.472 / 1.03 = 2.4.
    // Routing of layer 0 in step s: sum over ranks r, experts e of 8 + e + r + (s - 1) % 3
    //   = 16*8 + 4*6 + 4*6 + 16*((s - 1) % 3) = 176 + 16 ((s - 1) % 3); over steps 2..6: 1,2,0,1,2
    //   -> mean 176 + 16 * 1.2 = 195.2 assignments.
    // FLOPs = 12 * a * H^2 * 195.2 = 12 * 2 * 1024 * 195.2 = 4,797,235.2 per step.
    // P-bar = 4,797,235.2 / (4 ranks * 3.09 ms) = 0.38812582524 GFLOP/s.
    const RunInfo ec = m_store->find_run("ec");
    const auto points = ddl_roofline_points(*m_store, ec);
    QCOMPARE(points.size(), size_t(3));  // layers 0, 1 and the whole run
    const DdlPoint& p = points[0];
    QCOMPARE(p.layer, 0);
    QVERIFY2(p.has_point(), p.reason.c_str());
    QCOMPARE(p.steps_used, int64_t(5));
    QVERIFY(p.warmup_excluded);
    QVERIFY(near(p.lat_comp_s, 0.002472));
    QVERIFY(near(p.lat_comm_s, 0.00103));
    QVERIFY(near(p.lat_e2e_s, 0.00309));
    QVERIFY(near(p.flops_per_step, 4797235.2));
    QVERIFY(near(p.r_cc, 2.4));
    QVERIFY(near(p.achieved_gflops, 0.38812582524, 1e-9));
    // Whole run: layer 1 has 195.2 + 24 = 219.2 assignments -> 5,387,059.2 FLOPs;
    // P-bar = (4,797,235.2 + 5,387,059.2) / (4 * 2 * 3.09 ms) = 0.41198601942 GFLOP/s.
    const DdlPoint& w = points[2];
    QCOMPARE(w.layer, -1);
    QVERIFY(near(w.lat_e2e_s, 0.00618));
    QVERIFY(near(w.r_cc, 2.4));
    QVERIFY(near(w.achieved_gflops, 0.41198601942, 1e-9));
  }

  // FasterMoE's DP (parallel.ep = 1): a layer's only communication is "expert.allreduce" of
  // its block, on stream host after the backward. The other host comm span of the layer
  // (janus.prefetch, an issue) and the dense gradient bucket labelled with it do not count.
  void expert_allreduce_is_the_layers_comm() {
    QTemporaryDir dir;
    RunStore store(dir.filePath("dp.db").toStdString());
    const RunInfo run = two_rank_run(store, "dp");
    for (int step = 1; step <= 2; ++step) {
      std::vector<SpanRow> spans;
      std::vector<RoutingRow> rows;
      for (int rank = 0; rank < 2; ++rank)
        for (int L = 0; L < 2; ++L) {
          const double t = 0.1 * L, w = rank + 2;  // w = 2 (rank 0), 3 (rank 1)
          spans.push_back(span(step, rank, "compute", "moe.experts", "compute", t, 0.001 * w, L));
          spans.push_back(span(step, rank, "compute", "moe.experts_backward", "compute", t + 0.01, 0.002 * w, L));
          spans.push_back(span(step, rank, "host", "janus.prefetch", "comm", t + 0.03, 0.05, L));
          spans.push_back(span(step, rank, "comm.inter", "grad.allreduce", "comm", t + 0.02, 0.07, L));
          spans.push_back(span(step, rank, "host", "expert.allreduce", "comm", 0.5 + t, 0.005 * (rank + 4), L));
          rows.push_back({step, L, rank, 0, 10});
        }
      store.log_step(run.id, {}, spans, {}, rows);
    }
    // Layer 0, both steps alike (2 steps: no warm-up left out):
    //   comp_w = 0.001 w + 0.002 w = 0.003 w -> 0.006, 0.009: Lat_comp = 0.009
    //   comm_w = the all-reduce 0.005 (rank + 4) -> 0.020, 0.025: Lat_comm = 0.025
    //   e2e_w  = [0, 0.001w) + [0.01, 0.01 + 0.002w) + [0.5, 0.5 + comm_w), disjoint:
    //            0.002 + 0.004 + 0.020 = 0.026, 0.003 + 0.006 + 0.025 = 0.034: Lat_e2e = 0.034
    //   R_CC = 0.009 / 0.025 = 0.36; FLOPs = 12 x 2 x 32^2 x 20 = 491,520;
    //   P-bar = 491,520 / (2 x 0.034) / 1e9 = 0.00722823529 GFLOP/s.
    const auto points = ddl_roofline_points(store, run);
    QCOMPARE(points.size(), size_t(3));
    const DdlPoint& p = points[0];
    QCOMPARE(p.layer, 0);
    QVERIFY2(p.has_point(), p.reason.c_str());
    QCOMPARE(p.steps_used, int64_t(2));
    QVERIFY(near(p.lat_comp_s, 0.009));
    QVERIFY(near(p.lat_comm_s, 0.025));
    QVERIFY(near(p.lat_e2e_s, 0.034));
    QVERIFY(near(p.r_cc, 0.36));
    QVERIFY(near(p.achieved_gflops, 491520.0 / (2 * 0.034) / 1e9));
    QVERIFY2(points[2].has_point(), points[2].reason.c_str());
    QVERIFY(near(points[2].lat_comm_s, 2 * 0.025));
    QVERIFY(moe_block_task("expert.allreduce"));
    QVERIFY(!moe_block_task("grad.allreduce"));
    QVERIFY(!moe_block_task("grad.reduce_scatter"));  // storage.dense = "zero3": its bucket and gather
    QVERIFY(!moe_block_task("dense.allgather"));
  }

  void all_runs_from_generators_data() {
    QTest::addColumn<int>("variant");
    for (int v = 0; v < 3; ++v) QTest::newRow(fx::kRunNames[v]) << v;
  }
  void all_runs_from_generators() {
    QFETCH(int, variant);
    const RunInfo run = m_store->find_run(fx::kRunNames[variant]);
    const auto points = ddl_roofline_points(*m_store, run);
    QCOMPARE(points.size(), size_t(fx::kLayers + 1));
    Expected sum;
    for (int L = 0; L < fx::kLayers; ++L) {
      const DdlPoint& p = points[size_t(L)];
      const Expected e = expected(variant, L);
      QCOMPARE(p.layer, L);
      QCOMPARE(p.run_id, run.id);
      QCOMPARE(p.run_name, run.name);
      QVERIFY2(p.has_point(), p.reason.c_str());
      QCOMPARE(p.steps_used, e.steps);
      QVERIFY(near(p.lat_comp_s, e.comp));
      QVERIFY(near(p.lat_comm_s, e.comm));
      QVERIFY(near(p.lat_e2e_s, e.e2e));
      QVERIFY(near(p.flops_per_step, e.flops));
      QVERIFY(near(p.r_cc, e.comp / e.comm));
      QVERIFY(near(p.achieved_gflops, e.flops / (fx::kRanks * e.e2e) / 1e9));
      sum.comp += e.comp;
      sum.comm += e.comm;
      sum.e2e += e.e2e;
      sum.flops += e.flops;
    }
    const DdlPoint& w = points.back();
    QCOMPARE(w.layer, -1);
    QVERIFY2(w.has_point(), w.reason.c_str());
    QCOMPARE(w.steps_used, int64_t(5));
    QVERIFY(near(w.lat_comp_s, sum.comp));
    QVERIFY(near(w.lat_comm_s, sum.comm));
    QVERIFY(near(w.lat_e2e_s, sum.e2e));
    QVERIFY(near(w.flops_per_step, sum.flops));
    QVERIFY(near(w.r_cc, sum.comp / sum.comm));
    QVERIFY(near(w.achieved_gflops, sum.flops / (fx::kRanks * sum.e2e) / 1e9));
  }

  void curves_data() {
    QTest::addColumn<double>("r");
    QTest::addColumn<double>("ideal");
    QTest::addColumn<double>("semi");
    // P_w = 100: ideal = 100 min(1, R); semi-ideal = 100 R / (R + 1)
    QTest::newRow("R=0.5") << 0.5 << 50.0 << 100.0 / 3.0;  // 50 / 1.5
    QTest::newRow("R=1") << 1.0 << 100.0 << 50.0;
    QTest::newRow("R=4") << 4.0 << 100.0 << 80.0;            // 400 / 5
  }
  void curves() {
    QFETCH(double, r);
    QFETCH(double, ideal);
    QFETCH(double, semi);
    QVERIFY(near(ddl_ideal_gflops(r, 100.0), ideal));
    QVERIFY(near(ddl_semi_ideal_gflops(r, 100.0), semi));
  }

  void stored_peak() {
    QCOMPARE(ddl_stored_peak_gflops(*m_store, m_store->find_run("ec")), std::optional<double>(fx::kPeakGflops));
    QCOMPARE(ddl_stored_peak_gflops(*m_store, m_store->find_run("hier")), std::optional<double>(fx::kPeakGflops));
    QVERIFY(!ddl_stored_peak_gflops(*m_store, m_store->find_run("dc")).has_value());
    QCOMPARE(ddl_stored_peak_source(*m_store, m_store->find_run("dc")), std::string());
    RunInfo r;
    r.id = 7;
    r.name = "x";
    QCOMPARE(ddl_parse_peak_gflops(" 12.5 ", r), 12.5);
    for (const char* bad : {"fast", "", "12 GF", "-3", "0", "nan", "inf"}) {
      try {
        ddl_parse_peak_gflops(bad, r);
        QFAIL(qPrintable(QString("accepted '%1'").arg(bad)));
      } catch (const std::invalid_argument& e) {
        const std::string msg = e.what();
        QVERIFY2(msg.find("run 'x' (id 7)") != std::string::npos, e.what());
        QVERIFY2(msg.find(std::string("'") + bad + "'") != std::string::npos, e.what());
      }
    }
  }

  void missing_data_gives_reasons() {
    // The fixture's "broken" run has no spans at all.
    const auto broken = ddl_roofline_points(*m_store, m_store->find_run("broken"));
    QCOMPARE(broken.size(), size_t(1));
    QVERIFY(!broken[0].has_point());
    QCOMPARE(broken[0].layer, -1);
    QVERIFY2(broken[0].reason.find("no spans") != std::string::npos, broken[0].reason.c_str());
    QVERIFY(std::isnan(broken[0].r_cc));

    QTemporaryDir dir;
    RunStore store(dir.filePath("own.db").toStdString());
    auto make = [&](const char* name, bool comm, double comm_duration, bool routing, int steps) {
      const RunInfo run = two_rank_run(store, name);
      for (int step = 1; step <= steps; ++step) {
        std::vector<SpanRow> spans;
        std::vector<RoutingRow> rows;
        for (int rank = 0; rank < 2; ++rank)
          for (int L = 0; L < 2; ++L) {
            // layer 1 always complete; layer 0 lacks what the run is about
            spans.push_back(span(step, rank, "compute", "moe.experts", "compute", 0.1 * L, 0.002 * (rank + 1), L));
            if (comm || L == 1)
              spans.push_back(span(step, rank, "compute.comm", "moe.dispatch", "comm", 0.1 * L + 0.01,
                                   L == 1 ? 0.001 : comm_duration, L));
            if (routing || L == 1) rows.push_back({step, L, rank, 0, 10});
          }
        store.log_step(run.id, {}, spans, {}, rows);
      }
      return ddl_roofline_points(store, run);
    };
    const auto no_comm = make("no_comm", false, 0, true, 3);
    QCOMPARE(no_comm.size(), size_t(3));
    QVERIFY(!no_comm[0].has_point());
    QVERIFY2(no_comm[0].reason.find("no communication spans") != std::string::npos, no_comm[0].reason.c_str());
    QVERIFY2(no_comm[1].has_point(), no_comm[1].reason.c_str());
    QVERIFY(!no_comm[2].has_point());  // the whole run needs every layer
    QVERIFY2(no_comm[2].reason.find("MoE layer 0 has no point") != std::string::npos, no_comm[2].reason.c_str());

    const auto zero_comm = make("zero_comm", true, 0.0, true, 3);
    QVERIFY(!zero_comm[0].has_point());
    QVERIFY2(zero_comm[0].reason.find("zero") != std::string::npos, zero_comm[0].reason.c_str());

    const auto no_routing = make("no_routing", true, 0.001, false, 3);
    QVERIFY(!no_routing[0].has_point());
    QVERIFY2(no_routing[0].reason.find("routing") != std::string::npos, no_routing[0].reason.c_str());

    // Two steps: no warm-up step left out. Layer 1: comp = max(0.002, 0.004) = 0.004,
    // comm = 0.001, e2e = 0.004 + 0.001 (disjoint: [0.1, 0.104) and [0.11, 0.111)) = 0.005,
    // R = 4; FLOPs = 12 * 2 * 32^2 * 20 = 491,520; P-bar = 491,520 / (2 * 0.005) = 0.049152 GF/s.
    const auto two = make("two_steps", true, 0.001, true, 2);
    QCOMPARE(two[1].steps_used, int64_t(2));
    QVERIFY(!two[1].warmup_excluded);
    QVERIFY(near(two[1].r_cc, 4.0));
    QVERIFY(near(two[1].lat_e2e_s, 0.005));
    QVERIFY(near(two[1].achieved_gflops, 0.049152));
    QVERIFY2(two[2].has_point(), two[2].reason.c_str());

    // A run with spans but no config: the FLOPs cannot be counted.
    RunInfo bare;
    bare.name = "bare";
    bare.ranks = 2;
    const RunInfo b = store.create_run(bare);
    store.log_step(b.id, {}, {span(0, 0, "compute", "moe.experts", "compute", 0, 0.001, 0)}, {}, {{0, 0, 0, 0, 4}});
    const auto bp = ddl_roofline_points(store, b);
    QCOMPARE(bp.size(), size_t(2));
    QVERIFY2(bp[0].reason.find("model.hidden") != std::string::npos, bp[0].reason.c_str());
  }

  // Spans with recorded FLOPs (store schema 3): a step's FLOPs are the sum of its compute spans'
  // flops over the ranks, whatever the routing says; steps without them fall back to the routing.
  void recorded_flops_replace_the_estimate() {
    QTemporaryDir dir;
    RunStore store(dir.filePath("flops.db").toStdString());
    const RunInfo run = two_rank_run(store, "flops");
    for (int step = 1; step <= 2; ++step) {
      std::vector<SpanRow> spans;
      for (int rank = 0; rank < 2; ++rank) {
        SpanRow experts = span(step, rank, "compute", "moe.experts", "compute", 0, 0.002, 0);
        SpanRow backward = span(step, rank, "compute", "moe.experts_backward", "compute", 0.003, 0.002, 0);
        experts.flops = step == 1 ? 1e6 * (rank + 1) : 0;  // step 2 recorded none
        backward.flops = step == 1 ? 2e6 * (rank + 1) : 0;
        spans.push_back(experts);
        spans.push_back(backward);
        spans.push_back(span(step, rank, "compute.comm", "moe.dispatch", "comm", 0.0025, 0.0005, 0));
      }
      // 20 assignments: 12 * 2 * 32^2 * 20 = 491,520 FLOPs by the routing.
      store.log_step(run.id, {}, spans, {}, {{step, 0, 0, 0, 20}});
    }
    const auto points = ddl_roofline_points(store, run);
    QVERIFY2(points[0].has_point(), points[0].reason.c_str());
    // Step 1: (1 + 2) MFLOP on rank 0 + (2 + 4) on rank 1 = 9e6; step 2: 491,520.
    QVERIFY(near(points[0].flops_per_step, (9e6 + 491520.0) / 2));
    // Without routing rows only the step with recorded FLOPs counts.
    const RunInfo b = two_rank_run(store, "flops_only");
    for (int step = 1; step <= 2; ++step) {
      SpanRow experts = span(step, 0, "compute", "moe.experts", "compute", 0, 0.002, 0);
      experts.flops = step == 1 ? 5e6 : 0;
      store.log_step(b.id, {}, {experts, span(step, 0, "compute.comm", "moe.dispatch", "comm", 0.0025, 0.0005, 0)},
                     {}, {});
    }
    const auto only = ddl_roofline_points(store, b);
    QVERIFY2(only[0].has_point(), only[0].reason.c_str());
    QCOMPARE(only[0].steps_used, int64_t(1));
    QVERIFY(near(only[0].flops_per_step, 5e6));
    QVERIFY(near(only[0].achieved_gflops, 5e6 / (2 * 0.0025) / 1e9));
  }

 private:
  QTemporaryDir m_dir;
  std::unique_ptr<RunStore> m_store;
};

QTEST_APPLESS_MAIN(TestDdlRoofline)
#include "tst_ddl_roofline.moc"
