// ctest-labels: gui
// The analysis views rendered headless on the GUI fixture store: PhaseBreakdownView (stacked
// bars, a bar per selected run in each row group), AblationView (bars + speedup labels, baseline
// combo), TrafficView and ExpertLoadView (a HeatmapView panel per selected run under one colour
// scale, one step chooser / slider for all panels, shadowed experts marked), per-run visibility
// toggles, plus hints for an empty selection and errors (per run, in its panel).
#include <QtTest>

#include <QApplication>
#include <QBarCategoryAxis>
#include <QGraphicsTextItem>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QHorizontalStackedBarSeries>
#include <QBarSeries>
#include <QSlider>
#include <QTemporaryDir>

#include <memory>

#include "gui_fixture.h"
#include "models/ablationmodel.h"
#include "models/byteformat.h"
#include "models/expertloadmodel.h"
#include "models/heatmaproles.h"
#include "models/phasebreakdownmodel.h"
#include "models/phaserunsmodel.h"
#include "models/runcolors.h"
#include "models/trafficmatrixmodel.h"
#include "moebench/store/run_store.h"
#include "widgets/ablationview.h"
#include "widgets/expertloadview.h"
#include "widgets/heatmapview.h"
#include "widgets/phasebreakdownview.h"
#include "widgets/runpanel.h"
#include "widgets/trafficview.h"

using namespace moebench;
namespace fx = moebench::test::gui_fixture;

namespace {

// Renders the widget offscreen and checks the pixmap is real and not one flat colour. With
// MOEBENCH_GUI_SHOTS=DIR set, the picture is also saved there (DIR/<class>.png) to look at.
void checkRenders(QWidget& w, const QString& name = {}) {
  w.resize(900, 600);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  const QImage img = w.grab().toImage();
  QVERIFY(!img.isNull());
  QCOMPARE(img.width(), w.width());
  if (qEnvironmentVariableIsSet("MOEBENCH_GUI_SHOTS"))
    img.save(qEnvironmentVariable("MOEBENCH_GUI_SHOTS") + "/" +
             (name.isEmpty() ? QString(w.metaObject()->className()) : name) + ".png");
  const QRgb first = img.pixel(0, 0);
  bool varied = false;
  for (int y = 0; y < img.height() && !varied; y += 7)
    for (int x = 0; x < img.width() && !varied; x += 7) varied = img.pixel(x, y) != first;
  QVERIFY(varied);
}

}  // namespace

class TestGuiAnalysisViews : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void cleanupTestCase();
  void phaseBreakdownRenders();
  void phaseRunsSideBySide();
  void ablationRendersAndBaseline();
  void trafficRendersAndSteps();
  void trafficRunsSideBySide();
  void expertLoadSlider();
  void expertLoadShadowed();
  void expertLoadRunsSideBySide();
  void heatmapGeometryAndColours();
  void emptySelectionAndErrors();

 private:
  std::unique_ptr<QTemporaryDir> m_dir;
  std::shared_ptr<RunStore> m_store;
  int64_t m_ec = 0, m_hier = 0, m_dc = 0, m_broken = 0;
};

void TestGuiAnalysisViews::initTestCase() {
  m_dir = std::make_unique<QTemporaryDir>();
  QVERIFY(m_dir->isValid());
  m_store = std::make_shared<RunStore>(fx::write(*m_dir).toStdString(), RunStore::Mode::read_only);
  m_ec = m_store->find_run("ec").id;
  m_hier = m_store->find_run("hier").id;
  m_dc = m_store->find_run("dc").id;
  m_broken = m_store->find_run("broken").id;
}

void TestGuiAnalysisViews::cleanupTestCase() {
  m_store.reset();
  m_dir.reset();
}

void TestGuiAnalysisViews::phaseBreakdownRenders() {
  PhaseBreakdownView view;
  view.setRuns(m_store, {m_ec});
  QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
  checkRenders(view);
  QVERIFY(view.findChild<QComboBox*>("runChooser") == nullptr);  // no run chooser any more
  QVERIFY(view.runToggle(m_ec) && view.runToggle(m_ec)->isVisible());
  QChart* chart = view.chartView()->chart();
  QCOMPARE(chart->series().size(), 1);
  auto* series = qobject_cast<QHorizontalStackedBarSeries*>(chart->series().first());
  QVERIFY(series);
  QCOMPARE(series->count(), 3);  // compute, comm, idle
  QCOMPARE(series->barSets().at(0)->label(), QStringLiteral("compute"));
  QCOMPARE(series->barSets().at(2)->label(), QStringLiteral("idle"));
  for (QBarSet* set : series->barSets()) QCOMPARE(set->count(), fx::kLayers + 2);
  // the bars are the model's rows, bottom-up (so "layer 0" is drawn on top): layer 0 compute
  // 1.854 ms (see tst_gui_analysis_models), the whole step's idle 2.06 ms, no idle bar for a layer
  const QString ec = QStringLiteral("#%1 ec · measured").arg(m_ec);
  QCOMPARE(view.runTitle(m_ec), ec);
  QCOMPARE(view.categoryLabels(),
           (QStringList{"whole step · " + ec, "other · " + ec, "layer 1 · " + ec, "layer 0 · " + ec}));
  QVERIFY(qAbs(series->barSets().at(0)->at(3) - 1.854) < 1e-9);
  QVERIFY(qAbs(series->barSets().at(0)->at(0) - 16.068) < 1e-9);
  QVERIFY(qAbs(series->barSets().at(2)->at(0) - 2.06) < 1e-9);
  QCOMPARE(series->barSets().at(2)->at(3), 0.0);
  QVERIFY2(view.noteText().contains(ec + " over 20 (step, rank) pairs"), qPrintable(view.noteText()));
  QCOMPARE(view.runsModel()->rowCount(), fx::kLayers + 2);
  // a run without spans: a message saying so
  view.setRuns(m_store, {m_broken});
  QVERIFY2(view.message().contains("no step spans"), qPrintable(view.message()));
}

