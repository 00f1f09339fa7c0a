// ctest-labels: gui
// Timeline geometry: TimeAxis maths, lane layout, visible-item culling and aggregation, hit tests.
#include <QtTest>

#include <cmath>
#include <set>

#include "models/timelinegeometry.h"

using moebench::SpanRow;
using namespace moebench::gui;

namespace {
SpanRow span(int rank, const std::string& stream, double start, double duration,
             const std::string& category = "compute", const std::string& name = "k") {
  SpanRow s;
  s.rank = rank;
  s.stream = stream;
  s.start = start;
  s.duration = duration;
  s.category = category;
  s.name = name;
  s.bytes = 10;
  return s;
}

TimeAxis axis(double t0, double t1, double x0, double width) {
  TimeAxis a;
  a.t0 = t0;
  a.t1 = t1;
  a.x0 = x0;
  a.width = width;
  return a;
}

bool near(double a, double b, double eps = 1e-9) { return std::abs(a - b) <= eps * std::max(1.0, std::abs(b)); }
}  // namespace

class TstTimelineGeometry : public QObject {
  Q_OBJECT

 private slots:
  void roundTrip_data() {
    QTest::addColumn<double>("t0");
    QTest::addColumn<double>("t1");
    QTest::addColumn<double>("x0");
    QTest::addColumn<double>("width");
    QTest::addColumn<double>("t");
    QTest::addColumn<double>("x");
    QTest::newRow("unit") << 0.0 << 1.0 << 0.0 << 100.0 << 0.25 << 25.0;
    QTest::newRow("offset") << 2.0 << 4.0 << 50.0 << 200.0 << 3.0 << 150.0;
    QTest::newRow("left of view") << 2.0 << 4.0 << 50.0 << 200.0 << 1.0 << -50.0;
    QTest::newRow("microseconds") << 1e-3 << 1e-3 + 1e-6 << 10.0 << 1000.0 << 1e-3 + 5e-7 << 510.0;
  }
  void roundTrip() {
    QFETCH(double, t0);
    QFETCH(double, t1);
    QFETCH(double, x0);
    QFETCH(double, width);
    QFETCH(double, t);
    QFETCH(double, x);
    const TimeAxis a = axis(t0, t1, x0, width);
    QVERIFY(near(a.toX(t), x, 1e-6));
    QVERIFY(near(a.toTime(a.toX(t)), t));
    QVERIFY(near(a.toX(a.toTime(x)), x, 1e-6));
    QVERIFY(near(a.toX(t0), x0));
    QVERIFY(near(a.toX(t1), x0 + width));
  }

  void zoomAround_data() {
    QTest::addColumn<double>("x");
    QTest::addColumn<double>("factor");
    QTest::newRow("in at centre") << 60.0 << 2.0;
    QTest::newRow("in at left edge") << 10.0 << 4.0;
    QTest::newRow("in at right edge") << 110.0 << 1.5;
    QTest::newRow("out") << 35.0 << 0.5;
  }
  void zoomAround() {
    QFETCH(double, x);
    QFETCH(double, factor);
    TimeAxis a = axis(1.0, 3.0, 10.0, 100.0);
    const double anchor = a.toTime(x);
    a.zoomAround(x, factor);
    QVERIFY(near(a.toTime(x), anchor));
    QVERIFY(near(a.span(), 2.0 / factor));
    QCOMPARE(a.width, 100.0);
  }
  void zoomAroundStopsAtMinimumSpan() {
    TimeAxis a = axis(0.0, 1.0, 0.0, 100.0);
    const double anchor = a.toTime(30);
    for (int i = 0; i < 100; ++i) a.zoomAround(30, 10);
    QVERIFY(near(a.span(), TimeAxis::kMinSpan));
    QVERIFY(near(a.toTime(30), anchor));
    a.zoomAround(30, 0);  // ignored
    QVERIFY(near(a.span(), TimeAxis::kMinSpan));
  }

