// ctest-labels: gui
// The timeline view on the fixture run store (tests/gui_fixture.h): step selector, spans of a
// step, lanes per rank and stream, zoom / pan / rubber band / fit driven by real wheel, key and
// mouse events, hover tooltips, rendering; and a million synthetic spans rendered with a bounded
// number of painted items (times printed with qInfo, not asserted).
#include <QtTest>

#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QToolTip>
#include <QWheelEvent>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "gui_fixture.h"
#include "models/timelinegeometry.h"
#include "models/timelinetext.h"
#include "moebench/store/run_store.h"
#include "widgets/timelinecanvas.h"
#include "widgets/timelineview.h"

using namespace moebench;
namespace fx = moebench::test::gui_fixture;
namespace tg = moebench::gui;

namespace {
bool near(double a, double b, double rel = 1e-9) { return std::abs(a - b) <= rel * std::max(1.0, std::abs(b)); }

void sendWheel(QWidget* w, QPointF pos, QPoint angleDelta, Qt::KeyboardModifiers mods = Qt::NoModifier) {
  QWheelEvent e(pos, w->mapToGlobal(pos), QPoint(), angleDelta, Qt::NoButton, mods, Qt::NoScrollPhase, false);
  QApplication::sendEvent(w, &e);
}

// A point in the middle of the lanes (rank 0, compute) at pixel x.
QPoint lanePoint(const TimelineCanvas* c, double x) {
  return QPointF(x, c->pointAt(c->axis().t0, 0, "compute").y()).toPoint();
}

// 1,000,000 spans: 4 ranks x 4 streams x 62,500 spans, one every 16 us, 4..12 us long.
std::vector<SpanRow> millionSpans() {
  const char* streams[] = {"host", "compute", "compute.comm", "comm"};
  std::vector<SpanRow> out;
  out.reserve(1000000);
  for (int rank = 0; rank < 4; ++rank)
    for (int s = 0; s < 4; ++s)
      for (int k = 0; k < 62500; ++k) {
        SpanRow r;
        r.step = k / 1000;
        r.rank = rank;
        r.stream = streams[s];
        r.name = s >= 2 ? "moe.dispatch" : "moe.experts";
        r.category = s >= 2 ? "comm" : "compute";
        r.start = k * 16e-6;
        r.duration = (4 + (k + rank) % 9) * 1e-6;
        r.bytes = s >= 2 ? 1024 : 0;
        r.peer = s == 3 ? (rank + 1) % 4 : -1;
        out.push_back(std::move(r));
      }
  return out;
}
}  // namespace

