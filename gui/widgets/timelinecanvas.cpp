#include "widgets/timelinecanvas.h"

#include <QFontMetricsF>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "models/timelinelabels.h"
#include "models/timelinesearch.h"
#include "models/timelinetext.h"

using moebench::SpanRow;
namespace tg = moebench::gui;

namespace {
constexpr double kLabelPadding = 8;   // px around label text
constexpr double kRightMargin = 4;    // px right of the time axis
constexpr double kHitTolerance = 2;   // px, as hitTest
constexpr double kTickMinPixels = 90; // px between ruler labels (at least: rulerLayout widens it)
constexpr double kLabelMinRoom = 24;  // px: narrower room inside a span shows no name
}  // namespace

TimelineCanvas::TimelineCanvas(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  m_vscroll = new QScrollBar(Qt::Vertical, this);
  m_vscroll->hide();
  connect(m_vscroll, &QScrollBar::valueChanged, this, [this] { update(); });
  layoutAxis();
}

QSize TimelineCanvas::sizeHint() const { return {900, int(rulerHeight() + std::max(200.0, m_stack.totalHeight + 8))}; }
QSize TimelineCanvas::minimumSizeHint() const { return {300, int(rulerHeight() + 3 * kSubLaneHeight)}; }

double TimelineCanvas::rulerHeight() const { return QFontMetricsF(font()).height() + 10; }
double TimelineCanvas::laneTop() const { return rulerHeight() + 2 - m_vscroll->value(); }

void TimelineCanvas::setSpans(std::vector<SpanRow> spans) {
  std::vector<std::vector<SpanRow>> runs;
  runs.push_back(std::move(spans));
  setRuns(std::move(runs), {}, false);
}

void TimelineCanvas::setTracks(std::vector<Track> tracks) {
  std::vector<std::vector<SpanRow>> runs;
  std::vector<std::string> titles;
  for (Track& t : tracks) {
    tg::shiftSpans(t.spans, -tg::stepStartOrigin(t.spans));
    runs.push_back(std::move(t.spans));
    titles.push_back(t.title.toStdString());
  }
  setRuns(std::move(runs), titles, true);
}

void TimelineCanvas::setRuns(std::vector<std::vector<SpanRow>> runs, const std::vector<std::string>& titles,
                             bool stacked) {
  m_runs = std::move(runs);
  m_stacked = stacked;
  bool any = false;
  m_tmin = m_tmax = 0;
  for (std::vector<SpanRow>& spans : m_runs) {
    tg::sortForTimeline(spans);
    for (const SpanRow& s : spans) {
      m_tmin = any ? std::min(m_tmin, s.start) : s.start;
      m_tmax = any ? std::max(m_tmax, s.start + s.duration) : s.start + s.duration;
      any = true;
    }
  }
  std::vector<const std::vector<SpanRow>*> pointers;
  for (const auto& spans : m_runs) pointers.push_back(&spans);
  m_stack = tg::StackedLayout::build(pointers, titles, kSubLaneHeight, kRankGap, m_stacked ? kHeaderHeight : 0.0,
                                     m_stacked ? kTrackGap : 0.0);

  QFont bold = font();
  bold.setBold(true);
  const QFontMetricsF fmBold(bold), fm(font());
  double rankW = 0, streamW = 0;
  for (const tg::StackedTrack& t : m_stack.tracks) {
    for (const tg::Lane& l : t.lanes.lanes)
      rankW = std::max(rankW, fmBold.horizontalAdvance(QString::fromStdString(l.label)));
    for (const tg::SubLane& sl : t.lanes.subLanes)
      streamW = std::max(streamW, fm.horizontalAdvance(QString::fromStdString(sl.stream)));
  }
  m_rankColumn = std::ceil(rankW + 2 * kLabelPadding);
  m_labelWidth = std::max(80.0, m_rankColumn + std::ceil(streamW + 2 * kLabelPadding));

  m_drag = Drag::None;
  m_vscroll->setValue(0);
  layoutAxis();
  m_axis.fitTo(m_tmin, m_tmax);
  m_itemsDirty = true;
  m_flowsDirty = true;
  rematch();
  const bool hadSelection = m_hasSelection;
  m_hasSelection = false;
  updateGeometry();
  update();
  emit viewChanged();
  emit searchChanged();
  if (hadSelection) emit selectionChanged();
}

