// ctest-labels: unit gui
// The timeline's Perfetto-like tools: flow arrows from a send to its receive (flowLinks,
// visibleFlows), span search (matchingSpans, focusRange), a selected range's summary
// (summarizeRange, TimelineRangeSummaryModel under QAbstractItemModelTester), labels that never
// draw over each other (spanLabels, rulerLayout), all on hand-made spans with exact values; and
// the same through the TimelineView with real key and mouse events (search box, Enter / Shift+
// Enter, the Flows toggle, Shift+drag and the "Select range" mode, Esc).
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QFontMetricsF>
#include <QLineEdit>
#include <QTableView>
#include <QToolButton>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gui_fixture.h"
#include "models/timelineflows.h"
#include "models/timelinegeometry.h"
#include "models/timelinelabels.h"
#include "models/timelinerangesummary.h"
#include "models/timelinesearch.h"
#include "models/timelinetext.h"
#include "moebench/store/run_store.h"
#include "widgets/timelinecanvas.h"
#include "widgets/timelineview.h"

using namespace moebench;
namespace fx = moebench::test::gui_fixture;
namespace tg = moebench::gui;

namespace {
bool near(double a, double b, double tol = 1e-9) { return std::abs(a - b) <= tol * std::max(1.0, std::abs(b)); }

SpanRow span(int rank, std::string stream, std::string name, double startMs, double durMs, int peer = -1,
             int layer = -1, int chunk = -1, int64_t step = 1, int expert = -1, std::string category = "comm") {
  SpanRow s;
  s.step = step;
  s.rank = rank;
  s.stream = std::move(stream);
  s.name = std::move(name);
  s.category = std::move(category);
  s.start = startMs * 1e-3;
  s.duration = durMs * 1e-3;
  s.peer = peer;
  s.layer = layer;
  s.chunk = chunk;
  s.expert = expert;
  return s;
}

// A 3-stage pipeline (ranks 0, 1, 2; stage k holds blocks [2k, 2k + 2)) with two micro-batches,
// recorded as the runtime records it (train/step_builder.cpp): a send is "pp.forward" /
// "pp.backward" on a comm stream naming its peer, with the receiving stage's first block as layer
// and the micro-batch as chunk; the receive is the same name on the receiver's host stream with
// peer -1. Plus spans that must get no arrow.
std::vector<SpanRow> pipelineSpans() {
  return {
      // forward, micro-batch 0 and 1: 0 -> 1 (layer 2), 1 -> 2 (layer 4)
      span(0, "comm.intra", "pp.forward", 10, 1, 1, 2, 0),   // 0
      span(0, "comm.intra", "pp.forward", 20, 1, 1, 2, 1),   // 1
      span(1, "host", "pp.forward", 5, 6.5, -1, 2, 0),       // 2: waits from 5 ms, has it at 11.5
      span(1, "host", "pp.forward", 19, 2.5, -1, 2, 1),      // 3
      span(1, "comm.intra", "pp.forward", 30, 1, 2, 4, 0),   // 4
      span(2, "host", "pp.forward", 29, 2.5, -1, 4, 0),      // 5
      // backward, micro-batch 0: 2 -> 1 (layer 4), 1 -> 0 (layer 2); to_prev is comm.inter
      span(2, "comm.inter", "pp.backward", 40, 1, 1, 4, 0),  // 6
      span(1, "host", "pp.backward", 39, 2.2, -1, 4, 0),     // 7
      span(1, "comm.inter", "pp.backward", 50, 1, 0, 2, 0),  // 8
      span(0, "host", "pp.backward", 49, 2.4, -1, 2, 0),     // 9
      // the tied head's gradient: an exchange, each side names the other
      span(0, "host", "pp.tied_grad", 60, 2, 2),            // 10
      span(2, "host", "pp.tied_grad", 60.5, 2, 0),          // 11
      // a ring all-reduce over 3 ranks: each names its right neighbour, none receives by name
      span(0, "comm", "grad.allreduce", 70, 3, 1),          // 12
      span(1, "comm", "grad.allreduce", 70, 3, 2),          // 13
      span(2, "comm", "grad.allreduce", 70, 3, 0),          // 14
      // one-sided pulls of different experts: no span of the same expert on the owner
      span(1, "comm", "janus.pull", 80, 1, 0, 1, -1, 1, 3),  // 15
      span(0, "comm", "janus.pull", 80, 1, 1, 1, -1, 1, 5),  // 16
      // step 2's receive does not answer step 1's send; a send to oneself is no flow
      span(0, "comm.intra", "pp.forward", 90, 1, 1, 2, 0, 1),   // 17: no receive left in step 1
      span(1, "host", "pp.forward", 91, 1, -1, 2, 0, 2),        // 18: step 2
      span(2, "copy", "expert.copy", 95, 1, 2),                 // 19: peer == rank
  };
}
}  // namespace