// Issue 35: every selected run in one chart, a bar group per row with a bar per run on one ms
// axis, the run's part of each label in its colour, the table listing every run's rows.
void TestGuiAnalysisViews::phaseRunsSideBySide() {
  PhaseBreakdownView view;
  view.resize(900, 600);
  view.setRuns(m_store, {m_ec, m_hier, m_dc, m_broken});
  QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
  checkRenders(view, "PhaseBreakdownViewRuns");
  QApplication::processEvents();
  const std::vector<int64_t> ids = {m_ec, m_hier, m_dc};
  QChart* chart = view.chartView()->chart();
  auto* series = qobject_cast<QHorizontalStackedBarSeries*>(chart->series().first());
  QVERIFY(series);
  // 4 groups (layer 0, layer 1, other, whole step) x 3 runs + 3 blank rows between groups
  QCOMPARE(series->barSets().at(0)->count(), 4 * 3 + 3);
  const QStringList labels = view.categoryLabels();
  // mean step over steps 2..6 of variant v: 20.6 - 4 v; layer 0 compute = 0.09 D; whole step
  // idle = 0.1 D (the optimizer's end to the step's end)
  for (int v = 0; v < 3; ++v) {
    const double D = 20.6 - 4.0 * v;
    const int at0 = int(labels.indexOf(view.barLabel(ids[size_t(v)], "layer 0")));
    const int whole = int(labels.indexOf(view.barLabel(ids[size_t(v)], "whole step")));
    QVERIFY2(at0 >= 0 && whole >= 0, qPrintable(labels.join(" | ")));
    QVERIFY2(qAbs(series->barSets().at(0)->at(at0) - 0.09 * D) < 1e-9, qPrintable(QString::number(series->barSets().at(0)->at(at0))));
    QVERIFY(qAbs(series->barSets().at(2)->at(whole) - 0.1 * D) < 1e-9);
    QCOMPARE(view.model(ids[size_t(v)])->runId(), ids[size_t(v)]);
  }
  // top to bottom: layer 0 of ec, hier, dc; a blank; layer 1 ...; the whole step of dc last
  QCOMPARE(labels.last(), view.barLabel(m_ec, "layer 0"));
  QCOMPARE(labels.at(labels.size() - 3), view.barLabel(m_dc, "layer 0"));
  QCOMPARE(labels.at(labels.size() - 4), QString());
  QCOMPARE(labels.first(), view.barLabel(m_dc, "whole step"));
  // the labels are plain text (Qt Charts elides rich-text category labels to "...")
  auto* axis = qobject_cast<QBarCategoryAxis*>(chart->axes(Qt::Vertical).value(0));
  QVERIFY(axis);
  QCOMPARE(axis->categories().last(), view.barLabel(m_ec, "layer 0"));
  QCOMPARE(axis->categories().first(), view.barLabel(m_dc, "whole step"));
  // labels and title whole (no "…")
  QVERIFY(!axis->labelsTruncated());
  for (QAbstractAxis* a : chart->axes()) QVERIFY2(!a->labelsTruncated(), qPrintable(a->titleText()));
  QStringList drawn;
  for (QGraphicsItem* item : chart->scene()->items())
    if (auto* text = dynamic_cast<QGraphicsTextItem*>(item); text && text->isVisible())
      drawn << text->toPlainText().replace(QChar::Nbsp, u' ');
  for (const QString& t : drawn) QVERIFY2(!t.contains("...") && !t.contains(u'…'), qPrintable(t));
  QVERIFY2(drawn.contains(view.barLabel(m_hier, "whole step")), qPrintable(drawn.join(" | ")));
  QVERIFY2(drawn.contains(view.chartTitle()), qPrintable(drawn.join(" | ")));
  // one ms axis for all bars
  QCOMPARE(chart->axes(Qt::Horizontal).size(), 1);
  // the table: every run's rows with a Run column; the broken run named with its reason
  PhaseRunsModel* table = view.runsModel();
  QCOMPARE(table->rowCount(), 3 * (fx::kLayers + 2));
  QCOMPARE(table->index(0, PhaseRunsModel::RunColumn).data().toString(), view.runTitle(m_ec));
  QCOMPARE(table->index(fx::kLayers + 2, PhaseRunsModel::RunColumn).data().toString(), view.runTitle(m_hier));
  QCOMPARE(table->index(fx::kLayers + 2, PhaseRunsModel::RunColumn).data(Qt::DecorationRole).value<QColor>(),
           moebench::gui::runColor(m_hier));
  QCOMPARE(table->index(2 * (fx::kLayers + 2), PhaseRunsModel::ComputeColumn).data().toString(), QStringLiteral("1.134"));
  QVERIFY2(view.problemsText().contains(view.runTitle(m_broken) + ": run 'broken' has no step spans"),
           qPrintable(view.problemsText()));

  // hiding a run removes its bars and rows; ticking it again brings them back
  QVERIFY(view.setRunVisible(m_hier, false));
  QVERIFY(!view.isRunShown(m_hier));
  QVERIFY(!view.runToggle(m_hier)->isChecked());
  for (const QString& l : view.categoryLabels()) QVERIFY2(!l.contains(view.runTitle(m_hier)), qPrintable(l));
  series = qobject_cast<QHorizontalStackedBarSeries*>(chart->series().first());
  QCOMPARE(series->barSets().at(0)->count(), 4 * 2 + 3);
  QCOMPARE(view.runsModel()->rowCount(), 2 * (fx::kLayers + 2));
  view.runToggle(m_hier)->click();
  QVERIFY(view.isRunShown(m_hier));
  QCOMPARE(view.runsModel()->rowCount(), 3 * (fx::kLayers + 2));
  // hidden runs stay hidden in a new selection; all hidden: a message
  view.setRunVisible(m_dc, false);
  view.setRuns(m_store, {m_dc, m_ec});
  QVERIFY(!view.isRunShown(m_dc));
  QCOMPARE(view.runsModel()->rowCount(), fx::kLayers + 2);
  view.setRunVisible(m_ec, false);
  QVERIFY2(view.message().contains("hidden"), qPrintable(view.message()));
  view.setRunVisible(m_ec, true);
  view.setRunVisible(m_dc, true);
  QVERIFY(view.message().isEmpty());
  QVERIFY(!view.setRunVisible(9999, false));
}