// ---------------------------------------------------------------- flows, search, selection

void TimelineCanvas::ensureFlows() const {
  if (!m_flowsDirty) return;
  m_flows.assign(m_runs.size(), {});
  for (size_t k = 0; k < m_runs.size(); ++k) m_flows[k] = tg::flowLinks(m_runs[k]);
  m_flowsDirty = false;
}

const std::vector<tg::FlowLink>& TimelineCanvas::flowLinks(int track) const {
  static const std::vector<tg::FlowLink> none;
  ensureFlows();
  return track >= 0 && size_t(track) < m_flows.size() ? m_flows[size_t(track)] : none;
}

void TimelineCanvas::setShowFlows(bool show) {
  if (show == m_showFlows) return;
  m_showFlows = show;
  update();
}

void TimelineCanvas::rematch() {
  m_marks.assign(m_runs.size(), {});
  m_matches.clear();
  m_currentMatch = -1;
  if (m_searchText.isEmpty()) return;
  for (size_t k = 0; k < m_runs.size(); ++k) {
    const std::vector<int> found = tg::matchingSpans(m_runs[k], m_searchText);
    m_marks[k] = tg::matchFlags(m_runs[k].size(), found);
    for (int i : found) m_matches.emplace_back(int(k), i);
  }
  std::stable_sort(m_matches.begin(), m_matches.end(), [this](const auto& a, const auto& b) {
    return m_runs[size_t(a.first)][size_t(a.second)].start < m_runs[size_t(b.first)][size_t(b.second)].start;
  });
}

void TimelineCanvas::setSearchText(const QString& text) {
  if (text == m_searchText) return;
  m_searchText = text;
  rematch();
  m_itemsDirty = true;
  update();
  emit searchChanged();
}

const SpanRow* TimelineCanvas::matchSpan(int i, int* track) const {
  if (i < 0 || i >= matchCount()) return nullptr;
  const auto [k, idx] = m_matches[size_t(i)];
  if (track) *track = k;
  return &m_runs[size_t(k)][size_t(idx)];
}

bool TimelineCanvas::goToMatch(int i) {
  int track = 0;
  const SpanRow* s = matchSpan(i, &track);
  if (!s) return false;
  m_currentMatch = i;
  const auto [t0, t1] = tg::focusRange(m_axis, s->start, s->start + s->duration);
  m_axis.t0 = t0;
  m_axis.t1 = t1;
  // scroll its sub-lane into view (the middle of the lanes' area) when it is not on screen
  const double top = laneLayout(track).subLaneTop(s->rank, s->stream);
  const double y = laneTop() + top, available = height() - rulerHeight() - 2;
  if (top >= 0 && (y < rulerHeight() || y + kSubLaneHeight > height()))
    m_vscroll->setValue(int(std::lround(top - 0.5 * (available - kSubLaneHeight))));
  viewMoved();
  emit searchChanged();
  return true;
}

bool TimelineCanvas::nextMatch() {
  if (m_matches.empty()) return false;
  return goToMatch(m_currentMatch < 0 ? 0 : (m_currentMatch + 1) % matchCount());
}

bool TimelineCanvas::previousMatch() {
  if (m_matches.empty()) return false;
  return goToMatch(m_currentMatch <= 0 ? matchCount() - 1 : m_currentMatch - 1);
}

void TimelineCanvas::setSelection(double t0, double t1) {
  m_hasSelection = true;
  m_selT0 = std::min(t0, t1);
  m_selT1 = std::max(t0, t1);
  update();
  emit selectionChanged();
}

void TimelineCanvas::clearSelection() {
  if (!m_hasSelection) return;
  m_hasSelection = false;
  update();
  emit selectionChanged();
}

QString TimelineCanvas::trackTitle(int track) const {
  if (track < 0 || track >= m_stack.trackCount()) return {};
  return QString::fromStdString(m_stack.tracks[size_t(track)].title);
}

const std::vector<SpanRow>& TimelineCanvas::spans(int track) const {
  static const std::vector<SpanRow> none;
  return track >= 0 && size_t(track) < m_runs.size() ? m_runs[size_t(track)] : none;
}