  void pan_data() {
    QTest::addColumn<double>("dx");
    QTest::addColumn<double>("t0");
    QTest::newRow("right") << 50.0 << 0.5;
    QTest::newRow("left") << -100.0 << 5.0;
    QTest::newRow("none") << 0.0 << 2.0;
  }
  void pan() {
    QFETCH(double, dx);
    QFETCH(double, t0);
    TimeAxis a = axis(2.0, 5.0, 0.0, 100.0);  // 0.03 s per pixel
    a.pan(dx);
    QVERIFY(near(a.t0, t0));
    QVERIFY(near(a.span(), 3.0));
  }

  void clamp_data() {
    QTest::addColumn<double>("t0");
    QTest::addColumn<double>("t1");
    QTest::addColumn<double>("e0");
    QTest::addColumn<double>("e1");
    QTest::newRow("past left end") << -2.0 << 1.0 << 0.0 << 3.0;
    QTest::newRow("past right end") << 8.0 << 12.0 << 6.0 << 10.0;
    QTest::newRow("inside") << 2.0 << 4.0 << 2.0 << 4.0;
    QTest::newRow("wider than data") << -5.0 << 20.0 << 0.0 << 10.0;
    QTest::newRow("below minimum span") << 5.0 << 5.0 << 5.0 - 5e-7 << 5.0 + 5e-7;
    QTest::newRow("tiny span at the end") << 10.0 << 10.0 << 10.0 - 1e-6 << 10.0;
  }
  void clamp() {
    QFETCH(double, t0);
    QFETCH(double, t1);
    QFETCH(double, e0);
    QFETCH(double, e1);
    TimeAxis a = axis(t0, t1, 0.0, 100.0);
    a.clampTo(0.0, 10.0);
    QVERIFY2(near(a.t0, e0) && near(a.t1, e1), qPrintable(QString("got [%1, %2]").arg(a.t0).arg(a.t1)));
    QVERIFY(a.t0 >= 0.0 && a.t1 <= 10.0 + 1e-12);
  }
  void clampTinyDataRange() {
    TimeAxis a = axis(-1, 1, 0, 100);
    a.clampTo(3.0, 3.0);
    QVERIFY(near(a.t0, 3.0));
    QVERIFY(near(a.span(), TimeAxis::kMinSpan));
  }

  void fitTo() {
    TimeAxis a = axis(0, 1, 0, 100);
    a.fitTo(4.0, 2.0);
    QCOMPARE(a.t0, 2.0);
    QCOMPARE(a.t1, 4.0);
    a.fitTo(1.0, 1.0);
    QVERIFY(near(a.span(), TimeAxis::kMinSpan));
  }

  void zoomToRange_data() {
    QTest::addColumn<double>("xa");
    QTest::addColumn<double>("xb");
    QTest::addColumn<double>("e0");
    QTest::addColumn<double>("e1");
    QTest::newRow("forward") << 30.0 << 80.0 << 1.2 << 1.7;
    QTest::newRow("backward") << 80.0 << 30.0 << 1.2 << 1.7;
    QTest::newRow("zero width") << 60.0 << 60.0 << 1.5 - 5e-7 << 1.5 + 5e-7;
  }
  void zoomToRange() {
    QFETCH(double, xa);
    QFETCH(double, xb);
    QFETCH(double, e0);
    QFETCH(double, e1);
    TimeAxis a = axis(1.0, 2.0, 10.0, 100.0);
    a.zoomToRange(xa, xb);
    QVERIFY(near(a.t0, e0));
    QVERIFY(near(a.t1, e1));
  }