void TestGuiAnalysisViews::ablationRendersAndBaseline() {
  AblationView view;
  view.setRuns(m_store, {m_ec, m_hier, m_dc});
  QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
  checkRenders(view);
  QChart* chart = view.chartView()->chart();
  QCOMPARE(chart->series().size(), 1);
  auto* bars = qobject_cast<QBarSeries*>(chart->series().first());
  QVERIFY(bars);
  QCOMPARE(bars->barSets().size(), 1);
  QBarSet* set = bars->barSets().first();
  QCOMPARE(set->count(), 3);
  // ms/step per variant: 20.6, 16.6, 12.6 (mean of steps 2..6)
  QVERIFY(qAbs(set->at(0) - 20.6) < 1e-9);
  QVERIFY(qAbs(set->at(2) - 12.6) < 1e-9);
  QCOMPARE(view.baselineChooser()->count(), 3);
  QCOMPARE(view.baselineChooser()->currentIndex(), 0);
  QCOMPARE(view.speedupLabels(), (QStringList{"1.00x", "1.24x", "1.63x"}));
  // the category labels are the variants' labels in full (here the run names, no tag); the
  // speedups stand above the bars, with mean and n (one run each: no ± std, no error bar)
  QCOMPARE(view.categoryLabels(), (QStringList{"ec", "hier", "dc"}));
  QCOMPARE(view.barNotes(), (QStringList{"1.00x baseline\n20.60\nn = 1", "1.24x\n16.60\nn = 1", "1.63x\n12.60\nn = 1"}));

  // the baseline combo changes the speedup labels (12.6 / 20.6 = 0.61, 12.6 / 16.6 = 0.76)
  view.baselineChooser()->setCurrentIndex(2);
  QCOMPARE(view.model()->baselineRunId(), m_dc);
  QCOMPARE(view.speedupLabels(), (QStringList{"0.61x", "0.76x", "1.00x"}));
  QCOMPARE(view.barNotes().at(0), QStringLiteral("0.61x\n20.60\nn = 1"));
  QCOMPARE(view.barNotes().at(2), QStringLiteral("1.00x baseline\n12.60\nn = 1"));
  QVERIFY(view.setBaseline(m_hier));
  QCOMPARE(view.speedupLabels().at(0), QStringLiteral("0.81x"));
  QVERIFY(!view.setBaseline(9999));

  // the metric chooser: tokens/s bars (mean of 64000 / step_ms over steps 2..6)
  view.metricChooser()->setCurrentIndex(1);
  QCOMPARE(view.metric(), AblationView::TokensPerS);
  bars = qobject_cast<QBarSeries*>(view.chartView()->chart()->series().first());
  double tps = 0;
  for (int s = 2; s <= fx::kSteps; ++s) tps += fx::tokensPerS(0, s) / (fx::kSteps - 1);
  QVERIFY(qAbs(bars->barSets().first()->at(0) - tps) < 1e-6);
  QCOMPARE(view.speedupLabels().at(0), QStringLiteral("0.81x"));  // speedups stay ms/step based

  // a run without ms/step
  view.setRuns(m_store, {m_ec, m_broken});
  QCOMPARE(view.speedupLabels(), (QStringList{"1.00x", "no ms/step"}));
}

