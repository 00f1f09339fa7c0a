// ctest-labels: gui
// The Metrics view as a researcher reads it (issue 35, point 4), on the fixture store
// (tests/gui_fixture.h): axis titles with the metric's unit (bytes scaled), the warm-up step
// left out of the default y range, TensorBoard's debiased smoothing, a log axis, a legend with
// every run's full name in the run's own colour and a check box that hides its line, hover
// values with units, zoom and fit; the metric units, scales, smoothing and range rules by hand.
#include <QtTest>

#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QListWidget>
#include <QLogValueAxis>
#include <QValueAxis>

#include <cmath>

#include "gui_fixture.h"
#include "models/metricunits.h"
#include "models/runcolors.h"
#include "models/seriesmath.h"
#include "widgets/metricchartview.h"

using namespace moebench;
using namespace moebench::gui;
namespace fx = moebench::test::gui_fixture;

class TestGuiMetricsView : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;
  std::shared_ptr<RunStore> m_store;
  std::vector<int64_t> m_ids;  // ec, hier, dc

 private slots:
  void initTestCase() {
    const QString path = fx::write(m_dir);
    {  // bytes for the unit test: 2.5 MB per step on "ec", 1.5 on "hier"
      RunStore w(path.toStdString());
      w.log_step(w.find_run("ec").id, {{"bytes_inter", 7, 2.5e6, 0}}, {}, {}, {});
      w.log_step(w.find_run("hier").id, {{"bytes_inter", 7, 1.5e6, 0}}, {}, {}, {});
    }
    m_store = std::make_shared<RunStore>(path.toStdString(), RunStore::Mode::read_only);
    for (const char* n : fx::kRunNames) m_ids.push_back(m_store->find_run(n).id);
  }

  void rules_by_hand() {
    QCOMPARE(metricUnit("step_ms", false).title, QString("step time (ms)"));
    QCOMPARE(metricUnit("bytes_inter", false).title, QString("bytes sent inter-node per step, rank 0"));
    QCOMPARE(metricUnit("bytes_inter", true).title, QString("bytes sent inter-node per step, all ranks"));
    QCOMPARE(metricUnit("tokens_per_s", false).kind, MetricKind::tokensPerSecond);
    QCOMPARE(metricUnit("my_key", false).title, QString("my_key"));
    QCOMPARE(axisScale(MetricKind::bytes, 6e6).unit, QString("MB"));
    QCOMPARE(axisScale(MetricKind::bytes, 6e6).divisor, 1e6);
    QCOMPARE(axisScale(MetricKind::bytes, 999).unit, QString("B"));
    QCOMPARE(axisScale(MetricKind::bytes, 2e9).unit, QString("GB"));
    QCOMPARE(axisScale(MetricKind::milliseconds, 2e9).divisor, 1.0);
    QCOMPARE(formatMetricValue(MetricKind::milliseconds, 12.345), QString("12.3 ms"));
    QCOMPARE(formatMetricValue(MetricKind::milliseconds, 2.345), QString("2.35 ms"));
    QCOMPARE(formatMetricValue(MetricKind::tokensPerSecond, 48200.4), QString("48,200 tokens/s"));
    QCOMPARE(formatMetricValue(MetricKind::bytes, 2.5e6), QString("2.50 MB"));
    // Debiased EMA, w = 0.5: m = 1, 2.5, 4.25 over (1 - 0.5^k) = 0.5, 0.75, 0.875: 2, 3.333.., 4.857..
    const auto s = smoothEma({2, 4, 6}, 0.5);
    QCOMPARE(s.size(), size_t(3));
    QVERIFY(std::fabs(s[0] - 2.0) < 1e-12);
    QVERIFY(std::fabs(s[1] - 2.5 / 0.75) < 1e-12);
    QVERIFY(std::fabs(s[2] - 4.25 / 0.875) < 1e-12);
    QCOMPARE(smoothEma({2, 4, 6}, 0), (std::vector<double>{2, 4, 6}));
    // The warm-up (first of more than 2 points) is out of the default range; 2 points keep both.
    const auto r = defaultRange({{{1, 100}, {2, 10}, {3, 12}}, {{1, 50}, {2, 8}}});
    QVERIFY(r && r->first == 8 && r->second == 50);
    QVERIFY(!defaultRange({{{1, NAN}}}));
    QVERIFY(runColor(1) != runColor(2));
    QCOMPARE(runColor(5), runColor(5));
    QVERIFY(runColor(1) != runColor(13));  // the same hue, darker
  }

  void chart_reads_as_a_researcher_expects() {
    MetricChartView view;
    view.resize(1000, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setRuns(m_store, m_ids);
    view.setMetric("step_ms");
    QChart* chart = view.chartView()->chart();
    QCOMPARE(chart->series().size(), 3);
    QCOMPARE(view.yTitle(), QString("step time (ms)"));
    // Legend: every run's full name, its colour, checked.
    QCOMPARE(view.legend()->count(), 3);
    for (int i = 0; i < 3; ++i) {
      const QListWidgetItem* item = view.legend()->item(i);
      QCOMPARE(item->text(), QString("#%1 %2").arg(m_ids[size_t(i)]).arg(fx::kRunNames[i]));
      QCOMPARE(item->data(Qt::DecorationRole).value<QColor>(), runColor(m_ids[size_t(i)]));
      QCOMPARE(item->checkState(), Qt::Checked);
      auto* line = qobject_cast<QLineSeries*>(chart->series()[i]);
      QCOMPARE(line->pen().color(), runColor(m_ids[size_t(i)]));
      QCOMPARE(line->count(), fx::kSteps);
    }
    // The default range: steps 2..6 of every run (stepMs(v, s) = 20 - 4v + (s-1)%2: 12 .. 21),
    // padded 5 %; the warm-up is not special in this fixture, so check the padding rule.
    const auto [lo, hi] = view.yRange();
    QVERIFY(std::fabs(lo - (12 - 0.45)) < 1e-9 && std::fabs(hi - (21 + 0.45)) < 1e-9);
    // Hover: run, step, value with its unit.
    QCOMPARE(view.hoverText(0, 2), QString("#%1 ec\nstep 2: 21.0 ms").arg(m_ids[0]));
    QCOMPARE(view.hoverText(0, 99), QString());
    // Hide "hier": its line goes, the legend keeps it unticked; show it again.
    view.setRunVisible(m_ids[1], false);
    QCOMPARE(chart->series().size(), 2);
    QCOMPARE(view.legend()->item(1)->checkState(), Qt::Unchecked);
    view.setRunVisible(m_ids[1], true);
    QCOMPARE(chart->series().size(), 3);
    // Smoothing: a pale raw line behind each smoothed one, the smoothed values debiased EMA.
    view.setSmoothing(0.5);
    QCOMPARE(chart->series().size(), 6);
    auto* smooth = qobject_cast<QLineSeries*>(chart->series()[1]);
    std::vector<double> raw;
    for (int s = 1; s <= fx::kSteps; ++s) raw.push_back(fx::stepMs(0, s));
    const auto want = smoothEma(raw, 0.5);
    for (int i = 0; i < smooth->count(); ++i) QVERIFY(std::fabs(smooth->at(i).y() - want[size_t(i)]) < 1e-9);
    QVERIFY(qobject_cast<QLineSeries*>(chart->series()[0])->pen().color().alpha() < 255);
    view.setSmoothing(0);
    // Log axis.
    view.setLogScale(true);
    QVERIFY(qobject_cast<QLogValueAxis*>(chart->axes(Qt::Vertical).value(0)));
    view.setLogScale(false);
    QVERIFY(qobject_cast<QValueAxis*>(chart->axes(Qt::Vertical).value(0)));
    // Zoom in, then Fit gives the default range back.
    chart->zoomIn(QRectF(100, 100, 50, 50));
    view.fit();
    auto* y = qobject_cast<QValueAxis*>(chart->axes(Qt::Vertical).value(0));
    QVERIFY(y->min() <= 12 - 0.45 + 1e-9 && y->max() >= 21 + 0.45 - 1e-9);
    // Bytes: scaled to MB on the axis, the title says whose bytes.
    view.setMetric("bytes_inter");
    QCOMPARE(view.yTitle(), QString("bytes sent inter-node per step, rank 0 (MB)"));
    auto* ec = qobject_cast<QLineSeries*>(chart->series()[0]);
    QCOMPARE(ec->count(), 1);
    QCOMPARE(ec->at(0).y(), 2.5);
    QCOMPARE(view.hoverText(0, 7), QString("#%1 ec\nstep 7: 2.50 MB").arg(m_ids[0]));
  }
};

QTEST_MAIN(TestGuiMetricsView)
#include "tst_gui_metrics_view.moc"
