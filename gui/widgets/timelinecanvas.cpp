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

#include "models/timelinetext.h"

using moebench::SpanRow;
namespace tg = moebench::gui;

namespace {
constexpr double kLabelPadding = 8;   // px around label text
constexpr double kRightMargin = 4;    // px right of the time axis
constexpr double kHitTolerance = 2;   // px, as hitTest
constexpr double kTextMinWidth = 40;  // px: spans at least this wide show their name
constexpr double kTickMinPixels = 90; // px between ruler labels
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
  updateGeometry();
  update();
  emit viewChanged();
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
    m_items[k] = tg::visibleItems(m_runs[k], m_stack.tracks[k].lanes, m_axis, 1.0);
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
    default: QWidget::keyPressEvent(e); return;
  }
  viewMoved();
}

void TimelineCanvas::mousePressEvent(QMouseEvent* e) {
  setFocus(Qt::MouseFocusReason);
  const double x = e->position().x();
  if (e->button() == Qt::LeftButton) {
    m_drag = Drag::Band;
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
  if (m_drag == Drag::Band) {
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
  paintItems(p);
  if (m_drag == Drag::Band) {
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

void TimelineCanvas::paintItems(QPainter& p) const {
  // One drawRects call per (colour, shade); outlines only where a span is wide enough to need
  // one. Aggregates are shaded by how busy they are (summed duration / time they cover), in
  // kShades steps, so a half-idle stretch reads lighter than a solid one when zoomed out.
  constexpr int kShades = 4;
  struct Batch {
    const std::string* category;
    int shade;  // 1..kShades
    std::vector<QRectF> rects;
  };
  std::vector<Batch> batches;
  std::vector<QRectF> outlines;
  const double top = laneTop(), bottom = height(), rulerBottom = rulerHeight();
  std::vector<const tg::DrawItem*> items;
  for (const auto& track : m_items)
    for (const tg::DrawItem& it : track) items.push_back(&it);
  for (const tg::DrawItem* item : items) {
    const tg::DrawItem& it = *item;
    const double y = top + it.y + 1;
    if (y + it.height < rulerBottom || y > bottom) continue;
    const QRectF r(it.x, y, std::max(it.width, 1.0), it.height - 2);
    int shade = kShades;
    if (it.count > 1 && it.end > it.start)
      shade = std::clamp(int(std::ceil(it.busy / (it.end - it.start) * kShades)), 1, kShades);
    auto b = std::find_if(batches.begin(), batches.end(),
                          [&](const Batch& x) { return x.shade == shade && *x.category == it.category; });
    if (b == batches.end()) b = batches.insert(batches.end(), Batch{&it.category, shade, {}});
    b->rects.push_back(r);
    if (it.width >= 4) outlines.push_back(r);
  }
  p.setPen(Qt::NoPen);
  for (const Batch& b : batches) {
    QColor c = tg::categoryColor(*b.category);
    c.setAlphaF(float(b.shade) / kShades);
    p.setBrush(c);
    p.drawRects(b.rects.data(), int(b.rects.size()));
  }
  p.setBrush(Qt::NoBrush);
  p.setPen(QColor(0, 0, 0, 90));
  p.drawRects(outlines.data(), int(outlines.size()));
  p.setPen(Qt::white);
  const QFontMetricsF fm(font());
  for (const tg::DrawItem* item : items) {
    const tg::DrawItem& it = *item;
    if (it.count != 1 || !it.span || it.width < kTextMinWidth) continue;
    const double y = top + it.y;
    if (y + it.height < rulerBottom || y > bottom) continue;
    const QRectF r(it.x + 3, y, it.width - 6, it.height);
    p.drawText(r, Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(QString::fromStdString(it.span->name), Qt::ElideRight, r.width()));
  }
}

void TimelineCanvas::paintRuler(QPainter& p) const {
  const double h = rulerHeight();
  p.fillRect(QRectF(0, 0, width(), h), palette().color(QPalette::Window));
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(QRectF(kLabelPadding, 0, m_labelWidth - 2 * kLabelPadding, h), Qt::AlignLeft | Qt::AlignVCenter,
             m_stacked ? tr("ms from step start") : tr("time (ms)"));
  const tg::RulerTicks ticks = tg::rulerTicks(m_axis, kTickMinPixels);
  QColor grid = palette().color(QPalette::Mid);
  grid.setAlpha(70);
  for (double t : ticks.times) {
    const double x = m_axis.toX(t);
    p.setPen(palette().color(QPalette::WindowText));
    p.drawLine(QPointF(x, h - 5), QPointF(x, h));
    p.drawText(QRectF(x + 3, 0, kTickMinPixels - 6, h - 2), Qt::AlignLeft | Qt::AlignVCenter,
               tg::tickLabel(t, ticks.decimals));
    p.setPen(grid);
    p.drawLine(QPointF(x, h), QPointF(x, height()));
  }
  p.setPen(palette().color(QPalette::Mid));
  p.drawLine(QPointF(0, h - 0.5), QPointF(width(), h - 0.5));
}
