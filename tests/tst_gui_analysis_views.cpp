// ctest-labels: gui
// The analysis views rendered headless on the GUI fixture store: PhaseBreakdownView (stacked
// bars), AblationView (bars + speedup labels, baseline combo), TrafficView and ExpertLoadView
// (HeatmapView, step chooser / slider, shadowed experts marked), plus hints for an empty selection
// and errors.
#include <QtTest>

#include <QBarCategoryAxis>
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
#include "models/phasebreakdownmodel.h"
#include "models/trafficmatrixmodel.h"
#include "moebench/store/run_store.h"
#include "widgets/ablationview.h"
#include "widgets/expertloadview.h"
#include "widgets/heatmapview.h"
#include "widgets/phasebreakdownview.h"
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
  void ablationRendersAndBaseline();
  void trafficRendersAndSteps();
  void expertLoadSlider();
  void expertLoadShadowed();
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
  QVERIFY(!view.runChooser()->isVisible());  // one run: no chooser
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
  auto* axis = qobject_cast<QBarCategoryAxis*>(chart->axes(Qt::Vertical).value(0));
  QVERIFY(axis);
  QCOMPARE(axis->categories(), (QStringList{"whole step", "other", "layer 1", "layer 0"}));
  QVERIFY(qAbs(series->barSets().at(0)->at(3) - 1.854) < 1e-9);
  QVERIFY(qAbs(series->barSets().at(0)->at(0) - 16.068) < 1e-9);
  QVERIFY(qAbs(series->barSets().at(2)->at(0) - 2.06) < 1e-9);
  QCOMPARE(series->barSets().at(2)->at(3), 0.0);
  QVERIFY(view.noteText().contains("20 (step, rank) pairs"));

  // several runs: a chooser; choosing another run reloads
  view.setRuns(m_store, {m_ec, m_dc});
  QVERIFY(view.runChooser()->isVisible());
  QCOMPARE(view.runChooser()->count(), 2);
  QCOMPARE(view.currentRun(), m_ec);  // the shown run stays
  view.runChooser()->setCurrentIndex(1);
  QCOMPARE(view.currentRun(), m_dc);
  QCOMPARE(view.model()->runId(), m_dc);
  // dc: mean step (13 + 12 + 13 + 12 + 13) / 5 = 12.6 ms -> layer 0 compute 0.09 * 12.6 = 1.134
  series = qobject_cast<QHorizontalStackedBarSeries*>(view.chartView()->chart()->series().first());
  QVERIFY(qAbs(series->barSets().at(0)->at(3) - 1.134) < 1e-9);

  // a run without spans: a message saying so
  view.setRuns(m_store, {m_broken});
  QVERIFY2(view.message().contains("no step spans"), qPrintable(view.message()));
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
  QCOMPARE(view.heatmap()->model(), static_cast<QAbstractItemModel*>(view.model()));
  QCOMPARE(view.model()->rowCount(), fx::kRanks);
  QCOMPARE(view.stepChooser()->count(), fx::kSteps + 1);  // all steps + 6 steps
  QCOMPARE(view.currentStep(), TrafficMatrixModel::kAllSteps);
  QVERIFY(view.heatmap()->showsLinkLegend());
  const QString allTotals = view.totalsText();
  QVERIFY2(allTotals.contains(moebench::gui::compactBytes(view.model()->intraBytes())) &&
               allTotals.contains("per step"),
           qPrintable(allTotals));
  // one step: the cells and the totals change. By hand, step 5, rank 0 -> 3: 100 + 30 + (5 - 1) = 134
  QVERIFY(view.selectStep(5));
  QCOMPARE(view.model()->step(), int64_t(5));
  QCOMPARE(view.model()->bytesAt(0, 3), 134.0);
  QVERIFY(view.totalsText() != allTotals);
  QVERIFY2(view.totalsText().contains("in step 5"), qPrintable(view.totalsText()));
  double intra = 0;
  for (int r = 0; r < fx::kRanks; ++r)
    for (int p = 0; p < fx::kRanks; ++p)
      if (r != p && fx::sameNode(r, p)) intra += double(fx::trafficBytes(0, 5, r, p));
  QCOMPARE(view.model()->intraBytes(), intra);
  QVERIFY(!view.selectStep(42));
  QVERIFY(!view.selectStep(0));  // steps are 1-based
  // the run without traffic: a message
  view.setRuns(m_store, {m_broken});
  QVERIFY2(view.message().contains("no traffic"), qPrintable(view.message()));
}

