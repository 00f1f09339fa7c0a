// ctest-labels: gui
// RooflineModel (QAbstractItemModelTester, measured and predicted rows: values from the fixture's
// generator functions and by hand, stored vs entered peaks), the roofline geometry (decade
// ranges, arrow polylines), and RooflineView rendered headless on the fixture (series, arrows
// from predicted to measured, axis ranges covering the points, entered peak changing the curves
// of "dc", messages) and on a small store with a simulated run.
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QChart>
#include <QDoubleSpinBox>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>

#include <cmath>
#include <memory>

#include "gui_fixture.h"
#include "models/rooflinegeometry.h"
#include "models/rooflinemodel.h"
#include "moebench/perf/ddl_prediction.h"
#include "moebench/perf/ddl_roofline.h"
#include "moebench/store/run_store.h"
#include "models/runcolors.h"
#include "widgets/chartlegendlist.h"
#include "models/runcolors.h"
#include "widgets/chartlegendlist.h"
#include "widgets/rooflineview.h"

using namespace moebench;
namespace fx = moebench::test::gui_fixture;

namespace {

bool near(double a, double b, double rel = 1e-9) { return std::abs(a - b) <= rel * std::max(std::abs(b), 1e-300); }

// The fixture's points (see tst_ddl_roofline.cpp for the derivation): per step, in units of
// D = stepMs / 1000: Lat_comp = 0.12 D, Lat_comm = 0.05 D, Lat_e2e = 0.15 D; steps 2..6.
double meanD(int variant) {
  double d = 0;
  for (int step = 2; step <= fx::kSteps; ++step) d += fx::stepMs(variant, step) / 1000.0;
  return d / (fx::kSteps - 1);
}
double meanFlops(int layer) {
  double f = 0;
  for (int step = 2; step <= fx::kSteps; ++step)
    for (int r = 0; r < fx::kRanks; ++r)
      for (int e = 0; e < fx::kExperts; ++e)
        f += 12.0 * fx::kFfnMult * fx::kHidden * fx::kHidden * double(fx::routedTokens(step, layer, r, e));
  return f / (fx::kSteps - 1);
}

// The fixture's predicted points (perf/ddl_prediction.h; config: one node, 4 ranks, 0.12 TFLOP/s
// per device, intra-node 10 GB/s per device port, H = 32, F = 64, expert e on rank e): per step
// T[s][e] = routedTokens(step, L, s, e); eq. 1 on the busiest rank's load, eq. 2 on the busiest
// device port (rows of 32 x 4 bytes); the step's 3 compute and 4 comm rounds; means over steps
// 2..6 (step 1 is the warm-up).
struct Predicted {
  double comp = 0, comm = 0, e2e = 0, flops = 0;
};
Predicted predicted(int layer) {
  Predicted p;
  for (int step = 2; step <= fx::kSteps; ++step) {
    double maxLoad = 0, maxPort = 0, assignments = 0;
    for (int w = 0; w < fx::kRanks; ++w) {
      double load = 0, out = 0, in = 0;
      for (int o = 0; o < fx::kRanks; ++o) {
        load += double(fx::routedTokens(step, layer, o, w));
        if (o != w) out += double(fx::routedTokens(step, layer, w, o)), in += double(fx::routedTokens(step, layer, o, w));
      }
      maxLoad = std::max(maxLoad, load);
      maxPort = std::max({maxPort, out, in});
      assignments += load;
    }
    const double comp = 4 * maxLoad * fx::kHidden * fx::kFfnMult * fx::kHidden / 0.12e12;
    const double comm = maxPort * fx::kHidden * 4 / 10e9;
    p.comp += 3 * comp / (fx::kSteps - 1);
    p.comm += 4 * comm / (fx::kSteps - 1);
    p.e2e += (3 * comp + 4 * comm) / (fx::kSteps - 1);
    p.flops += 12.0 * fx::kFfnMult * fx::kHidden * fx::kHidden * assignments / (fx::kSteps - 1);
  }
  return p;
}

QList<QLineSeries*> lines(QChart* chart, const QString& prefix) {
  QList<QLineSeries*> out;
  for (QAbstractSeries* s : chart->series())
    if (s->type() == QAbstractSeries::SeriesTypeLine && s->name().startsWith(prefix))
      out << static_cast<QLineSeries*>(s);
  return out;
}

QScatterSeries* scatter(QChart* chart, const QString& name) {
  for (QAbstractSeries* s : chart->series())
    if (s->type() == QAbstractSeries::SeriesTypeScatter && s->name() == name) return static_cast<QScatterSeries*>(s);
  return nullptr;
}

}  // namespace