class TstTimelineView : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;
  std::shared_ptr<RunStore> m_store;
  int64_t m_runs[4] = {};  // ec, hier, dc, broken

  // A view showing run `ec` at 1200 x 700, exposed offscreen.
  std::unique_ptr<TimelineView> makeView(int64_t step = TimelineView::kAllSteps) {
    auto v = std::make_unique<TimelineView>();
    v->resize(1200, 700);
    v->setRuns(m_store, {m_runs[0]});
    v->show();
    if (!QTest::qWaitForWindowExposed(v.get())) return nullptr;
    if (!v->selectStep(step)) return nullptr;
    return v;
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    const QString path = fx::write(m_dir);
    m_store = std::make_shared<RunStore>(path.toStdString(), RunStore::Mode::read_only);
    const char* names[] = {"ec", "hier", "dc", "broken"};
    for (int i = 0; i < 4; ++i) m_runs[i] = m_store->find_run(names[i]).id;
  }

  void text_helpers() {
    QCOMPARE(tg::formatDuration(0.006), QStringLiteral("6.000 ms"));
    QCOMPARE(tg::formatDuration(2.5e-6), QStringLiteral("2.500 us"));
    QCOMPARE(tg::formatBytes(4096), QStringLiteral("4096 B (4.10 kB)"));
    QCOMPARE(tg::formatBytes(100), QStringLiteral("100 B"));
    SpanRow fwd;
    fwd.stream = "host";
    fwd.name = "forward";
    fwd.chunk = 3;
    QVERIFY(tg::spanTooltip(fwd).endsWith(QStringLiteral("\nmicro-batch 3")));
    fwd.stream = "comm.inter";
    QVERIFY(tg::spanTooltip(fwd).endsWith(QStringLiteral("\nchunk 3")));
    fwd.chunk = -1;
    QVERIFY(!tg::spanTooltip(fwd).contains(QStringLiteral("chunk")));
    // 20 ms over 1000 px, ticks >= 90 px apart: at most 11 ticks, 20/11 = 1.8 ms -> 2 ms step,
    // ticks 0, 2, ..., 20 ms (11 of them), labels without decimals.
    tg::TimeAxis a;
    a.t0 = 0;
    a.t1 = 0.02;
    a.width = 1000;
    const tg::RulerTicks t = tg::rulerTicks(a, 90);
    QCOMPARE(t.stepMs, 2.0);
    QCOMPARE(t.decimals, 0);
    QCOMPARE(int(t.times.size()), 11);
    QCOMPARE(tg::tickLabel(t.times[3], t.decimals), QStringLiteral("6"));
    a.t0 = 0.1001;  // 0.5 ms over 1000 px: 0.05 ms step, 2 decimals
    a.t1 = 0.1006;
    const tg::RulerTicks fine = tg::rulerTicks(a, 90);
    QCOMPARE(fine.stepMs, 0.05);
    QCOMPARE(fine.decimals, 2);
    QCOMPARE(tg::tickLabel(fine.times.front(), fine.decimals), QStringLiteral("100.10"));
  }

  void lists_steps_and_runs() {
    TimelineView v;
    v.setRuns(m_store, {m_runs[0]});
    QVERIFY2(v.message().isEmpty(), qPrintable(v.message()));
    QVERIFY(v.runChooser()->isHidden());  // one run: no chooser
    QComboBox* steps = v.stepChooser();
    QCOMPARE(steps->count(), 1 + fx::kSteps);
    QCOMPARE(steps->itemData(0).toLongLong(), TimelineView::kAllSteps);
    for (int s = 1; s <= fx::kSteps; ++s) QCOMPARE(steps->itemData(s).toLongLong(), qint64(s));  // 1-based
    QCOMPARE(steps->itemText(1), QStringLiteral("step 1"));
    // 6 steps <= kAllStepsByDefault: all steps are shown, 6 x 4 ranks x 18 spans = 432.
    QCOMPARE(v.currentStep(), TimelineView::kAllSteps);
    QCOMPARE(int(v.canvas()->spans().size()), fx::kSteps * fx::kRanks * 18);
    QVERIFY2(v.statusText().startsWith("432 spans · 4 ranks · 16 streams"), qPrintable(v.statusText()));

    v.selectStep(3);
    v.setRuns(m_store, {m_runs[1], m_runs[0]});  // the shown run stays, with its step
    QVERIFY(!v.runChooser()->isHidden());
    QCOMPARE(v.runChooser()->count(), 2);
    QCOMPARE(v.runChooser()->currentText(), QStringLiteral("ec (#%1)").arg(m_runs[0]));
    QCOMPARE(v.currentRun(), m_runs[0]);
    QCOMPARE(v.currentStep(), qint64(3));
    v.runChooser()->setCurrentIndex(0);  // choose "hier"
    QCOMPARE(v.currentRun(), m_runs[1]);
    QCOMPARE(v.currentStep(), TimelineView::kAllSteps);
    QCOMPARE(v.canvas()->spans().front().start, fx::stepSpans(1, 1, 0).front().start);
  }

  void step_loads_its_spans_data() {
    QTest::addColumn<int>("variant");
    QTest::addColumn<int>("step");
    QTest::newRow("ec step 1") << 0 << 1;
    QTest::newRow("ec step 6") << 0 << 6;
    QTest::newRow("hier step 2") << 1 << 2;
    QTest::newRow("dc step 5") << 2 << 5;
  }
  void step_loads_its_spans() {
    QFETCH(int, variant);
    QFETCH(int, step);
    TimelineView v;
    v.setRuns(m_store, {m_runs[variant]});
    QVERIFY(v.selectStep(step));
    const TimelineCanvas* c = v.canvas();
    QCOMPARE(int(c->spans().size()), fx::kRanks * 18);
    std::multiset<std::tuple<int, std::string, std::string, double>> got, want;
    for (const SpanRow& s : c->spans()) {
      QCOMPARE(s.step, int64_t(step));
      got.insert({s.rank, s.stream, s.name, s.start});
    }
    for (int r = 0; r < fx::kRanks; ++r)
      for (const SpanRow& s : fx::stepSpans(variant, step, r)) want.insert({s.rank, s.stream, s.name, s.start});
    QVERIFY(got == want);
    const tg::LaneLayout& l = c->laneLayout();
    QCOMPARE(l.laneCount(), fx::kRanks);
    QCOMPARE(l.subLaneCount(), fx::kRanks * 4);
    for (int r = 0; r < fx::kRanks; ++r) {
      QCOMPARE(l.laneLabel(r), "rank " + std::to_string(r));
      QCOMPARE(l.subLaneLabel(4 * r + 0), std::string("host"));
      QCOMPARE(l.subLaneLabel(4 * r + 1), std::string("compute"));
      QCOMPARE(l.subLaneLabel(4 * r + 2), std::string("compute.comm"));
      QCOMPARE(l.subLaneLabel(4 * r + 3), std::string("comm"));
    }
    // Fitted to the host "step" span [t, t + D]: e.g. hier step 2: t = 0.1 s,
    // D = (20 - 4 + 1) ms = 17 ms -> [100, 117] ms.
    const double t = 0.1 * (step - 1), D = fx::stepMs(variant, step) / 1000.0;
    QVERIFY(near(c->axis().t0, t));
    QVERIFY(near(c->axis().t1, t + D));
    if (variant == 1 && step == 2) QVERIFY(near(c->axis().t1, 0.117));
  }

  void wheel_data() {
    QTest::addColumn<QPoint>("delta");
    QTest::addColumn<int>("modifiers");
    QTest::addColumn<double>("spanRatio");  // new span / old span
    QTest::addColumn<double>("shift");      // change of t0 in units of the old span (pans only)
    QTest::newRow("zoom in one notch") << QPoint(0, 120) << int(Qt::NoModifier) << 1 / 1.25 << 0.0;
    QTest::newRow("zoom in two notches") << QPoint(0, 240) << int(Qt::NoModifier) << 1 / 1.5625 << 0.0;
    QTest::newRow("zoom out one notch") << QPoint(0, -120) << int(Qt::NoModifier) << 1.25 << 0.0;
    QTest::newRow("ctrl+wheel up pans earlier") << QPoint(0, 120) << int(Qt::ControlModifier) << 1.0 << -0.1;
    QTest::newRow("shift+wheel down pans later") << QPoint(0, -120) << int(Qt::ShiftModifier) << 1.0 << 0.1;
    QTest::newRow("horizontal wheel pans") << QPoint(120, 0) << int(Qt::NoModifier) << 1.0 << -0.1;
  }
  void wheel() {
    QFETCH(QPoint, delta);
    QFETCH(int, modifiers);
    QFETCH(double, spanRatio);
    QFETCH(double, shift);
    auto v = makeView(3);
    QVERIFY(v);
    TimelineCanvas* c = v->canvas();
    QTest::keyClick(c, Qt::Key_Plus);  // half the step around the centre: room on both sides
    const tg::TimeAxis before = c->axis();
    const double x = before.x0 + 0.3 * before.width;
    const double anchor = before.toTime(x);
    sendWheel(c, QPointF(x, lanePoint(c, x).y()), delta, Qt::KeyboardModifiers(modifiers));
    const tg::TimeAxis& after = c->axis();
    QVERIFY2(near(after.span(), before.span() * spanRatio), qPrintable(QString::number(after.span() / before.span())));
    if (spanRatio != 1.0) QVERIFY(near(after.toTime(x), anchor));  // zoom keeps the time under the cursor
    else QVERIFY(near(after.t0, before.t0 + shift * before.span()));
  }

  void keys() {
    auto v = makeView(1);
    QVERIFY(v);
    TimelineCanvas* c = v->canvas();
    const tg::TimeAxis fit = c->axis();  // [0, 20] ms: ec step 1, D = 20 ms
    QVERIFY(near(fit.t1, 0.020));
    const double centre = 0.5 * (fit.t0 + fit.t1);
    QTest::keyClick(c, Qt::Key_Plus);
    QVERIFY(near(c->axis().span(), 0.010));  // halved around the centre: [5, 15] ms
    QVERIFY(near(c->axis().t0, 0.005));
    QTest::keyClick(c, Qt::Key_Equal);
    QVERIFY(near(c->axis().span(), 0.005));
    QVERIFY(near(0.5 * (c->axis().t0 + c->axis().t1), centre));
    QTest::keyClick(c, Qt::Key_Left);  // 10% of 5 ms earlier
    QVERIFY(near(c->axis().t0, 0.0075 - 0.0005));
    QTest::keyClick(c, Qt::Key_Right);
    QTest::keyClick(c, Qt::Key_Right);
    QVERIFY(near(c->axis().t0, 0.0075 + 0.0005));
    QTest::keyClick(c, Qt::Key_Minus);
    QVERIFY(near(c->axis().span(), 0.010));
    QTest::keyClick(c, Qt::Key_Home);
    QVERIFY(near(c->axis().t0, fit.t0) && near(c->axis().t1, fit.t1));
    QTest::keyClick(c, Qt::Key_Plus);
    QTest::keyClick(c, Qt::Key_0);
    QVERIFY(near(c->axis().t0, fit.t0) && near(c->axis().t1, fit.t1));
    QTest::keyClick(c, Qt::Key_Minus);  // cannot zoom out past the data
    QVERIFY(near(c->axis().t0, fit.t0) && near(c->axis().t1, fit.t1));
  }

  void rubber_band_data() {
    QTest::addColumn<double>("from");  // fractions of the axis width
    QTest::addColumn<double>("to");
    QTest::addColumn<bool>("zooms");
    QTest::newRow("left to right") << 0.25 << 0.6 << true;
    QTest::newRow("right to left") << 0.8 << 0.1 << true;
    QTest::newRow("2 px is a click") << 0.5 << 0.5 << false;  // released 2 px right of the press
  }
  void rubber_band() {
    QFETCH(double, from);
    QFETCH(double, to);
    QFETCH(bool, zooms);
    auto v = makeView(2);
    QVERIFY(v);
    TimelineCanvas* c = v->canvas();
    const tg::TimeAxis before = c->axis();
    const QPoint a = lanePoint(c, before.x0 + from * before.width);
    const QPoint b = lanePoint(c, before.x0 + to * before.width);
    const QPoint bb = zooms ? b : a + QPoint(2, 0);
    QTest::mousePress(c, Qt::LeftButton, {}, a);
    QTest::mouseMove(c, bb);
    QVERIFY(near(c->axis().t0, before.t0) && near(c->axis().t1, before.t1));  // no zoom while dragging
    QVERIFY(!c->grab().isNull());                                              // the band is drawn
    QTest::mouseRelease(c, Qt::LeftButton, {}, bb);
    if (zooms) {
      QVERIFY(near(c->axis().t0, before.toTime(std::min(a.x(), bb.x()))));
      QVERIFY(near(c->axis().t1, before.toTime(std::max(a.x(), bb.x()))));
    } else {
      QVERIFY(near(c->axis().t0, before.t0) && near(c->axis().t1, before.t1));
    }
    QTest::mouseDClick(c, Qt::LeftButton, {}, a);  // double-click fits again
    QTest::mouseRelease(c, Qt::LeftButton, {}, a);
    QVERIFY(near(c->axis().t0, before.t0) && near(c->axis().t1, before.t1));
  }

  void drag_pans_data() {
    QTest::addColumn<int>("button");
    QTest::newRow("right") << int(Qt::RightButton);
    QTest::newRow("middle") << int(Qt::MiddleButton);
  }
  void drag_pans() {
    QFETCH(int, button);
    auto v = makeView(2);
    QVERIFY(v);
    TimelineCanvas* c = v->canvas();
    QTest::keyClick(c, Qt::Key_Plus);
    const tg::TimeAxis before = c->axis();
    const QPoint a = lanePoint(c, before.x0 + 0.5 * before.width);
    QTest::mousePress(c, Qt::MouseButton(button), {}, a);
    QTest::mouseMove(c, a + QPoint(60, 0));
    QTest::mouseMove(c, a + QPoint(100, 0));
    QTest::mouseRelease(c, Qt::MouseButton(button), {}, a + QPoint(100, 0));
    const double dt = 100.0 / before.width * before.span();  // content moved right: earlier times
    QVERIFY(near(c->axis().t0, before.t0 - dt));
    QVERIFY(near(c->axis().span(), before.span()));
  }

  void tooltips_and_rendering() {
    auto v = makeView(1);
    QVERIFY(v);
    TimelineCanvas* c = v->canvas();
    // ec step 1: D = 20 ms. rank 2 "grad.allreduce" on comm: start 0.6 D = 12 ms, 0.05 D = 1 ms,
    // 4096 bytes to peer (2 + 1) % 4 = 3.
    const QString ar = c->tooltipAt(c->pointAt(0.0125, 2, "comm"));
    for (const char* part : {"grad.allreduce", "category: comm", "rank 2, stream comm", "start 12.000 ms",
                             "duration 1.000 ms", "bytes 4096 B (4.10 kB)", "peer rank 3", "step 1"})
      QVERIFY2(ar.contains(part), qPrintable(part + (" not in: " + ar)));
    QVERIFY(!ar.contains("layer"));
    // rank 1 "moe.experts" layer 1: start (0.05 + 0.1) D = 3 ms, 0.02 x 2 x D = 0.8 ms, no bytes.
    const QString ex = c->tooltipAt(c->pointAt(0.0034, 1, "compute"));
    for (const char* part : {"moe.experts", "duration 0.800 ms", "bytes 0 B", "layer 1"})
      QVERIFY2(ex.contains(part), qPrintable(part + (" not in: " + ex)));
    QVERIFY(!ex.contains("peer"));
    QVERIFY(c->tooltipAt(QPointF(5, c->pointAt(0.01, 0, "host").y())).isEmpty());  // on the labels
    QVERIFY(c->tooltipAt(c->pointAt(0.0005, 0, "comm")).isEmpty());                // no span there

    // The QToolTip itself, through a real tooltip event.
    const QPoint p = c->pointAt(0.0125, 2, "comm").toPoint();
    QHelpEvent help(QEvent::ToolTip, p, c->mapToGlobal(p));
    QApplication::sendEvent(c, &help);
    QTRY_VERIFY(QToolTip::isVisible());
    QCOMPARE(QToolTip::text(), ar);
    QToolTip::hideText();

    const QImage shot = c->grab().toImage();
    QVERIFY(!shot.isNull() && shot.width() > 500);
    QCOMPARE(c->lastPaintItemCount(), fx::kRanks * 18);  // 0.2 ms = 10 px at least: nothing merged
    // Inside "step" (host, 75% of the step: no text there) and "grad.wait" (compute.comm,
    // [15.6, 16] ms): their category colours.
    const QColor compute = tg::categoryColor("compute"), comm = tg::categoryColor("comm");
    QCOMPARE(shot.pixelColor(c->pointAt(0.015, 0, "host").toPoint()), compute);
    QCOMPARE(shot.pixelColor(c->pointAt(0.0158, 3, "compute.comm").toPoint()), comm);
    QVERIFY(!v->grab().isNull());
    QVERIFY(v->findChild<QLabel*>("legend_compute"));
    QVERIFY(v->findChild<QLabel*>("legend_mixed"));
  }

  void many_ranks_scroll() {
    // 64 ranks x 2 streams = 128 sub-lanes of 18 px (+ 63 gaps of 6 px): more than 400 px.
    std::vector<SpanRow> spans;
    for (int rank = 0; rank < 64; ++rank)
      for (const char* stream : {"compute", "comm"})
        for (int k = 0; k < 10; ++k)
          spans.push_back(SpanRow{0, rank, stream, "k", "compute", k * 1e-3, 0.5e-3, 0, -1, -1, -1});
    TimelineCanvas c;
    c.resize(800, 400);
    c.show();
    QVERIFY(QTest::qWaitForWindowExposed(&c));
    c.setSpans(spans);
    QCOMPARE(c.laneLayout().laneCount(), 64);
    QCOMPARE(c.laneLayout().totalHeight, 128 * 18.0 + 63 * 6.0);
    const double y0 = c.pointAt(0, 0, "compute").y();
    QTest::keyClick(&c, Qt::Key_Down);
    QCOMPARE(c.pointAt(0, 0, "compute").y(), y0 - TimelineCanvas::kSubLaneHeight);
    QTest::keyClick(&c, Qt::Key_PageDown);
    QVERIFY(c.pointAt(0, 0, "compute").y() < y0 - 300);
    QVERIFY(!c.grab().isNull());
    // Only the sub-lanes on screen are painted: about 400 px / 18 px of the 128, 10 spans each.
    QVERIFY2(c.lastPaintItemCount() > 0 && c.lastPaintItemCount() <= 25 * 10,
             qPrintable(QString::number(c.lastPaintItemCount())));
    QVERIFY(c.axis().width < 800 - c.labelWidth() - 8);  // room left for the scroll bar
  }

  void messages() {
    TimelineView v;
    v.setRuns(nullptr, {m_runs[0]});
    QVERIFY2(v.message().contains("No run store"), qPrintable(v.message()));
    v.setRuns(m_store, {});
    QVERIFY2(v.message().contains("Select a run"), qPrintable(v.message()));
    v.setRuns(m_store, {m_runs[3]});
    QVERIFY2(v.message().contains("broken") && v.message().contains("no spans"), qPrintable(v.message()));
    QCOMPARE(v.stepChooser()->count(), 0);
    QVERIFY(v.canvas()->spans().empty());
    v.setRuns(m_store, {987654});
    QVERIFY2(v.message().contains("987654"), qPrintable(v.message()));
    v.setRuns(m_store, {m_runs[0]});
    QVERIFY(v.message().isEmpty());
    QVERIFY(!v.grab().isNull());
  }

  void million_spans() {
    TimelineCanvas c;
    c.resize(1400, 500);
    c.show();
    QVERIFY(QTest::qWaitForWindowExposed(&c));
    std::vector<SpanRow> spans = millionSpans();
    QElapsedTimer timer;
    timer.start();
    c.setSpans(std::move(spans));
    const qint64 setMs = timer.elapsed();
    QCOMPARE(int(c.spans().size()), 1000000);
    QCOMPARE(c.laneLayout().subLaneCount(), 16);
    const int subLanes = c.laneLayout().subLaneCount();
    const int bound = subLanes * (int(std::ceil(c.axis().width)) + 1);

    // flows: each comm "moe.dispatch" names rank + 1, whose compute.comm "moe.dispatch" (peer -1,
    // same step) receives it (models/timelineflows.h): 62,500 x 4 links, computed once
    timer.start();
    QCOMPARE(int(c.flowLinks().size()), 4 * 62500);
    const qint64 flowsMs = timer.elapsed();

    timer.start();
    QImage shot = c.grab().toImage();
    const qint64 firstPaintMs = timer.elapsed();
    QVERIFY(c.lastPaintFlowCount() > 0 && c.lastPaintFlowCount() <= TimelineCanvas::kMaxFlowArrows);
    const int firstItems = c.lastPaintItemCount();
    QVERIFY(!shot.isNull());
    // 62,500 spans per sub-lane over ~1370 px: about one aggregate per pixel column.
    QVERIFY2(c.lastPaintItemCount() <= bound, qPrintable(QString::number(c.lastPaintItemCount())));
    QVERIFY(c.lastPaintItemCount() >= subLanes * int(0.9 * c.axis().width));
    const QString agg = c.tooltipAt(c.pointAt(0.5, 1, "compute"));
    QVERIFY2(agg.contains("spans (aggregated at this zoom)") && agg.contains("rank 1, stream compute"), qPrintable(agg));

    timer.start();
    for (int i = 0; i < 10; ++i) QTest::keyClick(&c, Qt::Key_Plus);  // 1 s / 1024: ~1 ms visible
    shot = c.grab().toImage();
    const qint64 zoomPaintMs = timer.elapsed();
    const int zoomItems = c.lastPaintItemCount();
    QVERIFY(near(c.axis().span(), (c.dataEnd() - c.dataStart()) / 1024));
    QVERIFY(c.lastPaintItemCount() <= bound);
    QVERIFY(c.lastPaintFlowCount() > 0 && c.lastPaintFlowCount() <= TimelineCanvas::kMaxFlowArrows);
    // ~1 ms / 16 us = ~61 spans per sub-lane, each several pixels wide: drawn one by one.
    QVERIFY2(c.lastPaintItemCount() >= subLanes * 55 && c.lastPaintItemCount() <= subLanes * 70,
             qPrintable(QString::number(c.lastPaintItemCount())));
    // The span starting at the first multiple of 16 us past the centre, 2 us in (it lasts >= 4 us).
    const double k = std::ceil((c.axis().t0 + 0.5 * c.axis().span()) / 16e-6);
    const QString one = c.tooltipAt(c.pointAt(k * 16e-6 + 2e-6, 3, "comm"));
    QVERIFY2(one.startsWith("moe.dispatch\n") && one.contains("peer rank 0") &&
                 one.contains(QStringLiteral("start %1").arg(tg::formatTimeMs(k * 16e-6))),
             qPrintable(one));

    timer.start();
    QTest::keyClick(&c, Qt::Key_Right);
    c.grab();
    const qint64 panPaintMs = timer.elapsed();

    // As the store returns them (by step, then in recording order): time-major, lanes interleaved.
    std::vector<SpanRow> interleaved = millionSpans();
    std::vector<SpanRow> storeOrder;
    storeOrder.reserve(interleaved.size());
    for (size_t k = 0; k < 62500; ++k)
      for (size_t lane = 0; lane < 16; ++lane) storeOrder.push_back(std::move(interleaved[lane * 62500 + k]));
    interleaved = {};
    timer.start();
    c.setSpans(std::move(storeOrder));
    const qint64 setUnsortedMs = timer.elapsed();
    QCOMPARE(c.spans().front().rank, 0);
    QCOMPARE(c.spans().back().rank, 3);
    QCOMPARE(c.spans().back().stream, std::string("comm"));
    QVERIFY(c.spans()[1].start > c.spans()[0].start);
    qInfo("1M spans in store order (time-major): setSpans %lld ms", setUnsortedMs);

    qInfo("1M spans (lane-sorted): setSpans %lld ms, flow links %lld ms, first paint %lld ms (%d items), 10 zoom steps + "
          "paint %lld ms (%d items), pan + paint %lld ms",
          setMs, flowsMs, firstPaintMs, firstItems, zoomPaintMs, zoomItems, panPaintMs);
  }
};

QTEST_MAIN(TstTimelineView)
#include "tst_timeline_view.moc"