const tg::LaneLayout& TimelineCanvas::laneLayout(int track) const {
  static const tg::LaneLayout none;
  return track >= 0 && track < m_stack.trackCount() ? m_stack.tracks[size_t(track)].lanes : none;
}

void TimelineCanvas::layoutAxis() {
  const double available = height() - rulerHeight() - 2;
  const int overflow = int(std::ceil(m_stack.totalHeight + 4 - available));
  m_vscroll->setVisible(overflow > 0);
  m_vscroll->setRange(0, std::max(0, overflow));
  m_vscroll->setPageStep(std::max(1, int(available)));
  m_vscroll->setSingleStep(int(kSubLaneHeight));
  const int sw = m_vscroll->isVisibleTo(this) ? m_vscroll->sizeHint().width() : 0;
  m_vscroll->setGeometry(width() - sw, int(rulerHeight()), sw, std::max(0, height() - int(rulerHeight())));
  m_axis.x0 = m_labelWidth;
  m_axis.width = std::max(1.0, width() - m_labelWidth - kRightMargin - sw);
}

void TimelineCanvas::setVisibleRange(double t0, double t1) {
  m_axis.fitTo(t0, t1);
  viewMoved();
}

void TimelineCanvas::fitAll() {
  m_axis.fitTo(m_tmin, m_tmax);
  viewMoved();
}

void TimelineCanvas::viewMoved() {
  m_axis.clampTo(m_tmin, m_tmax);
  m_itemsDirty = true;
  update();
  emit viewChanged();
}

void TimelineCanvas::ensureItems() const {
  if (!m_itemsDirty) return;
  m_items.resize(m_runs.size());
  for (size_t k = 0; k < m_runs.size(); ++k)
    m_items[k] = tg::visibleItems(m_runs[k], m_stack.tracks[k].lanes, m_axis, 1.0,
                                  k < m_marks.size() && !m_marks[k].empty() ? &m_marks[k] : nullptr);
  m_itemsDirty = false;
}

// ---------------------------------------------------------------- hover

const tg::DrawItem* TimelineCanvas::itemAt(QPointF pos, int* trackOut) const {
  if (pos.y() < rulerHeight() || pos.x() < m_axis.x0 - kHitTolerance ||
      pos.x() > m_axis.x0 + m_axis.width + kHitTolerance)
    return nullptr;
  const double y = pos.y() - laneTop();
  const int track = m_stack.trackAt(y);
  if (track < 0) return nullptr;
  const int sl = m_stack.tracks[size_t(track)].lanes.subLaneAt(y);
  if (sl < 0) return nullptr;
  ensureItems();
  if (trackOut) *trackOut = track;
  const tg::DrawItem* best = nullptr;
  double bestD = 0;
  for (const tg::DrawItem& it : m_items[size_t(track)]) {
    if (it.subLane != sl) continue;
    const double xa = it.x, xb = it.x + std::max(it.width, 1.0);  // drawn at least 1 px wide
    const double d = pos.x() < xa ? xa - pos.x() : (pos.x() > xb ? pos.x() - xb : 0.0);
    if (d > kHitTolerance) continue;
    if (!best || d < bestD || (d == bestD && it.end - it.start < best->end - best->start)) {
      best = &it;
      bestD = d;
    }
  }
  return best;
}

QString TimelineCanvas::tooltipAt(QPointF pos) const {
  int track = 0;
  const tg::DrawItem* it = itemAt(pos, &track);
  if (!it) return {};
  const QString run = m_stacked ? trackTitle(track) + QLatin1Char('\n') : QString();
  if (it->count == 1 && it->span) return run + tg::spanTooltip(*it->span);
  const tg::SubLane& lane = laneLayout(track).subLanes.at(size_t(it->subLane));
  return run + tg::aggregateTooltip(*it, lane.rank, lane.stream);
}

QPointF TimelineCanvas::pointAt(double t, int rank, const std::string& stream, int track) const {
  const double top = laneLayout(track).subLaneTop(rank, stream);
  if (top < 0) return {-1, -1};
  return {m_axis.toX(t), laneTop() + top + 0.5 * kSubLaneHeight};
}

