// ctest-labels: unit
// MoNTA's cost model (perf/monta_model.h) against the paper's own numbers (monta.txt): Table 8
// (2 nodes x 8 A800, IB 200 Gb/s = 25 GB/s, NVLink 200 GB/s one way, 2x70B at 8K: I = 256 MB,
// t = 8, e = 2; the copy at 1.6 TB/s so that 64 MB at 80 % take 0.05 ms), the Discussion's
// ratios (eq. 13-16, each against a baseline taken at the optimised AllToAll's efficiency), the
// chunk search (Algorithms 1-2: the fastest N, stopped by I_minimal) and the level choice
// (Algorithm 3), and the efficiency curves.
#include <QtTest>

#include <cmath>

#include "moebench/perf/monta_model.h"

using namespace moebench;

namespace {

// Table 8's setting with constant efficiencies r1, r2 (r3 = 0.8).
MontaInputs table8(double r1, double r2) {
  MontaInputs in;
  in.I = 256e6;
  in.t = 8;
  in.e = 2;
  in.B1 = 25e9;
  in.B2 = 200e9;
  in.B3 = 1.6e12;
  in.r1 = [r1](double) { return r1; };
  in.r2 = [r2](double) { return r2; };
  in.r3 = [](double) { return 0.8; };
  return in;
}

// The efficiencies the paper quotes, as curves by bytes: AllToAll 42.7 % at 8 MB, 63.2 % at
// 32 MB, 74.1 % at 256 MB; AllGather 72.6 % at 64 MB, 77.6 % at 256 MB.
MontaInputs table8_curves() {
  MontaInputs in = table8(1, 1);
  in.r1 = efficiency_curve({{8e6, 0.427}, {32e6, 0.632}, {256e6, 0.741}});
  in.r2 = efficiency_curve({{64e6, 0.726}, {256e6, 0.776}});
  return in;
}

double ms(double s) { return s * 1e3; }

}  // namespace

class TestMontaModel : public QObject {
  Q_OBJECT

 private slots:
  // Table 8: baseline 6.909 ms; O1 1.012 + 1.443 ms; per chunk of 4: 0.374 / 0.385 / 0.05 ms.
  void table_8_latencies() {
    const MontaInputs in = table8_curves();
    QVERIFY(std::abs(ms(monta_seconds(in, MontaLevel::baseline)) - 6.909) < 0.001);
    const MontaChunkTimes one = monta_chunk_times(in, 1);  // O1's two operations
    QVERIFY2(std::abs(ms(one.aa) - 1.012) < 0.002, qPrintable(QString::number(ms(one.aa))));
    QVERIFY2(std::abs(ms(one.ag) - 1.443) < 0.001, qPrintable(QString::number(ms(one.ag))));
    QVERIFY(std::abs(ms(monta_seconds(in, MontaLevel::O1)) - (ms(one.aa) + ms(one.ag))) < 1e-9);
    const MontaChunkTimes four = monta_chunk_times(in, 4);
    QVERIFY2(std::abs(ms(four.aa) - 0.374) < 0.001, qPrintable(QString::number(ms(four.aa))));
    QVERIFY2(std::abs(ms(four.ag) - 0.385) < 0.001, qPrintable(QString::number(ms(four.ag))));
    QVERIFY2(std::abs(ms(four.d2d) - 0.05) < 1e-6, qPrintable(QString::number(ms(four.d2d))));
  }

  // eq. 13: T_O3 / T_base -> 7/32 = 0.21 with r1 = r2 (AA_j / AG_j = 4/7); eq. 14-16 at 8K:
  // O1 0.30 (r1 = 0.632, r2 = 0.776), O2 0.176 and O3 0.164 with 4 chunks (r1 = 0.427,
  // r2 = 0.726), each against the baseline at the same r1.
  void discussion_ratios() {
    QVERIFY(std::abs(monta_speedup_bound(table8(0.75, 0.75)) - 7.0 / 32) < 1e-12);
    const MontaChunkTimes c = monta_chunk_times(table8(0.75, 0.75), 1);
    QVERIFY(std::abs(c.aa / c.ag - 4.0 / 7) < 1e-12);  // eq. 12
    const MontaInputs o1 = table8(0.632, 0.776);
    const double r14 = monta_seconds(o1, MontaLevel::O1) / monta_seconds(o1, MontaLevel::baseline);
    QVERIFY2(std::abs(r14 - 0.30) < 0.01, qPrintable(QString::number(r14)));
    const MontaInputs o23 = table8(0.427, 0.726);
    const double base = monta_seconds(o23, MontaLevel::baseline);
    const double r15 = monta_seconds(o23, MontaLevel::O2, 4) / base, r16 = monta_seconds(o23, MontaLevel::O3, 4) / base;
    QVERIFY2(std::abs(r15 - 0.176) < 0.001, qPrintable(QString::number(r15)));
    QVERIFY2(std::abs(r16 - 0.164) < 0.001, qPrintable(QString::number(r16)));
  }