  void laneLayout() {
    const std::vector<SpanRow> spans = {
        span(1, "nvme", 0, 1),   span(0, "comm", 0, 1),         span(0, "host", 0, 1),
        span(1, "compute", 0, 1), span(0, "compute", 0, 1),     span(1, "compute.comm", 0, 1),
        span(0, "comm", 2, 1),    span(1, "compute", 3, 1),
    };
    const LaneLayout l = LaneLayout::build(spans, 20, 10);
    QCOMPARE(l.laneCount(), 2);
    QCOMPARE(l.subLaneCount(), 6);
    QCOMPARE(l.laneLabel(0), std::string("rank 0"));
    QCOMPARE(l.laneLabel(1), std::string("rank 1"));
    const std::vector<std::string> expected = {"rank 0 / host", "rank 0 / compute", "rank 0 / comm",
                                               "rank 1 / compute", "rank 1 / compute.comm", "rank 1 / nvme"};
    QCOMPARE(l.labels(), expected);
    QCOMPARE(l.subLaneLabel(5), std::string("nvme"));
    QCOMPARE(l.subLaneTop(0, "host"), 0.0);
    QCOMPARE(l.subLaneTop(0, "comm"), 40.0);
    QCOMPARE(l.subLaneTop(1, "compute"), 70.0);  // 3 x 20 + gap 10
    QCOMPARE(l.subLaneTop(1, "nvme"), 110.0);
    QCOMPARE(l.subLaneTop(1, "host"), -1.0);
    QCOMPARE(l.totalHeight, 130.0);
    QCOMPARE(l.lanes[1].top, 70.0);
    QCOMPARE(l.lanes[1].height, 60.0);
    QCOMPARE(l.lanes[1].firstSubLane, 3);
    QCOMPARE(l.subLaneAt(0), 0);
    QCOMPARE(l.subLaneAt(19.9), 0);
    QCOMPARE(l.subLaneAt(20), 1);
    QCOMPARE(l.subLaneAt(59.9), 2);
    QCOMPARE(l.subLaneAt(65), -1);  // gap between ranks
    QCOMPARE(l.subLaneAt(75), 3);
    QCOMPARE(l.subLaneAt(129), 5);
    QCOMPARE(l.subLaneAt(130), -1);
    QCOMPARE(l.subLaneAt(-1), -1);
    QVERIFY(LaneLayout::build({}, 20, 10).subLanes.empty());
  }