bool TimelineCanvas::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    const QString text = m_drag == Drag::None ? tooltipAt(he->pos()) : QString();
    if (text.isEmpty()) {
      QToolTip::hideText();
      e->ignore();
    } else {
      QToolTip::showText(he->globalPos(), text, this);
    }
    return true;
  }
  return QWidget::event(e);
}

// ---------------------------------------------------------------- input

void TimelineCanvas::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  layoutAxis();
  viewMoved();
}

void TimelineCanvas::wheelEvent(QWheelEvent* e) {
  QPointF d = e->angleDelta();
  if (d.isNull()) d = e->pixelDelta();  // touchpads without angle deltas: 120 px = one notch
  if (d.isNull()) return;
  const bool panModifier = e->modifiers() & (Qt::ControlModifier | Qt::ShiftModifier);
  if (panModifier || (d.x() != 0 && d.y() == 0)) {
    const double notches = (d.x() != 0 ? d.x() : d.y()) / 120.0;
    m_axis.pan(notches * kPanFraction * m_axis.width);  // wheel up / scroll left: earlier times
  } else {
    m_axis.zoomAround(e->position().x(), std::pow(kWheelZoomPerNotch, d.y() / 120.0));
  }
  viewMoved();
  e->accept();
}

void TimelineCanvas::keyPressEvent(QKeyEvent* e) {
  const double centre = m_axis.x0 + 0.5 * m_axis.width;
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: m_axis.zoomAround(centre, kKeyZoom); break;
    case Qt::Key_Minus: m_axis.zoomAround(centre, 1.0 / kKeyZoom); break;
    case Qt::Key_Left: m_axis.pan(kPanFraction * m_axis.width); break;
    case Qt::Key_Right: m_axis.pan(-kPanFraction * m_axis.width); break;
    case Qt::Key_Home:
    case Qt::Key_0: m_axis.fitTo(m_tmin, m_tmax); break;
    case Qt::Key_Up: m_vscroll->triggerAction(QAbstractSlider::SliderSingleStepSub); return;
    case Qt::Key_Down: m_vscroll->triggerAction(QAbstractSlider::SliderSingleStepAdd); return;
    case Qt::Key_PageUp: m_vscroll->triggerAction(QAbstractSlider::SliderPageStepSub); return;
    case Qt::Key_PageDown: m_vscroll->triggerAction(QAbstractSlider::SliderPageStepAdd); return;
    case Qt::Key_Escape:
      if (!m_hasSelection) {
        QWidget::keyPressEvent(e);
        return;
      }
      clearSelection();
      return;
    default: QWidget::keyPressEvent(e); return;
  }
  viewMoved();
}

void TimelineCanvas::mousePressEvent(QMouseEvent* e) {
  setFocus(Qt::MouseFocusReason);
  const double x = e->position().x();
  if (e->button() == Qt::LeftButton) {
    m_drag = (m_rangeSelectMode || (e->modifiers() & Qt::ShiftModifier)) ? Drag::Select : Drag::Band;
    m_dragStartX = m_dragLastX = std::clamp(x, m_axis.x0, m_axis.x0 + m_axis.width);
    QToolTip::hideText();
  } else if (e->button() == Qt::MiddleButton || e->button() == Qt::RightButton) {
    m_drag = Drag::Pan;
    m_dragLastX = x;
    QToolTip::hideText();
  } else {
    QWidget::mousePressEvent(e);
  }
}

