// ctest-labels: gui
// RooflineModel (QAbstractItemModelTester, values from the fixture's generator functions and by
// hand, stored vs entered peaks) and RooflineView rendered headless on the fixture (series,
// axis ranges covering the points, entered peak changing the curves of "dc", messages).
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QChart>
#include <QDoubleSpinBox>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>

#include <cmath>
#include <memory>

#include "gui_fixture.h"
#include "models/rooflinemodel.h"
#include "moebench/perf/ddl_roofline.h"
#include "moebench/store/run_store.h"
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
    // 3 runs x (2 layers + whole run) + the whole-run row of "broken" (no spans)
    QCOMPARE(model.rowCount(), 10);
    QCOMPARE(model.columnCount(), int(RooflineModel::ColumnCount));
    for (int v = 0; v < 3; ++v) {
      const double D = meanD(v);
      for (int k = 0; k < 3; ++k) {
        const int row = 3 * v + k;
        const int layer = k < 2 ? k : -1;
        QCOMPARE(model.index(row, RooflineModel::RunColumn).data().toString(), QString(fx::kRunNames[v]));
        QCOMPARE(model.index(row, RooflineModel::LayerColumn).data(Qt::UserRole).toInt(), layer);
        QCOMPARE(model.index(row, RooflineModel::LayerColumn).data().toString(),
                 layer < 0 ? QString("all") : QString::number(layer));
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
        if (v < 2) {  // stored peak 100: ideal = 100 min(1, 2.4) = 100, semi = 100 * 2.4 / 3.4
          QCOMPARE(model.index(row, RooflineModel::PeakColumn).data(Qt::UserRole).toDouble(), fx::kPeakGflops);
          QVERIFY(near(model.index(row, RooflineModel::IdealColumn).data(Qt::UserRole).toDouble(), 100.0));
          QVERIFY(near(model.index(row, RooflineModel::SemiIdealColumn).data(Qt::UserRole).toDouble(), 240.0 / 3.4));
          QVERIFY(near(model.index(row, RooflineModel::PercentOfIdealColumn).data(Qt::UserRole).toDouble(),
                       achieved));  // 100 * achieved / 100
        } else {  // "dc": no stored peak, nothing entered
          QVERIFY(!model.index(row, RooflineModel::PeakColumn).data(Qt::UserRole).isValid());
          QVERIFY(!model.index(row, RooflineModel::IdealColumn).data(Qt::UserRole).isValid());
          QCOMPARE(model.index(row, RooflineModel::IdealColumn).data().toString(), QString());
          QVERIFY(model.index(row, RooflineModel::NoteColumn).data().toString().contains("enter one"));
        }
      }
    }
    // By hand, run "ec" layer 0: mean D = (21+20+21+20+21)/5 ms = 20.6 ms; Lat_e2e = 0.15 * 20.6
    // = 3.09 ms; 195.2 assignments * 12 * 2 * 32^2 = 4,797,235.2 FLOPs; / (4 * 3.09 ms)
    // = 0.3881 GFLOP/s; Lat_comp = 0.12 * 20.6 = 2.472 ms.
    QCOMPARE(model.index(0, RooflineModel::AchievedColumn).data().toString(), QString("0.3881"));
    QCOMPARE(model.index(0, RooflineModel::LatCompColumn).data().toString(), QString("2.472"));
    QCOMPARE(model.index(0, RooflineModel::RccColumn).data().toString(), QString("2.4"));
    QCOMPARE(model.index(0, RooflineModel::PercentOfIdealColumn).data().toString(), QString("0.4"));
    // "broken": a row without a point, its reason in the note
    QCOMPARE(model.index(9, RooflineModel::LayerColumn).data().toString(), QString("all"));
    QVERIFY(!model.index(9, RooflineModel::RccColumn).data(Qt::UserRole).isValid());
    QVERIFY2(model.index(9, RooflineModel::NoteColumn).data().toString().contains("no spans"),
             qPrintable(model.index(9, RooflineModel::NoteColumn).data().toString()));

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
    QVERIFY(near(model.index(6, RooflineModel::IdealColumn).data(Qt::UserRole).toDouble(), 50.0));
    QVERIFY(near(model.index(6, RooflineModel::SemiIdealColumn).data(Qt::UserRole).toDouble(), 120.0 / 3.4));
    QCOMPARE(model.index(6, RooflineModel::PeakColumn).data().toString(), QString("50 (entered)"));
    QCOMPARE(model.index(0, RooflineModel::PeakColumn).data().toString(), QString("100 (stored)"));
    QCOMPARE(model.index(6, RooflineModel::NoteColumn).data().toString(), QString());
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
    QCOMPARE(model.rowCount(), 1);  // no spans: the whole-run row without a point
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
    // per run with points 2 scatter series (whole run, MoE layers) + ideal and semi-ideal for
    // the one peak in use (100: ec, hier; dc has none yet)
    QCOMPARE(chart->series().size(), 8);
    QCOMPARE(lines(chart, "ideal").size(), 1);
    QCOMPARE(lines(chart, "semi-ideal").size(), 1);
    QCOMPARE(lines(chart, "ideal").first()->name(), QString("ideal 100 GFLOP/s"));
    QCOMPARE(lines(chart, "ideal").first()->pen().style(), Qt::SolidLine);
    QCOMPARE(lines(chart, "semi-ideal").first()->pen().style(), Qt::DashLine);
    for (int v = 0; v < 3; ++v) {
      const QString name = fx::kRunNames[v];
      QScatterSeries* whole = scatter(chart, name);
      QScatterSeries* layers = scatter(chart, name + " (MoE layers)");
      QVERIFY(whole && layers);
      QCOMPARE(whole->count(), 1);
      QCOMPARE(layers->count(), 2);
      QVERIFY(whole->markerSize() > layers->markerSize());
      QCOMPARE(whole->color(), layers->color());
      const auto points = view.model()->points();
      QCOMPARE(whole->at(0).y(), points[size_t(3 * v + 2)].achieved_gflops);
      QCOMPARE(layers->at(1).y(), points[size_t(3 * v + 1)].achieved_gflops);
      QVERIFY(chart->legend()->markers(whole).first()->isVisible());
      QVERIFY(!chart->legend()->markers(layers).first()->isVisible());
    }
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
    QVERIFY(near(x->min(), 0.1, 1e-6));  // R = 2.4: 10^floor(log10(1 / 1.5)), 10^ceil(log10(2.4 * 1.5))
    QVERIFY(near(x->max(), 10.0, 1e-6));
    // achieved 0.39..0.71 GFLOP/s and the peak 100: 10^floor(log10(0.39 / 1.2)), 10^ceil(log10(120))
    QVERIFY(near(y->min(), 0.1, 1e-6));
    QVERIFY(near(y->max(), 1000.0, 1e-6));
    QVERIFY(view.table()->model() == view.model());

    // Entering a peak for "dc" adds its curves.
    view.peakSpinBox()->setValue(40);
    QCOMPARE(chart->series().size(), 10);
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

 private:
  QTemporaryDir m_dir;
  std::shared_ptr<RunStore> m_store;
  std::vector<int64_t> m_ids;
};

QTEST_MAIN(TestGuiRoofline)
#include "tst_gui_roofline.moc"