  // Algorithm 1 / 2 lines 13-17: the pipelined time is bounded by the longer stream.
  void pipelined_time_by_the_longer_stream() {
    const MontaInputs in = table8(0.5, 0.5);
    const MontaChunkTimes c = monta_chunk_times(in, 3);
    QVERIFY(c.aa < c.ag);
    QCOMPARE(monta_seconds(in, MontaLevel::O2, 3), c.aa + 3 * (c.ag + c.d2d));
    QCOMPARE(monta_seconds(in, MontaLevel::O3, 3), c.aa + 3 * c.ag + c.d2d);
    MontaInputs slow_net = in;  // AllToAll the longer: N AllToAlls plus the last chunk's rest
    slow_net.B1 = 1e9;
    const MontaChunkTimes s = monta_chunk_times(slow_net, 3);
    QVERIFY(s.aa > s.ag + s.d2d);
    QCOMPARE(monta_seconds(slow_net, MontaLevel::O2, 3), 3 * s.aa + s.ag + s.d2d);
    QCOMPARE(monta_seconds(slow_net, MontaLevel::O3, 3), 3 * s.aa + s.ag + s.d2d);
  }

  // With constant efficiencies more chunks always overlap more: the search runs until a
  // chunk's AllToAll volume I/(N t) falls below I_minimal. With a link's latency the search
  // finds an interior optimum.
  void chunk_search_stops_at_i_minimal() {
    MontaInputs in = table8(0.7, 0.7);
    in.I_minimal = 4e6;  // I/(N t) >= 4 MB: N <= 8
    const MontaChoice c = monta_best_chunks(in, MontaLevel::O3);
    QCOMPARE(c.chunks, 8);
    QCOMPARE(c.seconds, monta_seconds(in, MontaLevel::O3, 8));
    MontaInputs lat = table8(1, 1);
    lat.r1 = link_efficiency(lat.B1, 20e-6, 1, 0.5);  // 20 us a message
    lat.r2 = link_efficiency(lat.B2, 20e-6, 7, 7.0 / 8);
    const MontaChoice best = monta_best_chunks(lat, MontaLevel::O2);
    QVERIFY2(best.chunks > 1 && best.chunks < 64, qPrintable(QString::number(best.chunks)));
    for (int n : {1, best.chunks - 1, best.chunks + 1, 64})
      QVERIFY(monta_seconds(lat, MontaLevel::O2, n) >= best.seconds);
  }

  // Algorithm 3: O1 when the volume is small (fixed latencies make chunks cost more than they
  // hide), a pipelined level when it is large; never the baseline.
  void strategy_select_by_volume() {
    MontaInputs in = table8(1, 1);
    in.r1 = link_efficiency(in.B1, 50e-6, 1, 0.5);
    in.r2 = link_efficiency(in.B2, 50e-6, 7, 7.0 / 8);
    in.I = 2e6;
    QCOMPARE(monta_level_name(monta_select(in).level), "O1");
    in.I = 8e9;
    const MontaChoice big = monta_select(in);
    QVERIFY(big.level == MontaLevel::O2 || big.level == MontaLevel::O3);
    QVERIFY(big.chunks > 1);
    QVERIFY(big.seconds < monta_seconds(in, MontaLevel::O1));
  }

  void efficiency_curves() {
    const Efficiency r = efficiency_curve({{1e6, 0.2}, {1e8, 0.8}});
    QCOMPARE(r(1e3), 0.2);  // clamped
    QCOMPARE(r(1e9), 0.8);
    QVERIFY(std::abs(r(1e7) - 0.5) < 1e-12);  // halfway in log10(bytes)
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, efficiency_curve({}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, efficiency_curve({{1e6, 0.2}, {1e5, 0.8}}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, efficiency_curve({{1e6, 1.5}}));
    const Efficiency link = link_efficiency(1e9, 1e-5, 1, 1.0);  // 10 KB take as long as the latency
    QVERIFY(std::abs(link(1e4) - 0.5) < 1e-12);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, monta_chunk_times(table8(1, 1), 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, monta_level_from_name("O4"));
  }
};

QTEST_APPLESS_MAIN(TestMontaModel)
#include "tst_monta_model.moc"