void TestGuiAnalysisViews::trafficRendersAndSteps() {
  TrafficView view;
  view.setRuns(m_store, {m_ec});
  QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
  checkRenders(view);
  TrafficMatrixModel* model = view.model(m_ec);
  QVERIFY(model);
  QCOMPARE(view.heatmap(), view.heatmap(m_ec));
  QCOMPARE(view.heatmap()->model(), static_cast<QAbstractItemModel*>(model));
  QCOMPARE(model->rowCount(), fx::kRanks);
  QCOMPARE(view.stepChooser()->count(), fx::kSteps + 1);  // all steps + 6 steps
  QCOMPARE(view.currentStep(), TrafficMatrixModel::kAllSteps);
  QVERIFY(view.heatmap()->showsLinkLegend());
  QCOMPARE(view.panel(m_ec)->title(), QStringLiteral("#%1 ec · measured").arg(m_ec));
  const QString allTotals = view.totalsText(m_ec);
  QVERIFY2(allTotals.contains(moebench::gui::compactBytes(model->intraBytes())) && allTotals.contains("per step"),
           qPrintable(allTotals));
  // one step: the cells and the totals change. By hand, step 5, rank 0 -> 3: 100 + 30 + (5 - 1) = 134
  QVERIFY(view.selectStep(5));
  QCOMPARE(model->step(), int64_t(5));
  QCOMPARE(model->bytesAt(0, 3), 134.0);
  QVERIFY(view.totalsText(m_ec) != allTotals);
  QVERIFY2(view.totalsText(m_ec).contains("in step 5"), qPrintable(view.totalsText(m_ec)));
  double intra = 0;
  for (int r = 0; r < fx::kRanks; ++r)
    for (int p = 0; p < fx::kRanks; ++p)
      if (r != p && fx::sameNode(r, p)) intra += double(fx::trafficBytes(0, 5, r, p));
  QCOMPARE(model->intraBytes(), intra);
  QVERIFY(!view.selectStep(42));
  QVERIFY(!view.selectStep(0));  // steps are 1-based
  // the run without traffic: its panel says so
  view.setRuns(m_store, {m_broken});
  QVERIFY(view.message().isEmpty());
  QVERIFY2(view.panelMessage(m_broken).contains("no traffic"), qPrintable(view.panelMessage(m_broken)));
}

