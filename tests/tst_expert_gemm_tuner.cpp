// ctest-labels: unit
// The experts' GEMM path choice (kernels/expert_gemm_tuner.h), plain C++ on every machine: a
// class is measured kRounds times per path, alternating, and keeps the path whose measurements
// after the warm-up round were fastest; classes are independent; a class without room to measure
// keeps what it was settled on; the names parse back.
#include <QtTest>

#include "moebench/kernels/expert_gemm_tuner.h"

using namespace moebench::cuda;

namespace {

ExpertGemmShape shape(int E, bool backward = false, long rows = 4096) {
  return ExpertGemmShape{0, 2, E, 1024, 4096, backward, rows_log2(rows)};
}

// Hands out the measured calls of a class and reports `seconds(path, round)` for each; returns
// the paths in the order they were handed out.
template <class Seconds>
std::vector<ExpertGemmPath> measure(ExpertGemmTuner& t, const ExpertGemmShape& s, Seconds seconds) {
  std::vector<ExpertGemmPath> order;
  int round[3] = {0, 0, 0};
  bool m = false;
  for (ExpertGemmPath p = t.next(s, m); m; p = t.next(s, m)) {
    order.push_back(p);
    t.report(s, p, seconds(p, round[(int)p]++));
  }
  return order;
}

}  // namespace

class TestExpertGemmTuner : public QObject {
  Q_OBJECT

 private slots:
  void alternates_then_keeps_the_faster() {
    ExpertGemmTuner t;
    const auto order = measure(t, shape(8), [](ExpertGemmPath p, int) { return p == ExpertGemmPath::grouped ? 2.0 : 1.0; });
    std::vector<ExpertGemmPath> want;
    for (int r = 0; r < ExpertGemmTuner::kRounds; ++r)
      want.insert(want.end(), {ExpertGemmPath::grouped, ExpertGemmPath::per_expert});
    QCOMPARE(order, want);
    QVERIFY(ExpertGemmTuner::kRounds >= 3);  // at least two rounds after the warm-up are compared
    QCOMPARE(t.decided(shape(8)), std::optional<ExpertGemmPath>(ExpertGemmPath::per_expert));
    bool m = true;
    QCOMPARE(t.next(shape(8), m), ExpertGemmPath::per_expert);
    QVERIFY(!m);
    QCOMPARE(t.seconds(shape(8), ExpertGemmPath::grouped), std::vector<double>(ExpertGemmTuner::kRounds, 2.0));
  }

  // A slow first round (cuBLAS loading its kernels) does not decide: only the later ones count.
  void the_warm_up_round_is_left_out() {
    ExpertGemmTuner t;
    measure(t, shape(64), [](ExpertGemmPath p, int round) {
      if (p == ExpertGemmPath::grouped) return round == 0 ? 9.0 : 1.0;
      return round == 0 ? 0.5 : 1.5;
    });
    QCOMPARE(t.decided(shape(64)), std::optional<ExpertGemmPath>(ExpertGemmPath::grouped));
  }

  // One slow later round (another kernel on the GPU) does not decide either: the minimum of the
  // later rounds counts (their mean would pick per_expert here).
  void a_spike_after_the_warm_up_is_left_out() {
    ExpertGemmTuner t;
    measure(t, shape(32), [](ExpertGemmPath p, int round) {
      if (round == 0) return 5.0;
      if (p == ExpertGemmPath::per_expert) return 1.2;
      return round == 1 ? 1.0 : 3.0;
    });
    QCOMPARE(t.decided(shape(32)), std::optional<ExpertGemmPath>(ExpertGemmPath::grouped));
  }

  // Forward and backward, expert counts and row scales are classes of their own.
  void classes_are_independent() {
    ExpertGemmTuner t;
    measure(t, shape(8), [](ExpertGemmPath p, int) { return p == ExpertGemmPath::grouped ? 1.0 : 2.0; });
    QVERIFY(!t.decided(shape(8, true)));
    QVERIFY(!t.decided(shape(8, false, 1 << 20)));
    QVERIFY(!t.decided(shape(16)));
    measure(t, shape(8, true), [](ExpertGemmPath p, int) { return p == ExpertGemmPath::grouped ? 2.0 : 1.0; });
    QCOMPARE(t.decided(shape(8)), std::optional<ExpertGemmPath>(ExpertGemmPath::grouped));
    QCOMPARE(t.decided(shape(8, true)), std::optional<ExpertGemmPath>(ExpertGemmPath::per_expert));
    QCOMPARE(rows_log2(4096), 12);
    QCOMPARE(rows_log2(4095), 11);
    QCOMPARE(rows_log2(0), 0);
  }

  void settled_without_measuring() {
    ExpertGemmTuner t;
    bool m = false;
    QCOMPARE(t.next(shape(8), m), ExpertGemmPath::grouped);
    QVERIFY(m);
    t.settle(shape(8), ExpertGemmPath::grouped);
    QCOMPARE(t.next(shape(8), m), ExpertGemmPath::grouped);
    QVERIFY(!m);
    QVERIFY(t.seconds(shape(8), ExpertGemmPath::per_expert).empty());
  }

  void names_parse_back() {
    for (ExpertGemmPath p : {ExpertGemmPath::automatic, ExpertGemmPath::grouped, ExpertGemmPath::per_expert})
      QCOMPARE(parse_expert_gemm_path(expert_gemm_path_name(p)), std::optional<ExpertGemmPath>(p));
    QVERIFY(!parse_expert_gemm_path("cutlass"));
  }
};

QTEST_APPLESS_MAIN(TestExpertGemmTuner)
#include "tst_expert_gemm_tuner.moc"