  // Two runs stacked on one axis: a measured run (2 ranks, its clock starting at 5 s) above a
  // predicted one (4 ranks, from 0), each aligned at its step start.
  void stackedRuns() {
    std::vector<SpanRow> measured = {span(0, "host", 5.0, 0.010, "compute", "step"), span(0, "compute", 5.001, 0.004),
                                     span(1, "host", 5.0005, 0.0095, "compute", "step"),
                                     span(1, "comm", 5.006, 0.002, "comm")};
    std::vector<SpanRow> predicted;
    for (int r = 0; r < 4; ++r) {
      predicted.push_back(span(r, "host", 0.0, 0.012, "compute", "step"));
      predicted.push_back(span(r, "compute", 0.001, 0.004));
    }
    // Alignment: the earliest host "step" span, else the earliest span.
    QCOMPARE(stepStartOrigin(measured), 5.0);
    QCOMPARE(stepStartOrigin(predicted), 0.0);
    QCOMPARE(stepStartOrigin({span(0, "compute", 2.0, 1), span(0, "host", 3.0, 1, "compute", "forward")}), 2.0);
    QCOMPARE(stepStartOrigin({}), 0.0);
    shiftSpans(measured, -stepStartOrigin(measured));
    QVERIFY(near(measured[0].start, 0.0));
    QVERIFY(near(measured[3].start, 0.006));
    sortForTimeline(measured);
    sortForTimeline(predicted);

    const StackedLayout st = StackedLayout::build({&measured, &predicted}, {"#1 ec · measured", "#2 ec · predicted"},
                                                  20, 10, 24, 12);
    QCOMPARE(st.trackCount(), 2);
    const StackedTrack &a = st.tracks[0], &b = st.tracks[1];
    QCOMPARE(a.title, std::string("#1 ec · measured"));
    QCOMPARE(b.title, std::string("#2 ec · predicted"));
    // Track 0: header [0, 24), rank 0 (host, compute) [24, 64), gap, rank 1 (host, comm) [74, 114).
    QCOMPARE(a.top, 0.0);
    QCOMPARE(a.lanes.top, 24.0);
    QCOMPARE(a.bottom(), 114.0);
    // Track 1 below it after the gap: header [126, 150), 4 ranks x 2 streams + 3 gaps.
    QCOMPARE(b.top, 126.0);
    QCOMPARE(b.lanes.top, 150.0);
    QCOMPARE(b.bottom(), 150.0 + 8 * 20 + 3 * 10);
    QCOMPARE(st.totalHeight, b.bottom());
    QCOMPARE(b.lanes.laneCount(), 4);
    // No overlap: every sub-lane of the second run lies below every sub-lane of the first.
    double firstBottom = 0;
    for (const SubLane& s : a.lanes.subLanes) firstBottom = std::max(firstBottom, s.top + s.height);
    for (const SubLane& s : b.lanes.subLanes) QVERIFY(s.top >= firstBottom + 12 + 24);
    QCOMPARE(st.trackAt(10), 0);        // header
    QCOMPARE(st.trackAt(100), 0);
    QCOMPARE(st.trackAt(120), -1);      // gap between the runs
    QCOMPARE(st.trackAt(130), 1);
    QCOMPARE(st.trackAt(st.totalHeight), -1);
    // y within a track's lanes resolves to that track's sub-lane only.
    QCOMPARE(b.lanes.subLaneAt(b.lanes.subLaneTop(3, "compute") + 1), b.lanes.subLaneIndex(3, "compute"));
    QCOMPARE(a.lanes.subLaneAt(b.lanes.subLaneTop(3, "compute") + 1), -1);

    // One axis: 0..20 ms over 1000 px. Both step spans start at x0; a 4 ms span is 200 px in both runs.
    const TimeAxis ax = axis(0, 0.020, 100, 1000);
    const auto itemsA = visibleItems(measured, a.lanes, ax);
    const auto itemsB = visibleItems(predicted, b.lanes, ax);
    auto find = [](const std::vector<DrawItem>& items, int rank, const std::string& stream) -> const DrawItem* {
      for (const DrawItem& it : items)
        if (it.span && it.span->rank == rank && it.span->stream == stream) return &it;
      return nullptr;
    };
    const DrawItem *stepA = find(itemsA, 0, "host"), *stepB = find(itemsB, 0, "host");
    const DrawItem *fwdA = find(itemsA, 0, "compute"), *fwdB = find(itemsB, 2, "compute");
    QVERIFY(stepA && stepB && fwdA && fwdB);
    QVERIFY(near(stepA->x, 100) && near(stepB->x, 100));  // both steps start at t = 0
    QVERIFY(near(stepA->width, 500));                     // 10 ms
    QVERIFY(near(stepB->width, 600));                     // 12 ms
    QVERIFY(near(fwdA->width, fwdB->width));              // 4 ms each: equal widths
    QVERIFY(near(fwdA->width, 200));
    QVERIFY(near(fwdA->x, fwdB->x));                      // both at 1 ms
    for (const DrawItem& it : itemsA) QVERIFY(it.y + it.height <= a.bottom());
    for (const DrawItem& it : itemsB) QVERIFY(it.y >= b.lanes.top);
    // A hit in the second run's lanes finds its span, not the first run's.
    const SpanRow* hit = moebench::gui::hitTest(predicted, b.lanes, ax, fwdB->x + 10, b.lanes.subLaneTop(2, "compute") + 5);
    QVERIFY(hit);
    QCOMPARE(hit->rank, 2);
    QCOMPARE(moebench::gui::hitTest(measured, a.lanes, ax, fwdB->x + 10, b.lanes.subLaneTop(2, "compute") + 5),
             static_cast<const SpanRow*>(nullptr));
  }

  void sortOrder() {
    std::vector<SpanRow> spans = {span(1, "compute", 5, 1), span(0, "comm", 1, 1), span(0, "host", 3, 1),
                                  span(0, "host", 1, 1)};
    sortForTimeline(spans);
    QCOMPARE(spans[0].stream, std::string("host"));
    QCOMPARE(spans[0].start, 1.0);
    QCOMPARE(spans[1].start, 3.0);
    QCOMPARE(spans[2].stream, std::string("comm"));
    QCOMPARE(spans[3].rank, 1);
  }