class TstTimelineTools : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;
  std::shared_ptr<RunStore> m_store;
  int64_t m_ec = 0;

  std::unique_ptr<TimelineView> makeView(int64_t step) {
    auto v = std::make_unique<TimelineView>();
    v->resize(1200, 800);
    v->setRuns(m_store, {m_ec});
    v->show();
    if (!QTest::qWaitForWindowExposed(v.get())) return nullptr;
    if (!v->selectStep(step)) return nullptr;
    return v;
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    m_store = std::make_shared<RunStore>(fx::write(m_dir).toStdString(), RunStore::Mode::read_only);
    m_ec = m_store->find_run("ec").id;
  }

  // ------------------------------------------------------------ flows

  void flow_links_follow_the_matching_rule() {
    const std::vector<SpanRow> spans = pipelineSpans();
    const std::vector<tg::FlowLink> links = tg::flowLinks(spans);
    // sends in start order pair with receives in start order; the exchange gives both
    // directions; nothing else links
    const std::vector<tg::FlowLink> want = {{0, 2}, {1, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {11, 10}};
    QCOMPARE(links.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      QCOMPARE(links[i].from, want[i].from);
      QCOMPARE(links[i].to, want[i].to);
    }
    // the same in any input order (here the timeline's own order)
    std::vector<SpanRow> sorted = spans;
    tg::sortForTimeline(sorted);
    const std::vector<tg::FlowLink> again = tg::flowLinks(sorted);
    QCOMPARE(again.size(), want.size());
    for (const tg::FlowLink& l : again) {
      const SpanRow& a = sorted[size_t(l.from)];
      const SpanRow& b = sorted[size_t(l.to)];
      QCOMPARE(a.peer, b.rank);
      QCOMPARE(a.name, b.name);
      QCOMPARE(a.layer, b.layer);
      QCOMPARE(a.chunk, b.chunk);
      QVERIFY(b.peer == -1 || b.peer == a.rank);
    }
  }

  void flow_links_pair_in_start_order() {
    // three sends 0 -> 1 of one key, two receives: the first two sends pair with them in order,
    // whatever order the spans come in; a receive with peer -1 takes senders from any rank
    std::vector<SpanRow> spans = {
        span(1, "host", "x", 25, 1),      // 0: second receive
        span(0, "comm", "x", 30, 1, 1),   // 1: third send, unpaired
        span(0, "comm", "x", 10, 1, 1),   // 2: first send
        span(1, "host", "x", 12, 1),      // 3: first receive
        span(0, "comm", "x", 20, 1, 1),   // 4: second send
        span(2, "comm", "x", 11, 1, 1),   // 5: rank 2's send to rank 1: the first receive too
        span(3, "comm", "x", 11, 1, 1, -1, -1, 1, 4),  // 6: another expert: no receive
    };
    const std::vector<tg::FlowLink> links = tg::flowLinks(spans);
    QCOMPARE(int(links.size()), 3);
    QCOMPARE(links[0], (tg::FlowLink{2, 3}));
    QCOMPARE(links[1], (tg::FlowLink{4, 0}));
    QCOMPARE(links[2], (tg::FlowLink{5, 3}));
    QVERIFY(tg::flowLinks({}).empty());
  }

  void visible_flows_geometry_and_bound() {
    std::vector<SpanRow> spans = pipelineSpans();
    tg::sortForTimeline(spans);
    const std::vector<tg::FlowLink> links = tg::flowLinks(spans);
    const tg::LaneLayout layout = tg::LaneLayout::build(spans, 20, 10);
    tg::TimeAxis axis;
    axis.t0 = 0;
    axis.t1 = 0.1;  // 100 ms over 1000 px: 10 px per ms
    axis.x0 = 100;
    axis.width = 1000;
    tg::VisibleFlows all = tg::visibleFlows(spans, links, layout, axis, 100);
    QCOMPARE(all.total, 7);
    QCOMPARE(int(all.arrows.size()), 7);
    // the first forward: from the send's end (0 comm.intra, 11 ms) to the receive's end
    // (1 host, 11.5 ms), in the middle of each sub-lane
    const auto first = std::find_if(all.arrows.begin(), all.arrows.end(), [&](const tg::FlowArrow& a) {
      return spans[size_t(links[size_t(a.link)].from)].rank == 0 && spans[size_t(links[size_t(a.link)].from)].name == "pp.forward" &&
             spans[size_t(links[size_t(a.link)].from)].chunk == 0;
    });
    QVERIFY(first != all.arrows.end());
    QVERIFY(near(first->x1, 100 + 11 * 10.0));
    QVERIFY(near(first->x2, 100 + 11.5 * 10.0));
    QCOMPARE(first->y1, layout.subLaneTop(0, "comm.intra") + 10);
    QCOMPARE(first->y2, layout.subLaneTop(1, "host") + 10);
    // only arrows crossing the view: [35, 55] ms holds the two backward ones (ends 41 -> 41.2,
    // 51 -> 51.4)
    axis.t0 = 0.035;
    axis.t1 = 0.055;
    const tg::VisibleFlows some = tg::visibleFlows(spans, links, layout, axis, 100);
    QCOMPARE(some.total, 2);
    QCOMPARE(int(some.arrows.size()), 2);
    for (const tg::FlowArrow& a : some.arrows) QCOMPARE(spans[size_t(links[size_t(a.link)].from)].name, std::string("pp.backward"));
    // an arrow whose ends straddle the view crosses it: [11.1, 11.4] ms lies between 11 and 11.5
    axis.t0 = 0.0111;
    axis.t1 = 0.0114;
    QCOMPARE(tg::visibleFlows(spans, links, layout, axis, 100).total, 1);
    // a sub-lane missing from the layout: no arrow
    const tg::LaneLayout partial = tg::LaneLayout::build({span(0, "comm.intra", "a", 0, 1)}, 20, 10);
    axis.t0 = 0;
    axis.t1 = 0.1;
    QCOMPARE(tg::visibleFlows(spans, links, partial, axis, 100).total, 0);

    // zoomed out: 2000 sends 0 -> 1, one every 0.05 ms over 100 ms on 1000 px
    std::vector<SpanRow> many;
    for (int k = 0; k < 2000; ++k) {
      many.push_back(span(0, "comm", "m", k * 0.05, 0.01, 1, -1, -1));
      many.push_back(span(1, "host", "m", k * 0.05, 0.03));
    }
    tg::sortForTimeline(many);
    const std::vector<tg::FlowLink> manyLinks = tg::flowLinks(many);
    QCOMPARE(int(manyLinks.size()), 2000);
    const tg::LaneLayout manyLayout = tg::LaneLayout::build(many, 20, 10);
    axis.x0 = 0;
    axis.t0 = 0;
    axis.t1 = 0.1;
    const tg::VisibleFlows capped = tg::visibleFlows(many, manyLinks, manyLayout, axis, 300);
    QCOMPARE(capped.total, 2000);
    QCOMPARE(int(capped.arrows.size()), 300);  // one per pixel column: 1000, then 300 evenly spaced
    const tg::VisibleFlows perColumn = tg::visibleFlows(many, manyLinks, manyLayout, axis, 1500);
    QCOMPARE(int(perColumn.arrows.size()), 1000);  // two tails per 0.1 ms pixel column: one kept
    for (size_t i = 1; i < perColumn.arrows.size(); ++i)
      QVERIFY(std::floor(perColumn.arrows[i].x1) != std::floor(perColumn.arrows[i - 1].x1));
    QCOMPARE(int(tg::visibleFlows(many, manyLinks, manyLayout, axis, 5000).arrows.size()), 2000);
  }

  // ------------------------------------------------------------ search

  void search_matches_and_focus() {
    std::vector<SpanRow> spans = {
        span(1, "comm", "moe.Dispatch", 5, 1),  // 0
        span(0, "comm", "moe.dispatch", 5, 1),  // 1: same start as 0: index order
        span(0, "compute", "forward", 1, 2),    // 2
        span(0, "comm", "MOE.DISPATCH_grad", 2, 1),  // 3
        span(2, "comm", "moe.combine", 3, 1),   // 4
    };
    QCOMPARE(tg::matchingSpans(spans, QStringLiteral("dispatch")), (std::vector<int>{3, 0, 1}));
    QCOMPARE(tg::matchingSpans(spans, QStringLiteral("MoE.")), (std::vector<int>{3, 4, 0, 1}));
    QVERIFY(tg::matchingSpans(spans, QString()).empty());
    QVERIFY(tg::matchingSpans(spans, QStringLiteral("backward")).empty());
    QCOMPARE(tg::matchFlags(5, {3, 0}), (std::vector<char>{1, 0, 0, 1, 0}));

    tg::TimeAxis a;
    a.t0 = 0;
    a.t1 = 1;
    a.width = 1000;
    // inside with 10% to spare and wide enough: the range stays
    QCOMPARE(tg::focusRange(a, 0.4, 0.5), std::make_pair(0.0, 1.0));
    // outside (or too near the edge) but fits: the same zoom centred on it
    auto r = tg::focusRange(a, 2.0, 2.2);
    QVERIFY(near(r.first, 1.6) && near(r.second, 2.6));
    r = tg::focusRange(a, 0.05, 0.15);
    QVERIFY(near(r.first, -0.4) && near(r.second, 0.6));
    // wider than 80% of the range: three times its duration around it
    r = tg::focusRange(a, 1.0, 2.0);
    QVERIFY(near(r.first, 0.0) && near(r.second, 3.0));
    // under 4 px (1 ms = 1 px here): zoomed in to three times its duration
    r = tg::focusRange(a, 0.5, 0.501);
    QVERIFY(near(r.first, 0.499) && near(r.second, 0.502));
    // no duration: TimeAxis::kMinSpan around it
    r = tg::focusRange(a, 0.5, 0.5);
    QVERIFY(near(r.second - r.first, tg::TimeAxis::kMinSpan) && near(0.5 * (r.first + r.second), 0.5));
  }

  // ------------------------------------------------------------ range summary

  void range_summary_values() {
    const std::vector<SpanRow> spans = {
        span(0, "compute", "gemm", 0, 4),    // [0, 4]: clipped to [2, 4] -> 2
        span(1, "compute", "gemm", 3, 2),    // [3, 5]: inside -> 2
        span(0, "compute", "gemm", 9, 3),    // [9, 12]: clipped to [9, 10] -> 1
        span(0, "comm", "a2a", 1, 10),       // [1, 11]: clipped to [2, 10] -> 8
        span(2, "comm", "a2a", 10, 1),       // [10, 11]: touches the end only: out
        span(2, "comm", "a2a", 1, 1),        // [1, 2]: touches the start only: out
        span(0, "host", "mark", 2, 0),       // zero duration at the start: in, 0
        span(1, "host", "mark", 10, 0),      // zero duration at the end: in, 0
        span(1, "host", "mark", 10.5, 0),    // zero duration outside: out
        span(3, "compute", "bias", 5, 2),    // [5, 7]: inside -> 2
        span(2, "compute", "relu", 5, 2),    // [5, 7]: inside -> 2 (ties with bias: by name)
    };
    const std::vector<tg::RangeSummaryRow> rows = tg::summarizeRange(spans, 0.010, 0.002);  // either order
    QCOMPARE(int(rows.size()), 5);
    QCOMPARE(rows[0].name, std::string("a2a"));
    QCOMPARE(rows[0].count, 1);
    QVERIFY(near(rows[0].total, 0.008) && near(rows[0].mean, 0.008));
    QCOMPARE(rows[1].name, std::string("gemm"));
    QCOMPARE(rows[1].count, 3);
    QVERIFY(near(rows[1].total, 0.005) && near(rows[1].mean, 0.005 / 3));
    QCOMPARE(rows[2].name, std::string("bias"));
    QCOMPARE(rows[3].name, std::string("relu"));
    QVERIFY(near(rows[2].total, 0.002) && near(rows[3].total, 0.002));
    QCOMPARE(rows[4].name, std::string("mark"));
    QCOMPARE(rows[4].count, 2);
    QCOMPARE(rows[4].total, 0.0);
    QCOMPARE(rows[4].mean, 0.0);
    QVERIFY(tg::summarizeRange(spans, 0.020, 0.030).empty());

    TimelineRangeSummaryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), 4);
    QVERIFY(!model.hasRange());
    model.setRange(spans, 0.002, 0.010);
    QVERIFY(model.hasRange());
    QCOMPARE(model.rangeStart(), 0.002);
    QCOMPARE(model.rangeEnd(), 0.010);
    QCOMPARE(model.rowCount(), 5);
    QCOMPARE(model.headerData(0, Qt::Horizontal).toString(), QStringLiteral("Name"));
    QCOMPARE(model.headerData(1, Qt::Horizontal).toString(), QStringLiteral("Count"));
    QCOMPARE(model.headerData(2, Qt::Horizontal).toString(), QStringLiteral("Total"));
    QCOMPARE(model.headerData(3, Qt::Horizontal).toString(), QStringLiteral("Mean"));
    QCOMPARE(model.index(1, 0).data().toString(), QStringLiteral("gemm"));
    QCOMPARE(model.index(1, 1).data().toInt(), 3);
    QCOMPARE(model.index(1, 2).data().toString(), QStringLiteral("5.000 ms"));
    QCOMPARE(model.index(1, 3).data().toString(), QStringLiteral("1.667 ms"));
    QVERIFY(near(model.index(1, 2).data(Qt::UserRole).toDouble(), 0.005));
    QVERIFY(near(model.index(1, 3).data(Qt::UserRole).toDouble(), 0.005 / 3));
    QCOMPARE(model.index(0, 2).data().toString(), QStringLiteral("8.000 ms"));
    QCOMPARE(model.index(4, 3).data().toString(), QStringLiteral("0.000 us"));
    QCOMPARE(model.index(1, 1).data(Qt::TextAlignmentRole).toInt(), int(Qt::AlignRight | Qt::AlignVCenter));
    model.setRange(spans, 0.0105, 0.011);  // [10.5, 11]: a2a [1, 11] and [10, 11], gemm [9, 12], the mark at 10.5
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("a2a"));
    QCOMPARE(model.index(0, 1).data().toInt(), 2);  // 0.5 ms each
    QCOMPARE(model.index(0, 2).data().toString(), QStringLiteral("1.000 ms"));
    QCOMPARE(model.index(1, 0).data().toString(), QStringLiteral("gemm"));
    QCOMPARE(model.index(1, 2).data().toString(), QStringLiteral("0.500 ms"));
    QCOMPARE(model.index(2, 0).data().toString(), QStringLiteral("mark"));
    QCOMPARE(model.index(2, 1).data().toInt(), 1);
    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(!model.hasRange());
  }

  // ------------------------------------------------------------ labels

  void span_labels_never_overlap() {
    const QFontMetricsF fm{QFont()};
    // one sub-lane, 1 ms = 10 px, from x = 0: a step with a phase starting with it (drawn below
    // it), a phase inside, a long name in a short span, a span too narrow for a name, and
    // neighbours touching
    std::vector<SpanRow> spans = {
        span(0, "host", "step", 0, 60),
        span(0, "host", "forward", 0, 20),
        span(0, "host", "optimizer", 40, 10),
        span(0, "host", "a.rather.long.span.name.that.cannot.fit", 70, 8),
        span(0, "host", "tiny", 80, 0.5),
        span(0, "host", "left", 85, 5),
        span(0, "host", "right", 90, 5),
        span(1, "host", "step", 0, 60),
    };
    tg::sortForTimeline(spans);
    const tg::LaneLayout layout = tg::LaneLayout::build(spans, 18, 6);
    tg::TimeAxis axis;
    axis.t0 = 0;
    axis.t1 = 0.1;
    axis.x0 = 0;
    axis.width = 1000;
    const std::vector<tg::DrawItem> items = tg::visibleItems(spans, layout, axis);
    QCOMPARE(int(items.size()), 8);
    const std::vector<tg::SpanLabel> labels = tg::spanLabels(items, axis, fm, 3);
    auto labelOf = [&](const char* name, int rank = 0) -> const tg::SpanLabel* {
      for (const tg::SpanLabel& l : labels)
        if (items[size_t(l.item)].span->name == name && items[size_t(l.item)].span->rank == rank) return &l;
      return nullptr;
    };
    // forward starts with step, which is drawn over it: no label for forward; step's label
    // runs from 3 px to 3 px before optimizer (400 px)
    QVERIFY(!labelOf("forward"));
    QVERIFY(labelOf("step"));
    QCOMPARE(labelOf("step")->text, QStringLiteral("step"));
    QCOMPARE(labelOf("step")->rect.left(), 3.0);
    QVERIFY(labelOf("step")->rect.right() <= 397.0);
    QCOMPARE(labelOf("optimizer")->text, QStringLiteral("optimizer"));  // 94 px of room
    QCOMPARE(labelOf("optimizer")->rect.left(), 403.0);
    // 80 px minus padding: elided
    const tg::SpanLabel* longName = labelOf("a.rather.long.span.name.that.cannot.fit");
    QVERIFY(longName);
    QVERIFY2(longName->text.endsWith(QChar(0x2026)) && longName->text.size() > 1, qPrintable(longName->text));
    QVERIFY(longName->rect.width() <= 74.0 + 1e-9);
    QVERIFY(!labelOf("tiny"));  // 5 px
    QVERIFY(labelOf("left") && labelOf("right"));
    QVERIFY(labelOf("step", 1));
    // no two labels of a sub-lane overlap (gap >= padding), each inside its item and the axis
    for (const tg::SpanLabel& a : labels) {
      const tg::DrawItem& it = items[size_t(a.item)];
      QVERIFY(a.rect.left() >= it.x + 3 - 1e-9 && a.rect.right() <= it.x + it.width - 3 + 1e-9);
      QVERIFY(a.rect.top() == it.y && a.rect.height() == it.height);
      QVERIFY(a.rect.width() <= fm.horizontalAdvance(a.text) + 1e-9);
      for (const tg::SpanLabel& b : labels) {
        if (&a == &b || items[size_t(b.item)].subLane != it.subLane) continue;
        QVERIFY2(a.rect.right() + 3 <= b.rect.left() + 1e-9 || b.rect.right() + 3 <= a.rect.left() + 1e-9,
                 qPrintable(a.text + " / " + b.text));
      }
    }
    // scrolled: a span reaching in from the left is labelled from the axis' left edge
    axis.x0 = 50;
    axis.t0 = 0.030;
    axis.t1 = 0.130;
    const std::vector<tg::DrawItem> shifted = tg::visibleItems(spans, layout, axis);
    for (const tg::SpanLabel& l : tg::spanLabels(shifted, axis, fm, 3))
      QVERIFY(l.rect.left() >= 53.0 && l.rect.right() <= 50.0 + 1000 - 3 + 1e-9);
    // a minimum room: nothing narrower than 100 px gets a name
    for (const tg::SpanLabel& l : tg::spanLabels(items, tg::TimeAxis{0, 0.1, 0, 1000}, fm, 3, 100))
      QVERIFY(items[size_t(l.item)].width >= 106);
  }

  void ruler_labels_never_overlap_data() {
    QTest::addColumn<double>("t0");
    QTest::addColumn<double>("t1");
    QTest::addColumn<double>("width");
    QTest::addColumn<double>("minPixels");
    QTest::newRow("20 ms") << 0.0 << 0.020 << 1000.0 << 90.0;
    QTest::newRow("long labels, ticks asked 10 px apart") << 1234.5 << 1234.5001 << 1000.0 << 10.0;
    QTest::newRow("narrow") << 0.0 << 3.0 << 120.0 << 20.0;
    QTest::newRow("microseconds late in a run") << 98765.4321 << 98765.4321 + 2e-6 << 1500.0 << 30.0;
  }
  void ruler_labels_never_overlap() {
    QFETCH(double, t0);
    QFETCH(double, t1);
    QFETCH(double, width);
    QFETCH(double, minPixels);
    const QFontMetricsF fm{QFont()};
    const tg::TimeAxis axis{t0, t1, 40, width};
    const tg::RulerLayout r = tg::rulerLayout(axis, fm, 20, minPixels, 3, 6);
    QVERIFY(!r.ticks.times.empty());
    QVERIFY(!r.labels.empty());
    const double spacing = r.ticks.stepMs / 1e3 / axis.span() * axis.width;
    QVERIFY(spacing >= minPixels - 1e-9);
    for (size_t i = 0; i < r.labels.size(); ++i) {
      const tg::RulerLabel& l = r.labels[i];
      QCOMPARE(l.text, tg::tickLabel(l.time, r.ticks.decimals));
      QVERIFY(std::find(r.ticks.times.begin(), r.ticks.times.end(), l.time) != r.ticks.times.end());
      QVERIFY(near(l.rect.left(), axis.toX(l.time) + 3, 1e-12));
      QVERIFY(near(l.rect.width(), fm.horizontalAdvance(l.text), 1e-12));
      QVERIFY(l.rect.right() <= axis.x0 + axis.width + 1e-9);
      if (i > 0) QVERIFY2(r.labels[i - 1].rect.right() + 6 <= l.rect.left() + 1e-9, qPrintable(l.text));
    }
    // every tick but possibly the last (which may not fit before the end) is labelled
    QVERIFY(r.labels.size() + 1 >= r.ticks.times.size());
  }

  // ------------------------------------------------------------ the view, with real events

  void search_box_highlights_and_jumps() {
    auto v = makeView(1);
    QVERIFY(v);
    TimelineCanvas* c = v->canvas();
    QLineEdit* box = v->searchBox();
    QVERIFY(box);
    const QColor compute = tg::categoryColor("compute"), comm = tg::categoryColor("comm");
    const QPoint stepPoint = c->pointAt(0.015, 0, "host").toPoint();  // inside "step", no text
    const QPoint waitPoint = c->pointAt(0.0158, 2, "compute.comm").toPoint();  // rank 2's grad.wait: no text
    QCOMPARE(c->grab().toImage().pixelColor(stepPoint), compute);

    box->setFocus();
    QTest::keyClicks(box, QStringLiteral("WAIT"));
    QCOMPARE(c->searchText(), QStringLiteral("WAIT"));
    QCOMPARE(c->matchCount(), fx::kRanks);  // one grad.wait per rank
    QCOMPARE(v->searchStatus(), QStringLiteral("%1 matches").arg(fx::kRanks));
    const QImage shot = c->grab().toImage();
    QCOMPARE(shot.pixelColor(waitPoint), comm);  // the match as usual
    QVERIFY(shot.pixelColor(stepPoint) != compute);  // the rest dimmed: paler
    QVERIFY(shot.pixelColor(stepPoint).lightness() > compute.lightness());

    // Enter: the first match (all four start at 15.6 ms: rank 0 first), brought into view
    const tg::TimeAxis before = c->axis();
    QTest::keyClick(box, Qt::Key_Return);
    QCOMPARE(c->currentMatch(), 0);
    QCOMPARE(v->searchStatus(), QStringLiteral("1 / %1 matches").arg(fx::kRanks));
    int track = -1;
    const SpanRow* m = c->matchSpan(0, &track);
    QVERIFY(m && track == 0);
    QCOMPARE(m->rank, 0);
    QCOMPARE(m->name, std::string("grad.wait"));
    QVERIFY(c->axis().t0 <= m->start && c->axis().t1 >= m->start + m->duration);
    // 0.4 ms in the 20 ms view, 15.6..16 ms: inside with 10% to spare: the view stays
    QVERIFY(near(c->axis().t0, before.t0) && near(c->axis().t1, before.t1));
    QTest::keyClick(box, Qt::Key_Return);
    QCOMPARE(c->matchSpan(c->currentMatch())->rank, 1);
    QTest::keyClick(box, Qt::Key_Return, Qt::ShiftModifier);
    QCOMPARE(c->currentMatch(), 0);
    QTest::keyClick(box, Qt::Key_Return, Qt::ShiftModifier);  // wraps to the last
    QCOMPARE(c->currentMatch(), fx::kRanks - 1);
    QCOMPARE(v->searchStatus(), QStringLiteral("%1 / %1 matches").arg(fx::kRanks));
    QTest::mouseClick(v->findChild<QToolButton*>("searchNext"), Qt::LeftButton);
    QCOMPARE(c->currentMatch(), 0);

    // zoomed in elsewhere: the jump pans and zooms to the match
    c->setVisibleRange(0.001, 0.002);
    QTest::keyClick(box, Qt::Key_Return);
    m = c->matchSpan(c->currentMatch());
    QVERIFY(c->axis().t0 <= m->start && c->axis().t1 >= m->start + m->duration);
    QVERIFY(near(0.5 * (c->axis().t0 + c->axis().t1), m->start + 0.5 * m->duration));
    QVERIFY(!c->grab().isNull());  // the current match outlined

    // no match; then cleared: every span as usual again
    box->clear();
    QTest::keyClicks(box, QStringLiteral("no such span"));
    QCOMPARE(c->matchCount(), 0);
    QCOMPARE(v->searchStatus(), QStringLiteral("no match"));
    QTest::keyClick(box, Qt::Key_Return);
    QCOMPARE(c->currentMatch(), -1);
    QTest::keyClick(box, Qt::Key_Escape);
    QVERIFY(box->text().isEmpty());
    QCOMPARE(v->searchStatus(), QString());
    c->fitAll();
    QCOMPARE(c->grab().toImage().pixelColor(stepPoint), compute);

    // the search stays when another step is shown, matched again there
    box->setText(QStringLiteral("optimizer"));
    QVERIFY(v->selectStep(2));
    QCOMPARE(c->matchCount(), fx::kRanks);
    QCOMPARE(c->matchSpan(0)->step, int64_t(2));
  }

  void flows_drawn_and_toggled() {
    auto v = makeView(1);
    QVERIFY(v);
    TimelineCanvas* c = v->canvas();
    // the fixture's ring all-reduce over 4 ranks has no point-to-point flow
    QVERIFY(c->flowLinks().empty());
    c->grab();
    QCOMPARE(c->lastPaintFlowCount(), 0);

    c->setSpans(pipelineSpans());
    QCOMPARE(int(c->flowLinks().size()), 7);
    c->grab();
    QVERIFY(v->flowsToggle()->isChecked());
    QCOMPARE(c->lastPaintFlowCount(), 7);  // all of them cross the fitted view
    // the arrow of the first forward: dark pixels half way between its ends
    const SpanRow* send = nullptr;
    const SpanRow* recv = nullptr;
    for (const tg::FlowLink& l : c->flowLinks())
      if (c->spans()[size_t(l.from)].name == "pp.forward" && c->spans()[size_t(l.from)].rank == 0 &&
          c->spans()[size_t(l.from)].chunk == 0) {
        send = &c->spans()[size_t(l.from)];
        recv = &c->spans()[size_t(l.to)];
      }
    QVERIFY(send && recv);
    const QPointF a = c->pointAt(send->start + send->duration, 0, "comm.intra");
    const QPointF b = c->pointAt(recv->start + recv->duration, 1, "host");
    auto darkNear = [](const QImage& img, QPointF p) {
      for (int dx = -1; dx <= 1; ++dx)
        for (int dy = -1; dy <= 1; ++dy)
          if (img.pixelColor(p.toPoint() + QPoint(dx, dy)).lightness() < 110) return true;
      return false;
    };
    const QPointF mid = 0.5 * (a + b);
    QVERIFY(darkNear(c->grab().toImage(), mid));

    QTest::mouseClick(v->flowsToggle(), Qt::LeftButton);
    QVERIFY(!v->flowsToggle()->isChecked());
    QVERIFY(!c->showFlows());
    QVERIFY(!darkNear(c->grab().toImage(), mid));
    QCOMPARE(c->lastPaintFlowCount(), 0);
    QTest::mouseClick(v->flowsToggle(), Qt::LeftButton);
    c->grab();
    QCOMPARE(c->lastPaintFlowCount(), 7);
    // zoomed to [35, 55] ms: the two backward arrows only
    c->setVisibleRange(0.035, 0.055);
    c->grab();
    QCOMPARE(c->lastPaintFlowCount(), 2);
  }

  void flows_bounded_when_zoomed_out() {
    // 20,000 sends 0 -> 1 over 1 s: at most kMaxFlowArrows arrows whatever the zoom
    std::vector<SpanRow> spans;
    for (int k = 0; k < 20000; ++k) {
      spans.push_back(span(0, "comm", "m", k * 0.05, 0.01, 1));
      spans.push_back(span(1, "host", "m", k * 0.05, 0.03));
    }
    TimelineCanvas c;
    c.resize(1000, 300);
    c.show();
    QVERIFY(QTest::qWaitForWindowExposed(&c));
    c.setSpans(std::move(spans));
    QCOMPARE(int(c.flowLinks().size()), 20000);
    c.grab();
    QCOMPARE(c.lastPaintFlowCount(), TimelineCanvas::kMaxFlowArrows);
    c.setVisibleRange(0.1, 0.1005);  // 0.5 ms: 10 sends
    c.grab();
    QCOMPARE(c.lastPaintFlowCount(), 10);
  }

  void shift_drag_selects_a_range() {
    auto v = makeView(1);
    QVERIFY(v);
    TimelineCanvas* c = v->canvas();
    QVERIFY(v->rangeSummaryPanel()->isHidden());
    const tg::TimeAxis before = c->axis();
    const double y = c->pointAt(0, 1, "compute").y();
    const QPoint a = QPointF(before.x0 + 0.1 * before.width, y).toPoint();
    const QPoint b = QPointF(before.x0 + 0.35 * before.width, y).toPoint();
    QTest::mousePress(c, Qt::LeftButton, Qt::ShiftModifier, a);
    QTest::mouseMove(c, b);
    QTest::mouseRelease(c, Qt::LeftButton, Qt::ShiftModifier, b);
    // no zoom: a selection
    QVERIFY(near(c->axis().t0, before.t0) && near(c->axis().t1, before.t1));
    QVERIFY(c->hasSelection());
    QVERIFY(near(c->selectionStart(), before.toTime(a.x())));
    QVERIFY(near(c->selectionEnd(), before.toTime(b.x())));
    QVERIFY(!v->rangeSummaryPanel()->isHidden());
    TimelineRangeSummaryModel* model = v->rangeSummaryModel();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const std::vector<tg::RangeSummaryRow> want = tg::summarizeRange(c->spans(), c->selectionStart(), c->selectionEnd());
    QCOMPARE(model->rowCount(), int(want.size()));
    for (int i = 0; i < model->rowCount(); ++i) {
      QCOMPARE(model->index(i, 0).data().toString().toStdString(), want[size_t(i)].name);
      QCOMPARE(model->index(i, 1).data().toInt(), want[size_t(i)].count);
    }
    // "step" on 4 ranks covers the whole range: 4 x its width, the largest total
    QCOMPARE(want.front().name, std::string("step"));
    QCOMPARE(want.front().count, fx::kRanks);
    QVERIFY(near(want.front().total, fx::kRanks * (c->selectionEnd() - c->selectionStart())));
    QVERIFY2(v->rangeSummaryTitle().startsWith(QStringLiteral("Range %1 – %2")
                                                   .arg(tg::formatTimeMs(c->selectionStart()),
                                                        tg::formatTimeMs(c->selectionEnd()))),
             qPrintable(v->rangeSummaryTitle()));
    QCOMPARE(v->rangeSummaryTable()->model()->rowCount(), model->rowCount());
    QVERIFY(!v->grab().isNull());

    // Esc clears it
    c->setFocus();
    QTest::keyClick(c, Qt::Key_Escape);
    QVERIFY(!c->hasSelection());
    QVERIFY(v->rangeSummaryPanel()->isHidden());
    QCOMPARE(model->rowCount(), 0);

    // "Select range": a plain drag selects; off again, it zooms
    QTest::mouseClick(v->rangeSelectToggle(), Qt::LeftButton);
    QVERIFY(c->rangeSelectMode());
    QTest::mousePress(c, Qt::LeftButton, {}, b);
    QTest::mouseMove(c, a);
    QTest::mouseRelease(c, Qt::LeftButton, {}, a);
    QVERIFY(c->hasSelection());
    QVERIFY(near(c->selectionStart(), before.toTime(a.x())));  // dragged right to left
    QVERIFY(near(c->axis().t0, before.t0) && near(c->axis().t1, before.t1));
    QVERIFY(!v->rangeSummaryPanel()->isHidden());
    // a click clears it
    QTest::mouseClick(c, Qt::LeftButton, {}, a);
    QVERIFY(!c->hasSelection());
    QTest::mouseClick(v->rangeSelectToggle(), Qt::LeftButton);
    QVERIFY(!c->rangeSelectMode());
    QTest::mousePress(c, Qt::LeftButton, {}, a);
    QTest::mouseMove(c, b);
    QTest::mouseRelease(c, Qt::LeftButton, {}, b);
    QVERIFY(!c->hasSelection());
    QVERIFY(near(c->axis().t0, before.toTime(a.x())) && near(c->axis().t1, before.toTime(b.x())));
  }

  void labels_drawn_where_they_fit() {
    auto v = makeView(1);
    QVERIFY(v);
    TimelineCanvas* c = v->canvas();
    c->grab();
    // ec step 1 over ~1000 px: the wide spans (step, forward, backward, optimizer, ...) named,
    // never more than one label per item
    QVERIFY(c->lastPaintLabelCount() > fx::kRanks);
    QVERIFY(c->lastPaintLabelCount() <= c->lastPaintItemCount());
  }
};

QTEST_MAIN(TstTimelineTools)
#include "tst_timeline_tools.moc"