// Issue 35: a heatmap per selected run, one colour scale, one step control for all panels.
void TestGuiAnalysisViews::trafficRunsSideBySide() {
  TrafficView view;
  view.setRuns(m_store, {m_ec, m_hier, m_dc, m_broken});
  QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
  checkRenders(view, "TrafficViewRuns");
  const std::vector<int64_t> ids = {m_ec, m_hier, m_dc};
  for (int v = 0; v < 3; ++v) {
    const int64_t id = ids[size_t(v)];
    // the header: full, in the run's colour; the panel's heatmap shows its own run
    RunPanel* panel = view.panel(id);
    QVERIFY(panel && panel->isVisible());
    QCOMPARE(panel->title(), QStringLiteral("#%1 %2 · measured").arg(id).arg(fx::kRunNames[v]));
    QCOMPARE(panel->header()->palette().color(QPalette::WindowText), moebench::gui::runColor(id));
    QVERIFY(!panel->title().contains(u'…'));
    QVERIFY(panel->header()->width() >= panel->header()->fontMetrics().horizontalAdvance(panel->title()) ||
            panel->header()->wordWrap());
    QCOMPARE(view.model(id)->runId(), id);
    QVERIFY(view.heatmap(id)->isVisible());
    // mean per step of 3 -> 2: 400 + 20 + 2.5 + 1000 v
    QCOMPARE(view.model(id)->bytesAt(3, 2), 422.5 + 1000 * v);
    // the legend line ("0 .. max 2.42 kB (shared)  intra-node  inter-node") fits the panel whole
    QVERIFY2(view.heatmap(id)->width() >= view.heatmap(id)->minimumSizeHint().width(),
             qPrintable(QString::number(view.heatmap(id)->width())));
  }
  QVERIFY(view.panelMessage(m_broken).contains("no traffic"));
  // one colour scale: the largest cell over all runs (dc's 2422.5), on every model and legend
  double top = 0;
  for (int64_t id : ids) top = std::max(top, view.model(id)->maxBytes());
  QCOMPARE(view.scaleMax(), top);
  QCOMPARE(view.scaleMax(), 2422.5);
  for (int64_t id : ids) {
    QCOMPARE(view.model(id)->scaleMax(), 2422.5);
    QCOMPARE(view.heatmap(id)->legendScaleText(), moebench::gui::compactBytes(2422.5));
  }
  QVERIFY(qAbs(view.model(m_ec)->index(3, 2).data(HeatmapRoles::IntensityRole).toDouble() - 422.5 / 2422.5) < 1e-12);
  QCOMPARE(view.model(m_dc)->index(3, 2).data(HeatmapRoles::IntensityRole).toDouble(), 1.0);
  QVERIFY2(view.scaleText().contains(moebench::gui::compactBytes(2422.5)), qPrintable(view.scaleText()));
  // the same bytes, the same colour: ec's largest cell is lighter than dc's
  const QImage ecImg = view.heatmap(m_ec)->grab().toImage(), dcImg = view.heatmap(m_dc)->grab().toImage();
  const QRect ecCell = view.heatmap(m_ec)->cellRect(3, 2), dcCell = view.heatmap(m_dc)->cellRect(3, 2);
  QVERIFY(QColor(ecImg.pixel(ecCell.left() + 4, ecCell.top() + 4)).lightness() >
          QColor(dcImg.pixel(dcCell.left() + 4, dcCell.top() + 4)).lightness() + 40);
  // the step control changes every panel: step 5, 0 -> 3 = 134 + 1000 v
  QVERIFY(view.selectStep(5));
  for (int v = 0; v < 3; ++v) {
    QCOMPARE(view.model(ids[size_t(v)])->step(), int64_t(5));
    QCOMPARE(view.model(ids[size_t(v)])->bytesAt(0, 3), 134.0 + 1000 * v);
    QVERIFY(view.totalsText(ids[size_t(v)]).contains("in step 5"));
  }
  QCOMPARE(view.scaleMax(), 2424.0);  // 400 + 20 + 4 + 2000
  // hiding a run removes its panel; the scale is then the others' largest cell
  QVERIFY(view.setRunVisible(m_dc, false));
  QVERIFY(!view.panel(m_dc)->isVisible());
  QCOMPARE(view.scaleMax(), 1424.0);
  QCOMPARE(view.model(m_ec)->scaleMax(), 1424.0);
  view.setRunVisible(m_dc, true);
  QVERIFY(view.panel(m_dc)->isVisible());
  QCOMPARE(view.scaleMax(), 2424.0);
  QCOMPARE(view.currentStep(), int64_t(5));
  // a run that lacks the chosen step says so in its panel; the others show it
  QTemporaryDir dir;
  const QString path = fx::write(dir);
  {
    RunStore rw(path.toStdString());
    RunInfo info;
    info.name = "short";
    info.ranks = 2;
    const int64_t id = rw.create_run(info).id;
    rw.log_step(id, {{"loss", 1, 1.0, 0}}, {}, {{1, 0, 1, "intra_node", 50}, {1, 1, 0, "intra_node", 70}}, {});
  }
  auto store = std::make_shared<RunStore>(path.toStdString(), RunStore::Mode::read_only);
  const int64_t shortRun = store->find_run("short").id, ec = store->find_run("ec").id;
  view.setRuns(store, {ec, shortRun});
  QCOMPARE(view.currentStep(), int64_t(5));  // kept
  QVERIFY(view.panelMessage(ec).isEmpty());
  QVERIFY2(view.panelMessage(shortRun).contains("no traffic rows in step 5"), qPrintable(view.panelMessage(shortRun)));
  QVERIFY(view.selectStep(1));
  QVERIFY(view.panelMessage(shortRun).isEmpty());
  QCOMPARE(view.model(shortRun)->bytesAt(1, 0), 70.0);
  QCOMPARE(view.scaleMax(), 420.0);  // ec's step 1: 400 + 20 + 0
}