void TimelineCanvas::mouseMoveEvent(QMouseEvent* e) {
  const double x = e->position().x();
  if (m_drag == Drag::Band || m_drag == Drag::Select) {
    m_dragLastX = std::clamp(x, m_axis.x0, m_axis.x0 + m_axis.width);
    update();
  } else if (m_drag == Drag::Pan) {
    m_axis.pan(x - m_dragLastX);
    m_dragLastX = x;
    viewMoved();
  } else if (QToolTip::isVisible()) {  // follow the mouse once a tooltip is up
    const QString text = tooltipAt(e->position());
    if (text.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(e->globalPosition().toPoint(), text, this);
  }
}

void TimelineCanvas::mouseReleaseEvent(QMouseEvent* e) {
  const double x = e->position().x();
  if (m_drag == Drag::Band) {
    m_dragLastX = std::clamp(x, m_axis.x0, m_axis.x0 + m_axis.width);
    m_drag = Drag::None;
    if (std::abs(m_dragLastX - m_dragStartX) >= kMinBandPixels) {
      m_axis.zoomToRange(m_dragStartX, m_dragLastX);
      viewMoved();
    } else {
      update();
    }
  } else if (m_drag == Drag::Select) {
    m_dragLastX = std::clamp(x, m_axis.x0, m_axis.x0 + m_axis.width);
    m_drag = Drag::None;
    if (std::abs(m_dragLastX - m_dragStartX) >= kMinBandPixels)
      setSelection(m_axis.toTime(m_dragStartX), m_axis.toTime(m_dragLastX));
    else
      clearSelection();  // a click
    update();
  } else if (m_drag == Drag::Pan) {
    m_axis.pan(x - m_dragLastX);
    m_drag = Drag::None;
    viewMoved();
  } else {
    QWidget::mouseReleaseEvent(e);
  }
}

void TimelineCanvas::mouseDoubleClickEvent(QMouseEvent* e) {
  m_drag = Drag::None;
  if (e->button() == Qt::LeftButton) fitAll();
}

// ---------------------------------------------------------------- painting

void TimelineCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  if (std::all_of(m_runs.begin(), m_runs.end(), [](const auto& spans) { return spans.empty(); })) {
    m_lastPaintItems = 0;
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("No spans to show"));
    return;
  }
  paintLanes(p);
  paintRuler(p);  // grid lines under the spans; the spans are clipped below the ruler
  ensureItems();
  p.save();
  p.setClipRect(QRectF(m_axis.x0, rulerHeight(), m_axis.width + kRightMargin, height() - rulerHeight()));
  paintSelection(p);
  m_lastPaintLabels = paintItems(p);
  m_lastPaintFlows = m_showFlows ? paintFlows(p) : 0;
  if (m_drag == Drag::Band || m_drag == Drag::Select) {
    const QRectF band(std::min(m_dragStartX, m_dragLastX), rulerHeight(), std::abs(m_dragLastX - m_dragStartX),
                      height() - rulerHeight());
    QColor fill = palette().color(QPalette::Highlight);
    fill.setAlpha(60);
    p.fillRect(band, fill);
    p.setPen(palette().color(QPalette::Highlight));
    p.drawRect(band);
  }
  p.restore();

  int drawn = 0;  // paintItems skips items outside the vertical viewport: count what is drawn
  const double top = laneTop(), bottom = height();
  for (const auto& items : m_items)
    for (const tg::DrawItem& it : items)
      if (top + it.y + it.height >= rulerHeight() && top + it.y <= bottom) ++drawn;
  m_lastPaintItems = drawn;
}

void TimelineCanvas::paintLanes(QPainter& p) const {
  const double top = laneTop();
  const QColor alt = palette().color(QPalette::AlternateBase), text = palette().color(QPalette::Text);
  QFont bold = font();
  bold.setBold(true);
  p.save();
  p.setClipRect(QRectF(0, rulerHeight(), width(), height() - rulerHeight()));
  for (const tg::StackedTrack& track : m_stack.tracks) {
    if (track.headerHeight > 0) {  // stacked: the run's title row
      const QRectF r(0, top + track.top, width(), track.headerHeight);
      p.fillRect(r, palette().color(QPalette::Button));
      p.setFont(bold);
      p.setPen(palette().color(QPalette::ButtonText));
      p.drawText(r.adjusted(kLabelPadding, 0, -kLabelPadding, 0), Qt::AlignLeft | Qt::AlignVCenter,
                 QString::fromStdString(track.title));
    }
    for (size_t i = 0; i < track.lanes.lanes.size(); ++i) {
      const tg::Lane& lane = track.lanes.lanes[i];
      const QRectF r(0, top + lane.top, width(), lane.height);
      if (i % 2 == 1) p.fillRect(r, alt);
      p.setFont(bold);
      p.setPen(text);
      p.drawText(QRectF(kLabelPadding, r.top(), m_rankColumn - kLabelPadding, kSubLaneHeight),
                 Qt::AlignLeft | Qt::AlignVCenter, QString::fromStdString(lane.label));
    }
    p.setFont(font());
    p.setPen(palette().color(QPalette::PlaceholderText));
    for (const tg::SubLane& s : track.lanes.subLanes)
      p.drawText(QRectF(m_rankColumn, top + s.top, m_labelWidth - m_rankColumn - kLabelPadding, s.height),
                 Qt::AlignLeft | Qt::AlignVCenter, QString::fromStdString(s.stream));
  }
  p.setPen(palette().color(QPalette::Mid));
  p.drawLine(QPointF(m_axis.x0 - 1, rulerHeight()), QPointF(m_axis.x0 - 1, height()));
  p.restore();
}

