// ctest-labels: gui
// The timeline with a second run stacked below ("Compare with:"), on the prediction fixture
// (tests/prediction_fixture.h): the measured run "ec" (spans on its executor's clock, from 5 s)
// and its prediction "ec (predicted)" (spans from 0). Checks the chooser, the headers naming each
// run as measured / predicted, the step each run shows (same step, else the first, or chosen),
// lanes that do not overlap, both steps starting at t = 0 on one scale (a point past the measured
// step's end but inside the predicted one's hits only the predicted run), tooltips naming the run,
// and the rendered pixels of both runs' step spans.
#include <QtTest>

#include <QComboBox>

#include <memory>

#include "prediction_fixture.h"
#include "models/timelinegeometry.h"
#include "moebench/store/run_store.h"
#include "widgets/timelinecanvas.h"
#include "widgets/timelineview.h"

using namespace moebench;
namespace pf = moebench::test::prediction_fixture;
namespace tg = moebench::gui;

class TstTimelineCompare : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;
  std::shared_ptr<RunStore> m_store;
  int64_t m_measured = 0, m_predicted = 0, m_hier = 0;

 private slots:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    QVERIFY_THROWS_NO_EXCEPTION(m_store = pf::open(m_dir));
    m_measured = m_store->find_run("ec").id;
    m_predicted = m_store->find_run("ec (predicted)").id;
    m_hier = m_store->find_run("hier").id;
  }

  void chooser_lists_the_store() {
    TimelineView v;
    v.setRuns(m_store, {m_measured});
    QComboBox* c = v.compareChooser();
    QCOMPARE(c->count(), 1 + int(m_store->list_runs().size()));
    QCOMPARE(c->itemData(0).toLongLong(), qint64(-1));
    QCOMPARE(v.comparedRun(), qint64(-1));
    QVERIFY(v.compareStepChooser()->isHidden());
    QCOMPARE(c->itemText(c->findData(QVariant::fromValue<qlonglong>(m_predicted))),
             QStringLiteral("ec (predicted) (#%1) · predicted").arg(m_predicted));
    QCOMPARE(c->itemText(c->findData(QVariant::fromValue<qlonglong>(m_measured))),
             QStringLiteral("ec (#%1) · measured").arg(m_measured));
    QVERIFY(!v.canvas()->isStacked());
    QVERIFY(!v.compareWith(987654));
  }

  void stacks_measured_and_predicted() {
    TimelineView v;
    v.resize(1200, 700);
    v.setRuns(m_store, {m_measured});
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(v.selectStep(2));
    QVERIFY(v.compareWith(m_predicted));
    QCOMPARE(v.comparedRun(), m_predicted);
    QVERIFY(!v.compareStepChooser()->isHidden());
    TimelineCanvas* c = v.canvas();
    QVERIFY(c->isStacked());
    QCOMPARE(c->trackCount(), 2);
    // The same step on both, each header naming the run and what it is.
    QCOMPARE(v.compareStepChooser()->currentData().toLongLong(), qint64(2));
    QCOMPARE(c->trackTitle(0), QStringLiteral("#%1 ec · measured · step 2").arg(m_measured));
    QCOMPARE(c->trackTitle(1), QStringLiteral("#%1 ec (predicted) · predicted · step 2").arg(m_predicted));
    for (const SpanRow& s : c->spans(0)) QCOMPARE(s.step, int64_t(2));
    for (const SpanRow& s : c->spans(1)) QCOMPARE(s.step, int64_t(2));
    QCOMPARE(int(c->spans(1).size()), 2 * 3);

    // Lanes: 2 ranks each, the predicted run's entirely below the measured run's.
    QCOMPARE(c->laneLayout(0).laneCount(), 2);
    QCOMPARE(c->laneLayout(1).laneCount(), 2);
    QVERIFY(c->laneLayout(1).top >= c->laneLayout(0).bottom() + TimelineCanvas::kHeaderHeight);
    QVERIFY(c->pointAt(0, 0, "host", 1).y() > c->pointAt(0, 1, "comm", 0).y());

    // One time axis, both step 2s at t = 0: measured 10 ms (its clock said 6 s), predicted 14 ms.
    QCOMPARE(c->dataStart(), 0.0);
    QVERIFY(std::abs(c->dataEnd() - 0.014) < 1e-12);
    const QString measuredStep = c->tooltipAt(c->pointAt(0.005, 0, "host", 0));
    const QString predictedStep = c->tooltipAt(c->pointAt(0.005, 0, "host", 1));
    QVERIFY2(measuredStep.startsWith(c->trackTitle(0)) && measuredStep.contains("duration 10.000 ms"),
             qPrintable(measuredStep));
    QVERIFY2(predictedStep.startsWith(c->trackTitle(1)) && predictedStep.contains("duration 14.000 ms"),
             qPrintable(predictedStep));
    // 12 ms: past the measured step's end (over 100 px at this width), inside the predicted one.
    QVERIFY(c->tooltipAt(c->pointAt(0.012, 0, "host", 0)).isEmpty());
    QVERIFY(c->tooltipAt(c->pointAt(0.012, 0, "host", 1)).contains("duration 14.000 ms"));
    // "forward" is 0.4 D: 4 ms measured, 5.6 ms predicted, both from 0: at 5 ms only the predicted.
    QVERIFY(c->tooltipAt(c->pointAt(0.0035, 1, "compute", 0)).contains("forward"));
    QVERIFY(c->tooltipAt(c->pointAt(0.005, 1, "compute", 0)).isEmpty());
    QVERIFY(c->tooltipAt(c->pointAt(0.005, 1, "compute", 1)).contains("forward"));

    // Rendered: both runs' "step" spans in the compute colour at 5 ms, background at 12 ms in
    // the measured run's host lane.
    const QImage shot = c->grab().toImage();
    if (qEnvironmentVariableIsSet("MOEBENCH_GUI_SHOTS"))  // to look at
      v.grab().save(qEnvironmentVariable("MOEBENCH_GUI_SHOTS") + "/timeline-compare.png");
    const QColor compute = tg::categoryColor("compute");
    QCOMPARE(shot.pixelColor(c->pointAt(0.005, 0, "host", 0).toPoint()), compute);
    QCOMPARE(shot.pixelColor(c->pointAt(0.005, 0, "host", 1).toPoint()), compute);
    QVERIFY(shot.pixelColor(c->pointAt(0.012, 0, "host", 0).toPoint()) != compute);
    QVERIFY2(v.statusText().contains("compared with 6 spans below"), qPrintable(v.statusText()));
  }

  void each_run_its_step() {
    TimelineView v;
    v.setRuns(m_store, {m_measured});
    QVERIFY(v.compareWith(m_predicted));
    // The measured run has 4 steps (all shown by default), the predicted run 3: "all steps" on both.
    QCOMPARE(v.currentStep(), TimelineView::kAllSteps);
    QCOMPARE(v.compareStepChooser()->currentData().toLongLong(), qint64(TimelineView::kAllSteps));
    // Step 4 has no predicted spans: the predicted run shows its first step.
    QVERIFY(v.selectStep(4));
    QCOMPARE(v.compareStepChooser()->currentData().toLongLong(), qint64(1));
    QVERIFY(v.canvas()->trackTitle(1).endsWith("step 1"));
    // A step chosen for the second run alone.
    v.compareStepChooser()->setCurrentIndex(v.compareStepChooser()->findData(QVariant::fromValue<qlonglong>(2)));
    QCOMPARE(v.currentStep(), qint64(4));
    for (const SpanRow& s : v.canvas()->spans(0)) QCOMPARE(s.step, int64_t(4));
    for (const SpanRow& s : v.canvas()->spans(1)) QCOMPARE(s.step, int64_t(2));
    // A run without spans: its header says so, the first run stays.
    QVERIFY(v.compareWith(m_hier));
    QCOMPARE(v.canvas()->trackCount(), 2);
    QVERIFY(v.canvas()->spans(1).empty());
    QVERIFY2(v.canvas()->trackTitle(1).endsWith("measured · no spans"), qPrintable(v.canvas()->trackTitle(1)));
    // (none): back to one run on its own clock (step 4 of "ec" starts at 5 + 3 s).
    QVERIFY(v.compareWith(-1));
    QVERIFY(!v.canvas()->isStacked());
    QCOMPARE(v.canvas()->trackCount(), 1);
    QCOMPARE(v.canvas()->dataStart(), 8.0);
    // The comparison survives a new selection in the browser.
    QVERIFY(v.compareWith(m_predicted));
    v.setRuns(m_store, {m_measured, m_hier});
    QCOMPARE(v.comparedRun(), m_predicted);
    QVERIFY(v.canvas()->isStacked());
  }
};

QTEST_MAIN(TstTimelineCompare)
#include "tst_timeline_compare.moc"