void TestGuiAnalysisViews::expertLoadSlider() {
  ExpertLoadView view;
  view.setRuns(m_store, {m_hier});
  QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
  checkRenders(view);
  QVERIFY(view.allStepsCheck()->isChecked());
  QVERIFY(!view.slider()->isEnabled());
  QCOMPARE(view.slider()->maximum(), fx::kSteps - 1);
  QCOMPARE(view.currentStep(), ExpertLoadModel::kAllSteps);
  QCOMPARE(view.model()->index(0, 0).data().toString(), QStringLiteral("252"));  // all steps summed
  // layer 1 over all steps: experts 252 + 48 e -> max 396 / mean 324 = 1.222
  QVERIFY2(view.imbalanceText().contains("layer 1: 1.22 (expert 3)"), qPrintable(view.imbalanceText()));

  // uncheck "all steps": the slider picks one step
  view.allStepsCheck()->setChecked(false);
  QVERIFY(view.slider()->isEnabled());
  QCOMPARE(view.currentStep(), int64_t(1));  // the slider's first position: step 1
  // step 1, layer 0, expert 0: 4 * 8 + (0+1+2+3) = 38
  QCOMPARE(view.model()->index(0, 0).data().toString(), QStringLiteral("38"));
  const QLabel* stepLabel = view.findChild<QLabel*>("stepLabel");
  QVERIFY(stepLabel);
  QCOMPARE(stepLabel->text(), QStringLiteral("step 1 (1 of 6)"));
  view.slider()->setValue(2);
  QCOMPARE(view.currentStep(), int64_t(3));
  QCOMPARE(view.model()->index(0, 0).data().toString(), QStringLiteral("46"));  // + 4 * ((3 - 1) % 3)
  for (int L = 0; L < fx::kLayers; ++L)
    for (int e = 0; e < fx::kExperts; ++e) {
      int64_t sum = 0;
      for (int r = 0; r < fx::kRanks; ++r) sum += fx::routedTokens(3, L, r, e);
      QCOMPARE(view.model()->tokensAt(L, e), sum);
    }
  // step 3, layer 0: experts 46, 50, 54, 58 -> max 58 / mean 52 = 1.115
  QVERIFY2(view.imbalanceText().contains("layer 0: 1.12 (expert 3)"), qPrintable(view.imbalanceText()));
  QVERIFY(view.selectStep(6));
  QCOMPARE(view.slider()->value(), 5);
  QVERIFY(!view.selectStep(0));
  QVERIFY(!view.selectStep(99));
  QVERIFY(view.selectStep(ExpertLoadModel::kAllSteps));
  QVERIFY(view.allStepsCheck()->isChecked());
  QCOMPARE(view.model()->index(0, 0).data().toString(), QStringLiteral("252"));
  view.setRuns(m_store, {m_broken});
  QVERIFY2(view.message().contains("no routing"), qPrintable(view.message()));
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
  QCOMPARE(view.shadowedText(), QStringLiteral("Shadowed by FasterMoE (outlined cells): layer 0: expert 1 in 1 of 4 "
                                               "steps, expert 3 in 3 of 4 steps;  layer 2: expert 0 in 1 of 4 steps"));
  QVERIFY(view.findChild<QLabel*>("shadowed")->isVisible());
  HeatmapView* heat = view.heatmap();
  QVERIFY(heat->showsMarkLegend());
  QCOMPARE(heat->markLegendText(), QStringLiteral("shadowed (FasterMoE)"));
  QVERIFY(HeatmapView::isMarked(view.model()->index(0, 3)));
  QVERIFY(!HeatmapView::isMarked(view.model()->index(0, 0)));
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
  QCOMPARE(view.shadowedText(), QStringLiteral("Shadowed by FasterMoE (outlined cells): layer 0: experts 1, 3;  layer 2: none"));
  QVERIFY(view.selectStep(3));
  QCOMPARE(view.shadowedText(), QStringLiteral("Shadowed by FasterMoE (outlined cells): layer 0: none;  layer 2: expert 0"));
  QVERIFY(!HeatmapView::isMarked(view.model()->index(0, 3)));
  // A run without shadowing: no line, no mark legend.
  view.setRuns(m_store, {m_ec});
  QCOMPARE(view.shadowedText(), QString());
  QVERIFY(!view.findChild<QLabel*>("shadowed")->isVisible());
  QVERIFY(!heat->showsMarkLegend());
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
  QCOMPARE(traffic.model()->rowCount(), 0);
  // shown, then deselected: the content goes away
  load.setRuns(m_store, {m_ec});
  QCOMPARE(load.model()->rowCount(), fx::kLayers);
  load.setRuns(m_store, {});
  QCOMPARE(load.model()->rowCount(), 0);
  QVERIFY(load.message().startsWith("Select"));
  // a bad run id: a message naming it, nothing thrown
  phase.setRuns(m_store, {9999});
  ablation.setRuns(m_store, {m_ec, 9999});
  traffic.setRuns(m_store, {9999});
  load.setRuns(m_store, {9999});
  for (const QString& m : {phase.message(), ablation.message(), traffic.message(), load.message()})
    QVERIFY2(m.contains("9999"), qPrintable(m));
  // a null store with runs: the open-a-store hint
  traffic.setRuns(nullptr, {m_ec});
  QVERIFY(traffic.message().contains("Open a run store"));
}

QTEST_MAIN(TestGuiAnalysisViews)
#include "tst_gui_analysis_views.moc"