void TestGuiAnalysisViews::expertLoadSlider() {
  ExpertLoadView view;
  view.setRuns(m_store, {m_hier});
  QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
  checkRenders(view);
  ExpertLoadModel* model = view.model(m_hier);
  QVERIFY(view.allStepsCheck()->isChecked());
  QVERIFY(!view.slider()->isEnabled());
  QCOMPARE(view.slider()->maximum(), fx::kSteps - 1);
  QCOMPARE(view.currentStep(), ExpertLoadModel::kAllSteps);
  QCOMPARE(model->index(0, 0).data().toString(), QStringLiteral("252"));  // all steps summed
  // layer 1 over all steps: experts 252 + 48 e -> max 396 / mean 324 = 1.222
  QVERIFY2(view.imbalanceText(m_hier).contains("layer 1: 1.22 (expert 3)"), qPrintable(view.imbalanceText(m_hier)));

  // uncheck "all steps": the slider picks one step
  view.allStepsCheck()->setChecked(false);
  QVERIFY(view.slider()->isEnabled());
  QCOMPARE(view.currentStep(), int64_t(1));  // the slider's first position: step 1
  // step 1, layer 0, expert 0: 4 * 8 + (0+1+2+3) = 38
  QCOMPARE(model->index(0, 0).data().toString(), QStringLiteral("38"));
  QCOMPARE(view.stepText(), QStringLiteral("step 1 (1 of 6)"));
  view.slider()->setValue(2);
  QCOMPARE(view.currentStep(), int64_t(3));
  QCOMPARE(model->index(0, 0).data().toString(), QStringLiteral("46"));  // + 4 * ((3 - 1) % 3)
  for (int L = 0; L < fx::kLayers; ++L)
    for (int e = 0; e < fx::kExperts; ++e) {
      int64_t sum = 0;
      for (int r = 0; r < fx::kRanks; ++r) sum += fx::routedTokens(3, L, r, e);
      QCOMPARE(model->tokensAt(L, e), sum);
    }
  // step 3, layer 0: experts 46, 50, 54, 58 -> max 58 / mean 52 = 1.115
  QVERIFY2(view.imbalanceText(m_hier).contains("layer 0: 1.12 (expert 3)"), qPrintable(view.imbalanceText(m_hier)));
  QVERIFY(view.selectStep(6));
  QCOMPARE(view.slider()->value(), 5);
  QVERIFY(!view.selectStep(0));
  QVERIFY(!view.selectStep(99));
  QVERIFY(view.selectStep(ExpertLoadModel::kAllSteps));
  QVERIFY(view.allStepsCheck()->isChecked());
  QCOMPARE(model->index(0, 0).data().toString(), QStringLiteral("252"));
  view.setRuns(m_store, {m_broken});
  QVERIFY(view.message().isEmpty());
  QVERIFY2(view.panelMessage(m_broken).contains("no routing"), qPrintable(view.panelMessage(m_broken)));
}

void TestGuiAnalysisViews::expertLoadShadowed() {
  // fx::addShadowedRun: block 0 expert 3 shadowed in steps 1, 2, 4, expert 1 in step 2; block 2
  // expert 0 in step 3.
  QTemporaryDir dir;
  auto store = std::make_shared<RunStore>(dir.filePath("runs.db").toStdString());
  const int64_t id = fx::addShadowedRun(*store);
  ExpertLoadView view;
  view.setRuns(store, {id});
  QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
  checkRenders(view, "ExpertLoadShadowed");
  QCOMPARE(view.shadowedText(id), QStringLiteral("Shadowed by FasterMoE (outlined cells): layer 0: expert 1 in 1 of 4 "
                                                 "steps, expert 3 in 3 of 4 steps;  layer 2: expert 0 in 1 of 4 steps"));
  QVERIFY(view.shadowedLabel(id)->isVisible());
  HeatmapView* heat = view.heatmap(id);
  ExpertLoadModel* model = view.model(id);
  QVERIFY(heat->showsMarkLegend());
  QCOMPARE(heat->markLegendText(), QStringLiteral("shadowed (FasterMoE)"));
  QVERIFY(HeatmapView::isMarked(model->index(0, 3)));
  QVERIFY(!HeatmapView::isMarked(model->index(0, 0)));
  // The marks are painted: the corner flag and the outline in the mark colour on the shadowed
  // cell, not on its unshadowed neighbour.
  const QImage img = heat->grab().toImage();
  const QRgb mark = HeatmapView::markColor().rgb();
  const QRect marked = heat->cellRect(0, 3), plain = heat->cellRect(0, 2);
  QCOMPARE(img.pixel(marked.right() - 2, marked.top() + 2), mark);
  QCOMPARE(img.pixel(marked.left() + 2, marked.center().y()), mark);
  QVERIFY(img.pixel(plain.right() - 2, plain.top() + 2) != mark);
  QVERIFY(img.pixel(plain.left() + 2, plain.center().y()) != mark);
  // One step: the experts shadowed in it.
  QVERIFY(view.selectStep(2));
  QCOMPARE(view.shadowedText(id), QStringLiteral("Shadowed by FasterMoE (outlined cells): layer 0: experts 1, 3;  layer 2: none"));
  QVERIFY(view.selectStep(3));
  QCOMPARE(view.shadowedText(id), QStringLiteral("Shadowed by FasterMoE (outlined cells): layer 0: none;  layer 2: expert 0"));
  QVERIFY(!HeatmapView::isMarked(model->index(0, 3)));
  // A run without shadowing: no line, no mark legend.
  view.setRuns(m_store, {m_ec});
  QCOMPARE(view.shadowedText(m_ec), QString());
  QVERIFY(!view.shadowedLabel(m_ec)->isVisible());
  QVERIFY(!view.heatmap(m_ec)->showsMarkLegend());
}