class TestGuiRoofline : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    m_store = std::make_shared<RunStore>(fx::write(m_dir).toStdString());
    for (const char* name : {"ec", "hier", "dc", "broken"}) m_ids.push_back(m_store->find_run(name).id);
  }

  void model_values() {
    RooflineModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRuns(m_store, m_ids);
    // 3 runs x (2 layers + whole run) x (measured, predicted) + the whole-run rows of "broken"
    // (no spans, no routing)
    QCOMPARE(model.rowCount(), 20);
    QCOMPARE(model.columnCount(), int(RooflineModel::ColumnCount));
    for (int v = 0; v < 3; ++v) {
      const double D = meanD(v);
      for (int k = 0; k < 3; ++k) {
        const int row = 6 * v + 2 * k;  // measured; the predicted row right under it
        const int layer = k < 2 ? k : -1;
        for (int r : {row, row + 1}) {
          QCOMPARE(model.index(r, RooflineModel::RunColumn).data().toString(), QString(fx::kRunNames[v]));
          QCOMPARE(model.index(r, RooflineModel::LayerColumn).data(Qt::UserRole).toInt(), layer);
          QCOMPARE(model.index(r, RooflineModel::LayerColumn).data().toString(),
                   layer < 0 ? QString("all") : QString::number(layer));
        }
        QCOMPARE(model.kindAt(row), RooflineModel::RowKind::Measured);
        QCOMPARE(model.kindAt(row + 1), RooflineModel::RowKind::Predicted);
        QCOMPARE(model.index(row, RooflineModel::KindColumn).data().toString(), QString("measured"));
        QCOMPARE(model.index(row + 1, RooflineModel::KindColumn).data().toString(), QString("predicted"));
        QCOMPARE(model.index(row + 1, RooflineModel::KindColumn).data(Qt::UserRole).toInt(),
                 int(RooflineModel::RowKind::Predicted));
        const double layers = layer < 0 ? 2.0 : 1.0;
        const double flops = layer < 0 ? meanFlops(0) + meanFlops(1) : meanFlops(layer);
        const double achieved = flops / (fx::kRanks * layers * 0.15 * D) / 1e9;
        QVERIFY(near(model.index(row, RooflineModel::RccColumn).data(Qt::UserRole).toDouble(), 2.4));
        QVERIFY(near(model.index(row, RooflineModel::AchievedColumn).data(Qt::UserRole).toDouble(), achieved));
        QVERIFY(near(model.index(row, RooflineModel::LatCompColumn).data(Qt::UserRole).toDouble(),
                     layers * 0.12 * D * 1e3));
        QVERIFY(near(model.index(row, RooflineModel::LatCommColumn).data(Qt::UserRole).toDouble(),
                     layers * 0.05 * D * 1e3));
        QVERIFY(near(model.index(row, RooflineModel::LatE2eColumn).data(Qt::UserRole).toDouble(),
                     layers * 0.15 * D * 1e3));
        // Predicted (the same routing in every run): the layer's, or the sums over both layers.
        Predicted p = layer < 0 ? predicted(0) : predicted(layer);
        if (layer < 0) {
          const Predicted q = predicted(1);
          p.comp += q.comp, p.comm += q.comm, p.e2e += q.e2e, p.flops += q.flops;
        }
        const double predictedAchieved = p.flops / (fx::kRanks * p.e2e) / 1e9;
        QVERIFY(near(model.index(row + 1, RooflineModel::RccColumn).data(Qt::UserRole).toDouble(), p.comp / p.comm));
        QVERIFY(near(model.index(row + 1, RooflineModel::AchievedColumn).data(Qt::UserRole).toDouble(),
                     predictedAchieved));
        QVERIFY(near(model.index(row + 1, RooflineModel::LatCompColumn).data(Qt::UserRole).toDouble(), p.comp * 1e3));
        QVERIFY(near(model.index(row + 1, RooflineModel::LatCommColumn).data(Qt::UserRole).toDouble(), p.comm * 1e3));
        QVERIFY(near(model.index(row + 1, RooflineModel::LatE2eColumn).data(Qt::UserRole).toDouble(), p.e2e * 1e3));
        QCOMPARE(model.stepsFromRoutingAt(row + 1), int64_t(5));
        QCOMPARE(model.stepsFromMetricsAt(row + 1), int64_t(0));
        QCOMPARE(model.stepsFromRoutingAt(row), int64_t(0));
        QVERIFY(model.index(row + 1, RooflineModel::KindColumn).data(Qt::ToolTipRole).toString().contains(
            "0 from fastermoe's stored predictions (with shadowing), 5 from eq. 1-2"));
        if (v < 2) {  // stored peak 100: ideal = 100 min(1, 2.4) = 100, semi = 100 * 2.4 / 3.4
          QCOMPARE(model.index(row, RooflineModel::PeakColumn).data(Qt::UserRole).toDouble(), fx::kPeakGflops);
          QVERIFY(near(model.index(row, RooflineModel::IdealColumn).data(Qt::UserRole).toDouble(), 100.0));
          QVERIFY(near(model.index(row, RooflineModel::SemiIdealColumn).data(Qt::UserRole).toDouble(), 240.0 / 3.4));
          QVERIFY(near(model.index(row, RooflineModel::PercentOfIdealColumn).data(Qt::UserRole).toDouble(),
                       achieved));  // 100 * achieved / 100
          const double r = p.comp / p.comm;
          QVERIFY(near(model.index(row + 1, RooflineModel::SemiIdealColumn).data(Qt::UserRole).toDouble(),
                       100 * r / (r + 1)));
        } else {  // "dc": no stored peak, nothing entered
          for (int r : {row, row + 1}) {
            QVERIFY(!model.index(r, RooflineModel::PeakColumn).data(Qt::UserRole).isValid());
            QVERIFY(!model.index(r, RooflineModel::IdealColumn).data(Qt::UserRole).isValid());
            QCOMPARE(model.index(r, RooflineModel::IdealColumn).data().toString(), QString());
            QVERIFY(model.index(r, RooflineModel::NoteColumn).data().toString().contains("enter one"));
          }
        }
      }
    }
    // Arrows: every predicted row of the three runs pairs with the measured row above it.
    const auto pairs = model.predictedMeasuredPairs();
    QCOMPARE(int(pairs.size()), 9);
    for (const auto& pair : pairs) QCOMPARE(pair.predicted, pair.measured + 1);
    // By hand, run "ec" layer 0: mean D = (21+20+21+20+21)/5 ms = 20.6 ms; Lat_e2e = 0.15 * 20.6
    // = 3.09 ms; 195.2 assignments * 12 * 2 * 32^2 = 4,797,235.2 FLOPs; / (4 * 3.09 ms)
    // = 0.3881 GFLOP/s; Lat_comp = 0.12 * 20.6 = 2.472 ms.
    QCOMPARE(model.index(0, RooflineModel::AchievedColumn).data().toString(), QString("0.3881"));
    QCOMPARE(model.index(0, RooflineModel::LatCompColumn).data().toString(), QString("2.472"));
    QCOMPARE(model.index(0, RooflineModel::RccColumn).data().toString(), QString("2.4"));
    QCOMPARE(model.index(0, RooflineModel::PercentOfIdealColumn).data().toString(), QString("0.4"));
    // By hand, predicted, run "ec" layer 0, step i = (step - 1) % 3 (1, 2, 0, 1, 2 in steps 2..6,
    // mean 1.2): T[s][e] = 8 + e + s + i. Busiest rank 3: B_3 = 4 (11 + i) + 6 = 50 + 4i, mean
    // 54.8 -> Lat_comp = 4 * 54.8 * 32 * 64 / 0.12e12 = 3.741013 us. Busiest port: rank 3 sends
    // (and receives) 3 (8 + 3 + i) + 3 = 36 + 3i rows, mean 39.6 -> Lat_comm = 39.6 * 128 B /
    // 10 GB/s = 0.50688 us. The step's rounds: Lat_comp 3 x 3.741013 = 11.22304 us, Lat_comm
    // 4 x 0.50688 = 2.02752 us, R_CC = 5.535; Lat_e2e = 13.25056 us;
    // P-bar = 4,797,235.2 / (4 * 13.25056 us) = 90.51 GFLOP/s.
    QCOMPARE(model.index(1, RooflineModel::RccColumn).data().toString(), QString("5.54"));
    QCOMPARE(model.index(1, RooflineModel::LatCompColumn).data().toString(), QString("0.01122"));
    QCOMPARE(model.index(1, RooflineModel::LatCommColumn).data().toString(), QString("0.002028"));
    QCOMPARE(model.index(1, RooflineModel::LatE2eColumn).data().toString(), QString("0.01325"));
    QCOMPARE(model.index(1, RooflineModel::AchievedColumn).data().toString(), QString("90.51"));
    // "broken": rows without a point, their reasons in the note
    QCOMPARE(model.index(18, RooflineModel::LayerColumn).data().toString(), QString("all"));
    QVERIFY(!model.index(18, RooflineModel::RccColumn).data(Qt::UserRole).isValid());
    QVERIFY2(model.index(18, RooflineModel::NoteColumn).data().toString().contains("no spans"),
             qPrintable(model.index(18, RooflineModel::NoteColumn).data().toString()));
    QCOMPARE(model.kindAt(19), RooflineModel::RowKind::Predicted);
    QVERIFY2(model.index(19, RooflineModel::NoteColumn).data().toString().contains("no routing rows"),
             qPrintable(model.index(19, RooflineModel::NoteColumn).data().toString()));

    // Peaks: stored for ec and hier, none for dc and broken.
    QCOMPARE(int(model.runPeaks().size()), 4);
    QCOMPARE(model.peakOf(m_ids[0])->source, RooflineModel::PeakSource::Stored);
    QCOMPARE(model.peakOf(m_ids[0])->sourceText, QString("stored: param peak_gflops"));
    QCOMPARE(model.peakOf(m_ids[2])->source, RooflineModel::PeakSource::None);
    QVERIFY(!model.peakOf(m_ids[2])->gflops);
    QVERIFY(model.peakOf(m_ids[2])->hasPoints);
    QVERIFY(!model.peakOf(m_ids[3])->hasPoints);

    // Entering a peak: dc uses it, ec keeps its stored one; the peak columns change.
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    QSignalSpy peaks(&model, &RooflineModel::peaksChanged);
    model.setEnteredPeak(50);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(peaks.count(), 1);
    QCOMPARE(model.peakOf(m_ids[2])->source, RooflineModel::PeakSource::Entered);
    QCOMPARE(*model.peakOf(m_ids[2])->gflops, 50.0);
    QCOMPARE(*model.peakOf(m_ids[0])->gflops, 100.0);
    QVERIFY(near(model.index(12, RooflineModel::IdealColumn).data(Qt::UserRole).toDouble(), 50.0));
    QVERIFY(near(model.index(12, RooflineModel::SemiIdealColumn).data(Qt::UserRole).toDouble(), 120.0 / 3.4));
    QCOMPARE(model.index(12, RooflineModel::PeakColumn).data().toString(), QString("50 (entered)"));
    QCOMPARE(model.index(13, RooflineModel::PeakColumn).data().toString(), QString("50 (entered)"));
    QCOMPARE(model.index(0, RooflineModel::PeakColumn).data().toString(), QString("100 (stored)"));
    QCOMPARE(model.index(12, RooflineModel::NoteColumn).data().toString(), QString());
    model.setEnteredPeak(50);  // unchanged: no signal
    QCOMPARE(changed.count(), 1);

    model.setRuns(m_store, {});
    QCOMPARE(model.rowCount(), 0);
    model.setRuns(nullptr, m_ids);
    QCOMPARE(model.rowCount(), 0);
    QVERIFY_THROWS_EXCEPTION(StoreError, model.setRuns(m_store, {987654}));
  }

  void model_malformed_peak() {
    QTemporaryDir dir;
    auto store = std::make_shared<RunStore>(dir.filePath("bad.db").toStdString());
    RunInfo info;
    info.name = "odd";
    const int64_t id = store->create_run(info).id;
    store->log_params(id, {{"peak_gflops", "lots"}});
    RooflineModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRuns(store, {id});
    QCOMPARE(model.rowCount(), 2);  // no spans, no routing: the whole-run rows without a point
    const RooflineModel::RunPeak* peak = model.peakOf(id);
    QVERIFY(peak);
    QVERIFY2(peak->error.contains("'odd'") && peak->error.contains("'lots'"), qPrintable(peak->error));
    QVERIFY(!peak->gflops);
    QCOMPARE(peak->source, RooflineModel::PeakSource::None);
    model.setEnteredPeak(10);
    QCOMPARE(model.peakOf(id)->source, RooflineModel::PeakSource::Entered);
  }

  void view_renders_fixture() {
    RooflineView view;
    view.resize(900, 700);
    view.show();
    QVERIFY(!view.message().isEmpty());  // the hint for an empty selection
    view.setRuns(m_store, m_ids);
    QCoreApplication::processEvents();  // lays the legend out
    QChart* chart = view.chart();
    // per run with points 4 scatter series (measured and predicted: whole run, MoE layers) and 3
    // arrows (layers 0, 1, whole run) + ideal and semi-ideal for the one peak in use (100: ec,
    // hier; dc has none yet)
    QCOMPARE(chart->series().size(), 3 * 7 + 2);
    QCOMPARE(view.arrowCount(), 9);
    QCOMPARE(lines(chart, "ec predicted -> measured").size(), 3);
    QCOMPARE(lines(chart, "ideal").size(), 1);
    QCOMPARE(lines(chart, "semi-ideal").size(), 1);
    QCOMPARE(lines(chart, "ideal").first()->name(), QString("ideal 100 GFLOP/s"));
    QCOMPARE(lines(chart, "ideal").first()->pen().style(), Qt::SolidLine);
    QCOMPARE(lines(chart, "semi-ideal").first()->pen().style(), Qt::DashLine);
    for (int v = 0; v < 3; ++v) {
      const QString name = fx::kRunNames[v];
      const auto points = view.model()->points();
      QScatterSeries* whole = scatter(chart, name);
      QScatterSeries* layers = scatter(chart, name + " (MoE layers)");
      QVERIFY(whole && layers);
      QCOMPARE(whole->count(), 1);
      QCOMPARE(layers->count(), 2);
      QVERIFY(whole->markerSize() > layers->markerSize());
      QCOMPARE(whole->color(), layers->color());
      QCOMPARE(whole->at(0).y(), points[size_t(6 * v + 4)].achieved_gflops);
      QCOMPARE(layers->at(1).y(), points[size_t(6 * v + 2)].achieved_gflops);
      // The legend list beside the chart: the whole-run entry, whole; the layers go with it.
      const QStringList legend = view.legendList()->labels();
      QVERIFY2(legend.contains(name) && !legend.contains(name + " (MoE layers)"), qPrintable(legend.join(" | ") + QString(" n=%1").arg(view.legendList()->count())));
      QCOMPARE(whole->color(), moebench::gui::runColor(m_ids[size_t(v)]));  // the run's colour everywhere
      QCOMPARE(whole->markerShape(), QScatterSeries::MarkerShapeCircle);
      // The predicted points: triangles of the same run colour, lighter.
      QScatterSeries* pwhole = scatter(chart, name + " predicted");
      QScatterSeries* players = scatter(chart, name + " predicted (MoE layers)");
      QVERIFY(pwhole && players);
      QCOMPARE(pwhole->count(), 1);
      QCOMPARE(players->count(), 2);
      QCOMPARE(pwhole->markerShape(), QScatterSeries::MarkerShapeTriangle);
      QCOMPARE(pwhole->borderColor(), whole->color());
      QVERIFY(pwhole->color() != whole->color());
      QCOMPARE(pwhole->at(0).x(), points[size_t(6 * v + 5)].r_cc);
      QCOMPARE(pwhole->at(0).y(), points[size_t(6 * v + 5)].achieved_gflops);
      QVERIFY(legend.contains(name + " predicted") && !legend.contains(name + " predicted (MoE layers)"));
      // The arrow of layer 0: from the predicted point to the measured one, then its head.
      const auto arrows = lines(chart, name + " predicted -> measured, layer 0");
      QCOMPARE(arrows.size(), 1);
      QCOMPARE(arrows.first()->count(), 5);
      // (the shaft stops a marker radius + 1 px short of both: inside the segment, near its ends)
      const QPointF from(points[size_t(6 * v + 1)].r_cc, points[size_t(6 * v + 1)].achieved_gflops);
      const QPointF to(points[size_t(6 * v)].r_cc, points[size_t(6 * v)].achieved_gflops);
      const QPointF start = arrows.first()->at(0), tip = arrows.first()->at(1);
      QVERIFY(from.x() > start.x() && start.x() > tip.x() && tip.x() > to.x());
      QVERIFY(from.y() > start.y() && start.y() > tip.y() && tip.y() > to.y());
      QVERIFY(std::log(start.x() / from.x()) / std::log(to.x() / from.x()) < 0.1);
      QVERIFY(std::log(tip.x() / from.x()) / std::log(to.x() / from.x()) > 0.9);
      QVERIFY(near(std::log(tip.y() / from.y()) / std::log(to.y() / from.y()),
                   std::log(tip.x() / from.x()) / std::log(to.x() / from.x()), 1e-6));  // on the line
      QCOMPARE(arrows.first()->at(3), tip);
      QVERIFY(!legend.contains(arrows.first()->name()));
    }
    // Unticking a run's entry hides its whole-run and per-layer points together.
    QListWidgetItem* ec = view.legendList()->findItems("ec", Qt::MatchExactly).value(0);
    QVERIFY(ec);
    ec->setCheckState(Qt::Unchecked);
    QVERIFY(!scatter(chart, "ec")->isVisible() && !scatter(chart, "ec (MoE layers)")->isVisible());
    QVERIFY(scatter(chart, "hier")->isVisible());
    ec->setCheckState(Qt::Checked);
    QVERIFY(scatter(chart, "ec (MoE layers)")->isVisible());
    QVERIFY(!scatter(chart, "broken"));
    QVERIFY2(view.message().contains("broken") && view.message().contains("no spans"),
             qPrintable(view.message()));
    QVERIFY2(view.peakInfoText().contains("stored peak: ec 100 GFLOP/s"), qPrintable(view.peakInfoText()));
    QVERIFY2(view.peakInfoText().endsWith("no peak (enter one for the curves): dc"),
             qPrintable(view.peakInfoText()));

    // Both axes logarithmic, covering every point and the peak.
    const auto xs = chart->axes(Qt::Horizontal), ys = chart->axes(Qt::Vertical);
    QCOMPARE(xs.size(), 1);
    QCOMPARE(ys.size(), 1);
    auto* x = qobject_cast<QLogValueAxis*>(xs.first());
    auto* y = qobject_cast<QLogValueAxis*>(ys.first());
    QVERIFY(x && y);
    for (QAbstractSeries* s : chart->series())
      if (auto* sc = qobject_cast<QScatterSeries*>(s))
        for (const QPointF& p : sc->points()) {
          QVERIFY(p.x() > x->min() && p.x() < x->max());
          QVERIFY(p.y() > y->min() && p.y() < y->max());
        }
    // R = 1 (always in), 2.4 measured, 5.50..5.535 predicted: 10^floor(log10(1 / 1.5)),
    // 10^ceil(log10(5.535 * 1.5))
    QVERIFY(near(x->min(), 0.1, 1e-6));
    QVERIFY(near(x->max(), 10.0, 1e-6));
    // achieved 0.39..0.71 GFLOP/s measured, 83..91 predicted, and the peak 100:
    // 10^floor(log10(0.39 / 1.2)), 10^ceil(log10(120))
    QVERIFY(near(y->min(), 0.1, 1e-6));
    QVERIFY(near(y->max(), 1000.0, 1e-6));
    QVERIFY(view.table()->model() == view.model());

    // Entering a peak for "dc" adds its curves.
    view.peakSpinBox()->setValue(40);
    QCOMPARE(chart->series().size(), 3 * 7 + 4);
    QCOMPARE(lines(chart, "ideal").size(), 2);
    QCOMPARE(lines(chart, "semi-ideal").size(), 2);
    bool found = false;
    for (QLineSeries* l : lines(chart, "ideal"))
      if (l->name() == "ideal 40 GFLOP/s") {
        found = true;
        QCOMPARE(l->at(1), QPointF(1.0, 40.0));  // the knee of P_w min(1, R)
        QCOMPARE(l->at(2).y(), 40.0);
      }
    QVERIFY(found);
    QVERIFY2(view.peakInfoText().contains("entered peak 40 GFLOP/s: dc"), qPrintable(view.peakInfoText()));
    // Entering the stored value merges the curves.
    view.peakSpinBox()->setValue(100);
    QCOMPARE(lines(chart, "ideal").size(), 1);
    QCOMPARE(lines(chart, "semi-ideal").size(), 1);
    QCOMPARE(lines(chart, "semi-ideal").first()->at(0).x(), 0.1);  // sampled from the axis minimum
    QVERIFY(near(lines(chart, "semi-ideal").first()->at(0).y(), 100 * 0.1 / 1.1));

    QCoreApplication::processEvents();
    const QImage shot = view.grab().toImage();
    QVERIFY(!shot.isNull() && shot.width() >= 800);
    // The markers are painted: pixels in each run's colour (dc is the third run colour).
    const QRgb dcColor = scatter(chart, "dc")->color().rgb();
    int dcPixels = 0;
    for (int yy = 0; yy < shot.height(); ++yy)
      for (int xx = 0; xx < shot.width(); ++xx) dcPixels += (shot.pixel(xx, yy) & 0xffffff) == (dcColor & 0xffffff);
    QVERIFY2(dcPixels > 20, qPrintable(QString::number(dcPixels)));

    // Selection changes: empty, then an unknown run (an error message, no crash).
    view.setRuns(m_store, {});
    QCOMPARE(chart->series().size(), 0);
    QVERIFY(view.message().startsWith("Select runs"));
    view.setRuns(m_store, {987654});
    QVERIFY2(view.message().contains("Cannot show") && view.message().contains("987654"),
             qPrintable(view.message()));
    QCOMPARE(view.model()->rowCount(), 0);
    view.setRuns(nullptr, m_ids);
    QVERIFY(view.message().startsWith("Select runs"));
  }

  void geometry() {
    using moebench::gui::arrowPolyline;
    using moebench::gui::decadeRange;
    using moebench::gui::LogPlotFrame;
    QCOMPARE(decadeRange(1.0, 2.4, 1.5).min, 0.1);
    QCOMPARE(decadeRange(1.0, 2.4, 1.5).max, 10.0);
    QCOMPARE(decadeRange(0.39, 120, 1.2).min, 0.1);
    QCOMPARE(decadeRange(0.39, 120, 1.2).max, 1000.0);
    // x and y over two decades each, 400 x 200 pixels: 1 -> the middle.
    LogPlotFrame f;
    f.xmin = 0.1, f.xmax = 10, f.ymin = 1, f.ymax = 100, f.width = 400, f.height = 200;
    QVERIFY(near(f.toPixels({1, 10}).x(), 200));
    QVERIFY(near(f.toPixels({1, 10}).y(), 100));
    QVERIFY(near(f.toData({300, 50}).x(), std::sqrt(10.0)));
    // A horizontal arrow to the right from (1, 10) to (10, 10): pixels (200, 100) -> (400, 100);
    // the head's strokes end 9 px back at +-25 degrees: (400 - 9 cos 25, 100 +- 9 sin 25).
    const auto line = arrowPolyline({1, 10}, {10, 10}, f);
    QCOMPARE(int(line.size()), 5);
    QCOMPARE(line[0], QPointF(1, 10));
    QCOMPARE(line[1], QPointF(10, 10));
    QCOMPARE(line[3], QPointF(10, 10));
    const double c = 9 * std::cos(25 * M_PI / 180), sn = 9 * std::sin(25 * M_PI / 180);
    for (int i : {2, 4}) {
      const QPointF px = f.toPixels(line[size_t(i)]);
      QVERIFY(near(px.x(), 400 - c, 1e-9));
      QVERIFY(near(std::abs(px.y() - 100), sn, 1e-9));
    }
    QVERIFY((f.toPixels(line[2]).y() > 100) != (f.toPixels(line[4]).y() > 100));  // one stroke each side
    // Gaps: the shaft runs from 8 px after `from` to 8 px before `to`, the head at the tip.
    moebench::gui::ArrowStyle gaps;
    gaps.startGapPx = gaps.endGapPx = 8;
    const auto gapped = arrowPolyline({1, 10}, {10, 10}, f, gaps);
    QCOMPARE(int(gapped.size()), 5);
    QVERIFY(near(f.toPixels(gapped[0]).x(), 208));
    QVERIFY(near(f.toPixels(gapped[1]).x(), 392));
    QVERIFY(near(f.toPixels(gapped[2]).x(), 392 - c));
    gaps.startGapPx = gaps.endGapPx = 100;  // nothing left between the markers
    QVERIFY(arrowPolyline({1, 10}, {10, 10}, f, gaps).empty());
    // A short shaft: the head is at most half of it; coincident points: no arrow.
    const auto shortLine = arrowPolyline({1, 10}, {1.02, 10}, f);  // 200 log10(1.02) / 2 = 0.86 px
    QCOMPARE(int(shortLine.size()), 5);
    const QPointF tip = f.toPixels(shortLine[1]), stroke = f.toPixels(shortLine[2]);
    QVERIFY(std::hypot(stroke.x() - tip.x(), stroke.y() - tip.y()) <= 0.5 * (tip.x() - 200) + 1e-9);
    QVERIFY(arrowPolyline({1, 10}, {1, 10}, f).empty());
  }

  void view_simulated_and_predicted() {
    // A measured run "real" (spans, routing, config of the fixture) and a run "sim" written by
    // the simulator (tag predicted, spans with recorded FLOPs, no routing): "real" gets measured
    // and predicted points and 3 arrows; "sim" is drawn as "sim simulated (predicted)" diamonds
    // and has no predicted rows.
    QTemporaryDir dir;
    auto store = std::make_shared<RunStore>(dir.filePath("runs.db").toStdString());
    std::vector<int64_t> ids;
    for (const char* name : {"real", "sim"}) {
      const bool sim = std::string(name) == "sim";
      RunInfo info;
      info.name = name;
      info.config_json = fx::configJson();
      info.ranks = fx::kRanks;
      const int64_t id = store->create_run(info).id;
      if (sim) store->set_tag(id, "predicted", "simulator");
      for (int step = 1; step <= 3; ++step) {
        std::vector<SpanRow> spans;
        std::vector<RoutingRow> routing;
        for (int rank = 0; rank < fx::kRanks; ++rank) {
          for (SpanRow s : fx::stepSpans(0, step, rank)) {
            if (sim && s.name == std::string("moe.experts")) s.flops = 1e6;
            spans.push_back(s);
          }
          if (!sim)
            for (int L = 0; L < fx::kLayers; ++L)
              for (int e = 0; e < fx::kExperts; ++e) routing.push_back({step, L, rank, e, fx::routedTokens(step, L, rank, e)});
        }
        store->log_step(id, {}, spans, {}, routing);
      }
      ids.push_back(id);
    }
    {
      RooflineModel model;
      QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
      model.setRuns(store, ids);
      QCOMPARE(model.rowCount(), 6 + 3);
      QVERIFY(!model.peakOf(ids[0])->simulated);
      QVERIFY(model.peakOf(ids[1])->simulated);
      for (int row = 6; row < 9; ++row) {
        QCOMPARE(model.kindAt(row), RooflineModel::RowKind::Simulated);
        QCOMPARE(model.index(row, RooflineModel::KindColumn).data().toString(), QString("simulated (predicted)"));
        QVERIFY(model.pointAt(row)->has_point());
      }
      QCOMPARE(int(model.predictedMeasuredPairs().size()), 3);
    }
    RooflineView view;
    view.resize(900, 700);
    view.show();
    view.setRuns(store, ids);
    QCoreApplication::processEvents();
    QChart* chart = view.chart();
    QCOMPARE(view.arrowCount(), 3);
    QCOMPARE(lines(chart, "real predicted -> measured").size(), 3);
    QVERIFY(lines(chart, "sim predicted").isEmpty());
    QVERIFY(!scatter(chart, "sim predicted"));
    QVERIFY(!scatter(chart, "sim"));
    QScatterSeries* sim = scatter(chart, "sim simulated (predicted)");
    QScatterSeries* simLayers = scatter(chart, "sim simulated (predicted) (MoE layers)");
    QVERIFY(sim && simLayers);
    QCOMPARE(sim->count(), 1);
    QCOMPARE(simLayers->count(), 2);
    QCOMPARE(sim->markerShape(), QScatterSeries::MarkerShapeRotatedRectangle);
    QCOMPARE(scatter(chart, "real")->markerShape(), QScatterSeries::MarkerShapeCircle);
    QCOMPARE(scatter(chart, "real predicted")->markerShape(), QScatterSeries::MarkerShapeTriangle);
    // real: 4 scatter series + 3 arrows; sim: 2 scatter series; no peak, no curves
    QCOMPARE(chart->series().size(), 9);
    // The arrows' heads follow the plot area: same size in pixels after a resize.
    QLineSeries* arrow = lines(chart, "real predicted -> measured, whole run").first();
    const QPointF before = arrow->at(2);
    view.resize(1200, 900);
    QCoreApplication::processEvents();
    QTRY_VERIFY(arrow->at(2) != before);
    QVERIFY(arrow->at(0).x() < view.model()->pointAt(5)->r_cc);  // starts at the predicted marker's edge
    QVERIFY(arrow->at(0).x() > view.model()->pointAt(4)->r_cc);
  }

 private:
  QTemporaryDir m_dir;
  std::shared_ptr<RunStore> m_store;
  std::vector<int64_t> m_ids;
};

QTEST_MAIN(TestGuiRoofline)
#include "tst_gui_roofline.moc"