int TimelineCanvas::paintItems(QPainter& p) const {
  // One drawRects call per (colour, shade, dimmed); outlines only where a span is wide enough to
  // need one. Aggregates are shaded by how busy they are (summed duration / time they cover), in
  // kShades steps, so a half-idle stretch reads lighter than a solid one when zoomed out. While
  // searching, items holding no match are dimmed (kDimAlpha).
  constexpr int kShades = 4;
  struct Batch {
    const std::string* category;
    int shade;  // 1..kShades
    bool dim;
    std::vector<QRectF> rects;
  };
  const bool searching = !m_searchText.isEmpty();
  std::vector<Batch> batches;
  std::vector<QRectF> outlines;
  const double top = laneTop(), bottom = height(), rulerBottom = rulerHeight();
  for (const auto& track : m_items)
    for (const tg::DrawItem& it : track) {
      const double y = top + it.y + 1;
      if (y + it.height < rulerBottom || y > bottom) continue;
      const QRectF r(it.x, y, std::max(it.width, 1.0), it.height - 2);
      int shade = kShades;
      if (it.count > 1 && it.end > it.start)
        shade = std::clamp(int(std::ceil(it.busy / (it.end - it.start) * kShades)), 1, kShades);
      const bool dim = searching && it.marked == 0;
      auto b = std::find_if(batches.begin(), batches.end(), [&](const Batch& x) {
        return x.shade == shade && x.dim == dim && *x.category == it.category;
      });
      if (b == batches.end()) b = batches.insert(batches.end(), Batch{&it.category, shade, dim, {}});
      b->rects.push_back(r);
      if (it.width >= 4 && !dim) outlines.push_back(r);
    }
  p.setPen(Qt::NoPen);
  for (const Batch& b : batches) {
    QColor c = tg::categoryColor(*b.category);
    c.setAlphaF(float(b.shade) / kShades * float(b.dim ? kDimAlpha : 1.0));
    p.setBrush(c);
    p.drawRects(b.rects.data(), int(b.rects.size()));
  }
  p.setBrush(Qt::NoBrush);
  p.setPen(QColor(0, 0, 0, 90));
  p.drawRects(outlines.data(), int(outlines.size()));

  // names where they fit (spanLabels: never over another label or past the span)
  const QFontMetricsF fm(font());
  QColor dimText = palette().color(QPalette::Text);
  dimText.setAlpha(110);
  int labels = 0;
  for (size_t k = 0; k < m_items.size(); ++k) {
    const std::vector<tg::DrawItem>& items = m_items[k];
    for (const tg::SpanLabel& l : tg::spanLabels(items, m_axis, fm, 3, kLabelMinRoom)) {
      const tg::DrawItem& it = items[size_t(l.item)];
      const double y = top + l.rect.y();
      if (y + l.rect.height() < rulerBottom || y > bottom) continue;
      p.setPen(searching && it.marked == 0 ? dimText : QColor(Qt::white));
      p.drawText(QRectF(l.rect.x(), y, l.rect.width() + 1, l.rect.height()), Qt::AlignLeft | Qt::AlignVCenter, l.text);
      ++labels;
    }
  }

  // the match last jumped to: outlined
  int track = 0;
  if (const SpanRow* s = matchSpan(m_currentMatch, &track)) {
    const double laneY = laneLayout(track).subLaneTop(s->rank, s->stream);
    if (laneY >= 0) {
      const double xa = m_axis.toX(s->start), xb = m_axis.toX(s->start + s->duration);
      p.setBrush(Qt::NoBrush);
      p.setPen(QPen(palette().color(QPalette::Highlight), 2));
      p.drawRect(QRectF(xa - 1, top + laneY, std::max(xb - xa, 1.0) + 2, kSubLaneHeight));
    }
  }
  return labels;
}