  void culling() {
    const std::vector<SpanRow> spans = {span(0, "compute", 0, 1), span(0, "compute", 2, 1),
                                        span(0, "compute", 4, 1), span(0, "compute", 6, 1),
                                        span(0, "comm", 3.5, 1, "comm"), span(0, "comm", 9, 1, "comm")};
    const LaneLayout l = LaneLayout::build(spans, 20, 10);
    const TimeAxis a = axis(2.5, 6.5, 100, 400);  // 100 px per second
    const auto items = visibleItems(spans, l, a);
    QCOMPARE(items.size(), size_t(4));  // [2,3] [4,5] [6,7] on compute, [3.5,4.5] on comm
    for (const DrawItem& it : items) {
      QCOMPARE(it.count, 1);
      QVERIFY(it.span);
      QCOMPARE(it.category, it.span->category);
      QVERIFY(it.x >= 100 && it.x + it.width <= 500 + 1e-9);
    }
    QCOMPARE(items[0].span, &spans[1]);
    QVERIFY(near(items[0].x, 100));  // clipped at the left
    QVERIFY(near(items[0].width, 50));
    QVERIFY(near(items[1].x, 250));
    QVERIFY(near(items[2].width, 50));  // clipped at the right
    QCOMPARE(items[3].subLane, l.subLaneIndex(0, "comm"));
    QCOMPARE(items[3].y, l.subLaneTop(0, "comm"));
    QCOMPARE(items[3].height, 20.0);
  }

  void adjacentWideSpansStaySeparate() {
    std::vector<SpanRow> spans;
    for (int i = 0; i < 10; ++i) spans.push_back(span(0, "compute", i, 1));  // back to back
    const LaneLayout l = LaneLayout::build(spans, 20, 10);
    const auto items = visibleItems(spans, l, axis(0, 10, 0, 100));  // 10 px each
    QCOMPARE(items.size(), size_t(10));
    for (const DrawItem& it : items) QCOMPARE(it.count, 1);
  }

  void aggregation() {
    std::vector<SpanRow> spans;
    // 10 px per second: 0.01 s spans are 0.1 px. Pixel 0: 8 compute + 2 comm (by duration
    // compute wins); pixel 5: 5 compute + 5 comm (mixed); a 3 px span at 8 s stays single.
    for (int i = 0; i < 8; ++i) spans.push_back(span(0, "compute", i * 0.01, 0.01));
    for (int i = 8; i < 10; ++i) spans.push_back(span(0, "compute", i * 0.01, 0.01, "comm"));
    for (int i = 0; i < 10; ++i) spans.push_back(span(0, "compute", 0.5 + i * 0.01, 0.01, i % 2 ? "comm" : "compute"));
    spans.push_back(span(0, "compute", 0.8, 0.3, "io"));
    const LaneLayout l = LaneLayout::build(spans, 20, 10);
    const auto items = visibleItems(spans, l, axis(0, 10, 0, 100));
    QCOMPARE(items.size(), size_t(3));
    QCOMPARE(items[0].count, 10);
    QCOMPARE(items[0].category, std::string("compute"));
    QVERIFY(items[0].span == nullptr);
    QCOMPARE(items[0].bytes, int64_t(100));
    QVERIFY(near(items[0].busy, 0.1));
    QVERIFY(near(items[0].start, 0.0));
    QVERIFY(near(items[0].end, 0.1));
    QCOMPARE(items[1].count, 10);
    QCOMPARE(items[1].category, std::string("mixed"));
    QCOMPARE(items[2].count, 1);
    QCOMPARE(items[2].category, std::string("io"));
    QVERIFY(items[2].span == &spans.back());
    // Zoomed in, nothing merges.
    QCOMPARE(visibleItems(spans, l, axis(0, 1.2, 0, 1200)).size(), spans.size());
  }