// Issue 35: a heatmap per run under one colour scale and one step control. The fixture's "ec"
// (6 steps) beside the shadowed run "fm" (4 steps, other token counts).
void TestGuiAnalysisViews::expertLoadRunsSideBySide() {
  QTemporaryDir dir;
  const QString path = fx::write(dir);
  int64_t fm = -1;
  {
    RunStore rw(path.toStdString());
    fm = fx::addShadowedRun(rw);
  }
  auto store = std::make_shared<RunStore>(path.toStdString(), RunStore::Mode::read_only);
  const int64_t ec = store->find_run("ec").id, hier = store->find_run("hier").id;
  ExpertLoadView view;
  view.setRuns(store, {ec, fm, hier});
  QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
  checkRenders(view, "ExpertLoadViewRuns");
  QCOMPARE(view.panel(fm)->title(), QStringLiteral("#%1 fm · measured").arg(fm));
  QCOMPARE(view.panel(fm)->header()->palette().color(QPalette::WindowText), moebench::gui::runColor(fm));
  for (int64_t id : {ec, fm, hier}) {
    QVERIFY(view.panel(id)->isVisible());
    QCOMPARE(view.model(id)->runId(), id);
    QVERIFY(view.panelMessage(id).isEmpty());
  }
  // the slider covers every step of the shown runs: 1..6
  QCOMPARE(view.steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  // all steps: ec's layer 1 expert 3 = 396 tokens, fm's block 0 expert 3: 4 steps x 4 ranks x 8 = 128
  QCOMPARE(view.model(ec)->tokensAt(1, 3), int64_t(396));
  QCOMPARE(view.model(fm)->tokensAt(0, 3), int64_t(128));
  QCOMPARE(view.scaleMax(), std::max({view.model(ec)->maxTokens(), view.model(fm)->maxTokens(), view.model(hier)->maxTokens()}));
  QCOMPARE(view.scaleMax(), int64_t(396));
  QCOMPARE(view.model(fm)->scaleMax(), int64_t(396));
  QVERIFY(qAbs(view.model(fm)->index(0, 3).data(HeatmapRoles::IntensityRole).toDouble() - 128.0 / 396.0) < 1e-12);
  QCOMPARE(view.heatmap(fm)->legendScaleText(), QStringLiteral("396"));
  // one step for every panel: step 2. ec layer 1 expert 3: 4 * (8 + 6 + 1) + 6 = 66; fm block 0
  // expert 3: 4 x 8 = 32
  QVERIFY(view.selectStep(2));
  for (int64_t id : {ec, fm, hier}) QCOMPARE(view.model(id)->step(), int64_t(2));
  QCOMPARE(view.model(ec)->tokensAt(1, 3), int64_t(66));
  QCOMPARE(view.model(fm)->tokensAt(0, 3), int64_t(32));
  QCOMPARE(view.scaleMax(), int64_t(66));
  QVERIFY(view.imbalanceText(fm).contains("step 2"));
  QVERIFY(view.imbalanceText(ec).contains("step 2"));
  // step 5: fm has no routing rows there and says so; the others show step 5
  QVERIFY(view.selectStep(5));
  QVERIFY2(view.panelMessage(fm).contains("no routing rows in step 5"), qPrintable(view.panelMessage(fm)));
  QVERIFY(view.panelMessage(ec).isEmpty());
  QCOMPARE(view.model(ec)->step(), int64_t(5));
  // hide ec and hier: the slider's steps are fm's, step 5 gone -> all steps
  QVERIFY(view.setRunVisible(ec, false));
  QVERIFY(view.setRunVisible(hier, false));
  QVERIFY(!view.panel(ec)->isVisible());
  QCOMPARE(view.steps(), (std::vector<int64_t>{1, 2, 3, 4}));
  QCOMPARE(view.currentStep(), ExpertLoadModel::kAllSteps);
  QCOMPARE(view.scaleMax(), int64_t(128));
  QCOMPARE(view.heatmap(), view.heatmap(fm));
  view.setRunVisible(fm, false);
  QVERIFY2(view.message().contains("hidden"), qPrintable(view.message()));
}

void TestGuiAnalysisViews::heatmapGeometryAndColours() {
  TrafficMatrixModel model;
  model.setRun(m_store, m_ec);
  HeatmapView view;
  view.setModel(&model);
  view.resize(500, 300);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  // cells are laid out in a grid and found again from their centre
  const QRect a = view.cellRect(0, 0), b = view.cellRect(1, 2);
  QVERIFY(a.isValid() && b.isValid());
  QCOMPARE(b.left(), a.left() + 2 * a.width());
  QCOMPARE(b.top(), a.top() + a.height());
  QCOMPARE(view.cellAt(b.center()), model.index(1, 2));
  QVERIFY(!view.cellAt(QPoint(1, 1)).isValid());  // the header corner
  QVERIFY(!view.cellRect(4, 0).isValid());
  // the ramp: light for 0, dark for 1
  QVERIFY(HeatmapView::rampColor(0).lightness() > 230);
  QVERIFY(HeatmapView::rampColor(1).lightness() < 80);
  QVERIFY(HeatmapView::rampColor(0.5).lightness() < HeatmapView::rampColor(0.25).lightness());
  const QImage img = view.grab().toImage();
  // the largest cell (3 -> 2, inter-node) is dark; the diagonal is light
  const QRect big = view.cellRect(3, 2), diag = view.cellRect(2, 2);
  QVERIFY(QColor(img.pixel(big.left() + big.width() / 5, big.top() + big.height() / 2)).lightness() < 120);
  QVERIFY(QColor(img.pixel(diag.left() + diag.width() / 5, diag.top() + diag.height() / 2)).lightness() > 200);
  // inter-node cells have a thick dark border, intra-node cells do not: rank 0 -> 2 (inter,
  // 122.5 B) and rank 0 -> 1 (intra, 112.5 B) have about the same colour
  const QRect inter = view.cellRect(0, 2), intra = view.cellRect(0, 1);
  QVERIFY(HeatmapView::isInterNode(model.index(0, 2)));
  QVERIFY(!HeatmapView::isInterNode(model.index(0, 1)));
  QVERIFY(QColor(img.pixel(inter.left() + 1, inter.center().y())).lightness() < 80);
  QVERIFY(QColor(img.pixel(intra.left() + 1, intra.center().y())).lightness() > 120);
  // a tooltip with the exact value
  QVERIFY(model.index(0, 2).data(Qt::ToolTipRole).toString().contains("122.5"));
}

void TestGuiAnalysisViews::emptySelectionAndErrors() {
  PhaseBreakdownView phase;
  AblationView ablation;
  TrafficView traffic;
  ExpertLoadView load;
  // no store
  QVERIFY(phase.message().contains("Open a run store"));
  QVERIFY(ablation.message().contains("Open a run store"));
  // empty selection: a hint, and it renders
  phase.setRuns(m_store, {});
  ablation.setRuns(m_store, {});
  traffic.setRuns(m_store, {});
  load.setRuns(m_store, {});
  for (const QString& m : {phase.message(), ablation.message(), traffic.message(), load.message()})
    QVERIFY2(m.startsWith("Select"), qPrintable(m));
  checkRenders(traffic, "TrafficViewEmpty");
  QCOMPARE(traffic.heatmap(), nullptr);
  QVERIFY(!traffic.runToggle(m_ec));
  // shown, then deselected: the content goes away
  load.setRuns(m_store, {m_ec});
  QCOMPARE(load.model(m_ec)->rowCount(), fx::kLayers);
  load.setRuns(m_store, {});
  QCOMPARE(load.model(m_ec), nullptr);
  QCOMPARE(load.panel(m_ec), nullptr);
  QVERIFY(load.message().startsWith("Select"));
  // a bad run id: its panel (or, in Phases, the line naming the runs without bars) says so, the
  // other runs are shown, nothing is thrown
  phase.setRuns(m_store, {m_ec, 9999});
  ablation.setRuns(m_store, {m_ec, 9999});
  traffic.setRuns(m_store, {m_ec, 9999});
  load.setRuns(m_store, {m_ec, 9999});
  QVERIFY2(ablation.message().contains("9999"), qPrintable(ablation.message()));
  QVERIFY2(phase.problemsText().contains("#9999 · not in the store: cannot show run 9999"), qPrintable(phase.problemsText()));
  QCOMPARE(phase.runsModel()->rowCount(), fx::kLayers + 2);
  for (const QString& m : {traffic.panelMessage(9999), load.panelMessage(9999)})
    QVERIFY2(m.contains("Cannot show run 9999"), qPrintable(m));
  QVERIFY(traffic.panelMessage(m_ec).isEmpty() && load.panelMessage(m_ec).isEmpty());
  QCOMPARE(traffic.panel(9999)->title(), QStringLiteral("#9999 · not in the store"));
  // only a bad run: Phases has no bars and says why in place of the chart
  phase.setRuns(m_store, {9999});
  QVERIFY2(phase.message().contains("9999"), qPrintable(phase.message()));
  // a null store with runs: the open-a-store hint
  traffic.setRuns(nullptr, {m_ec});
  QVERIFY(traffic.message().contains("Open a run store"));
}

QTEST_MAIN(TestGuiAnalysisViews)
#include "tst_gui_analysis_views.moc"