int TimelineCanvas::paintFlows(QPainter& p) const {
  ensureFlows();
  const double top = laneTop();
  const QColor colour(30, 30, 30, 200);
  p.save();
  p.setRenderHint(QPainter::Antialiasing, true);
  p.setPen(QPen(colour, 1.2));
  p.setBrush(colour);
  int drawn = 0;
  const int budgetPerTrack = std::max(1, kMaxFlowArrows / std::max(1, int(m_runs.size())));
  for (size_t k = 0; k < m_runs.size(); ++k) {
    const tg::VisibleFlows flows = tg::visibleFlows(m_runs[k], m_flows[k], m_stack.tracks[k].lanes, m_axis, budgetPerTrack);
    for (const tg::FlowArrow& a : flows.arrows) {
      const QPointF from(a.x1, top + a.y1), to(a.x2, top + a.y2);
      p.drawLine(from, to);
      const QLineF line(to, from);
      if (line.length() < 1) continue;
      // the head: a filled triangle 7 px long, 30 degrees either side of the line
      constexpr double kHead = 7;
      const QLineF back = line.unitVector();
      const QPointF d = (back.p2() - back.p1()) * kHead;
      const QPointF n(-d.y() * 0.5, d.x() * 0.5);
      const QPointF head[3] = {to, to + d + n, to + d - n};
      p.drawPolygon(head, 3);
      ++drawn;
    }
  }
  p.restore();
  return drawn;
}

void TimelineCanvas::paintSelection(QPainter& p) const {
  if (!m_hasSelection) return;
  const double xa = m_axis.toX(m_selT0), xb = m_axis.toX(m_selT1);
  const QRectF band(xa, rulerHeight(), std::max(xb - xa, 1.0), height() - rulerHeight());
  QColor fill = palette().color(QPalette::Highlight);
  fill.setAlpha(35);
  p.fillRect(band, fill);
  p.setPen(QPen(palette().color(QPalette::Highlight), 1, Qt::DashLine));
  p.drawLine(QPointF(xa, rulerHeight()), QPointF(xa, height()));
  p.drawLine(QPointF(xb, rulerHeight()), QPointF(xb, height()));
}

void TimelineCanvas::paintRuler(QPainter& p) const {
  const double h = rulerHeight();
  p.fillRect(QRectF(0, 0, width(), h), palette().color(QPalette::Window));
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(QRectF(kLabelPadding, 0, m_labelWidth - 2 * kLabelPadding, h), Qt::AlignLeft | Qt::AlignVCenter,
             m_stacked ? tr("ms from step start") : tr("time (ms)"));
  const tg::RulerLayout ruler = tg::rulerLayout(m_axis, QFontMetricsF(font()), h - 2, kTickMinPixels);
  QColor grid = palette().color(QPalette::Mid);
  grid.setAlpha(70);
  for (double t : ruler.ticks.times) {
    const double x = m_axis.toX(t);
    p.setPen(palette().color(QPalette::WindowText));
    p.drawLine(QPointF(x, h - 5), QPointF(x, h));
    p.setPen(grid);
    p.drawLine(QPointF(x, h), QPointF(x, height()));
  }
  p.setPen(palette().color(QPalette::WindowText));
  for (const tg::RulerLabel& l : ruler.labels)
    p.drawText(l.rect.adjusted(0, 0, 1, 0), Qt::AlignLeft | Qt::AlignVCenter, l.text);
  if (m_hasSelection) {  // the selected range on the ruler
    const double xa = std::max(m_axis.toX(m_selT0), m_axis.x0), xb = std::min(m_axis.toX(m_selT1), m_axis.x0 + m_axis.width);
    if (xb >= xa) {
      QColor fill = palette().color(QPalette::Highlight);
      fill.setAlpha(120);
      p.fillRect(QRectF(xa, h - 4, std::max(xb - xa, 1.0), 4), fill);
    }
  }
  p.setPen(palette().color(QPalette::Mid));
  p.drawLine(QPointF(0, h - 0.5), QPointF(width(), h - 0.5));
}