  void millionSpans() {
    // 2 ranks x 3 streams, 1,000,000 spans of 0.5 us with 0.5 us gaps.
    const std::vector<std::string> streams = {"host", "compute", "comm"};
    const int perLane = 1'000'000 / 6 + 1;
    std::vector<SpanRow> spans;
    spans.reserve(size_t(perLane) * 6);
    for (int r = 0; r < 2; ++r)
      for (const std::string& st : streams)
        for (int i = 0; i < perLane && spans.size() < 1'000'000; ++i)
          spans.push_back(span(r, st, i * 1e-6, 0.5e-6, i % 3 ? "compute" : "comm"));
    QCOMPARE(spans.size(), size_t(1'000'000));
    sortForTimeline(spans);
    const LaneLayout l = LaneLayout::build(spans, 20, 10);
    QCOMPARE(l.subLaneCount(), 6);

    TimeAxis a = axis(0, 1, 0, 1000);
    a.fitTo(0, perLane * 1e-6);
    struct View {
      const char* what;
      TimeAxis axis;
    };
    std::vector<View> views = {{"all", a}};
    a.zoomAround(400, 7);
    views.push_back({"zoomed 7x", a});
    a.zoomAround(400, 30);  // ~0.8 us per pixel: some single spans appear
    views.push_back({"zoomed 210x", a});
    a.zoomAround(400, 100);
    views.push_back({"zoomed 21000x", a});
    for (const View& v : views) {
      size_t visible = 0;
      for (const SpanRow& s : spans)
        if (s.start + s.duration >= v.axis.t0 && s.start <= v.axis.t1) ++visible;
      QElapsedTimer timer;
      timer.start();
      const auto items = visibleItems(spans, l, v.axis);
      const qint64 ms = timer.elapsed();
      size_t sum = 0;
      for (const DrawItem& it : items) {
        sum += size_t(it.count);
        QVERIFY(it.x >= v.axis.x0 && it.x + it.width <= v.axis.x0 + v.axis.width + 1e-6);
      }
      qInfo("%s: %zu visible spans -> %zu items in %lld ms", v.what, visible, items.size(), ms);
      QVERIFY2(items.size() <= size_t(v.axis.width) * size_t(l.subLaneCount()), v.what);
      QCOMPARE(sum, visible);
      QVERIFY(visible > 0);
    }
  }

  void hitTest() {
    const std::vector<SpanRow> spans = {span(0, "compute", 1, 1, "compute", "outer"),
                                        span(0, "compute", 1.2, 0.1, "compute", "inner"),
                                        span(0, "compute", 3, 1, "compute", "later"),
                                        span(1, "comm", 1, 1, "comm", "peer")};
    const LaneLayout l = LaneLayout::build(spans, 20, 10);
    const TimeAxis a = axis(0, 10, 0, 1000);  // 100 px per second
    auto name = [&](double x, double y) -> std::string {
      const SpanRow* s = moebench::gui::hitTest(spans, l, a, x, y);
      return s ? s->name : std::string("-");
    };
    QCOMPARE(name(150, 5), std::string("outer"));
    QCOMPARE(name(125, 5), std::string("inner"));     // nested: the shortest wins
    QCOMPARE(name(98.5, 5), std::string("outer"));    // within 2 px of the start
    QCOMPARE(name(201.5, 5), std::string("outer"));   // within 2 px of the end
    QCOMPARE(name(297, 5), std::string("-"));         // 3 px away
    QCOMPARE(name(250, 5), std::string("-"));
    QCOMPARE(name(350, 5), std::string("later"));
    QCOMPARE(name(150, 25), std::string("-"));        // gap between ranks
    QCOMPARE(name(150, 35), std::string("peer"));
    QCOMPARE(name(150, 500), std::string("-"));
  }

  void colours() {
    std::set<QRgb> seen;
    for (const char* c : {"compute", "comm", "copy", "io", "mixed"}) {
      const QColor col = categoryColor(c);
      QVERIFY(col.isValid());
      seen.insert(col.rgb());
    }
    QCOMPARE(seen.size(), size_t(5));
    QVERIFY(categoryColor("something else").isValid());
  }
};

QTEST_APPLESS_MAIN(TstTimelineGeometry)
#include "tst_timeline_geometry.moc"
