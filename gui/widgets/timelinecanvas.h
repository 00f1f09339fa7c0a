#pragma once
// TimelineCanvas: paints spans as a per-rank timeline and handles zoom, pan and hover.
// The maths lives in models/timelinegeometry.h; this widget caches the sorted spans, the lane
// layout and the items to draw (visibleItems, aggregated when zoomed out), recomputing the
// items only on resize, zoom, pan or new spans — a paint only walks the cached items.
//
// Stacked (setTracks): several runs one below the other on one time axis, each under a header
// row with its title (kHeaderHeight px, kTrackGap px between runs), each run's spans shifted so
// that its first step starts at t = 0 (stepStartOrigin); the ruler then reads "ms from step start".
//
// Geometry on screen (pixels):
//   left   labelWidth(): "rank N" column, then the stream names of its sub-lanes
//   top    rulerHeight(): time ruler, in milliseconds of the spans' own clock (SpanRow::start:
//          seconds since the rank's executor epoch)
//   lanes  one lane per rank, one sub-lane (kSubLaneHeight px) per stream on that rank,
//          kRankGap px between ranks; a vertical scroll bar appears when they do not fit
//   spans  filled with categoryColor; merged spans (zoomed out) are paler the less busy they
//          are (opacity = busy fraction of the time they cover, rounded up to quarters)
//
// Input:
//   wheel                       zoom around the cursor (one notch, 120 units: x kWheelZoomPerNotch)
//   Ctrl/Shift+wheel, h-wheel   pan (one notch: kPanFraction of the width)
//   + / = and -                 zoom x2 / x0.5 around the centre
//   Left / Right                pan by kPanFraction of the width
//   Up / Down, PgUp / PgDown    scroll the lanes vertically
//   Home, 0, double-click       fit all spans
//   left-drag                   rubber band: shows exactly the dragged time range
//   middle- or right-drag       pan
//   hover                       tooltip (tooltipAt)
#include <QPointF>
#include <QString>
#include <QWidget>

#include <string>
#include <vector>

#include "models/timelinegeometry.h"
#include "moebench/store/run_store.h"

class QScrollBar;

class TimelineCanvas : public QWidget {
  Q_OBJECT

 public:
  static constexpr double kSubLaneHeight = 18;     // px per stream
  static constexpr double kRankGap = 6;            // px between ranks
  static constexpr double kWheelZoomPerNotch = 1.25;
  static constexpr double kKeyZoom = 2.0;          // + / - keys
  static constexpr double kPanFraction = 0.1;      // arrow keys, pan wheel
  static constexpr int kMinBandPixels = 3;         // shorter left-drags are clicks
  static constexpr double kHeaderHeight = 20;      // px: a stacked run's title row
  static constexpr double kTrackGap = 10;          // px between stacked runs

  // One run of a stacked timeline.
  struct Track {
    QString title;  // header row: "#7 ec (predicted) · predicted · step 2"
    std::vector<moebench::SpanRow> spans;
  };

  explicit TimelineCanvas(QWidget* parent = nullptr);

  // Replaces the spans (sorted here with sortForTimeline) by one run's, on their own clock, and
  // fits the view to all of them.
  void setSpans(std::vector<moebench::SpanRow> spans);
  // Stacks the runs (the first on top), each shifted so that its first step starts at t = 0, and
  // fits the view to all of them.
  void setTracks(std::vector<Track> tracks);
  void clear() { setSpans({}); }
  int trackCount() const { return int(m_runs.size()); }
  bool isStacked() const { return m_stacked; }
  QString trackTitle(int track) const;
  // Track 0's (the main run's) spans and lanes by default.
  const std::vector<moebench::SpanRow>& spans(int track = 0) const;
  const moebench::gui::LaneLayout& laneLayout(int track = 0) const;
  const moebench::gui::StackedLayout& stackedLayout() const { return m_stack; }
  const moebench::gui::TimeAxis& axis() const { return m_axis; }
  // Time range of all spans (seconds); 0..0 when there are none.
  double dataStart() const { return m_tmin; }
  double dataEnd() const { return m_tmax; }

  // Shows [t0, t1] (kept inside the data range); fitAll shows everything.
  void setVisibleRange(double t0, double t1);
  void fitAll();

  // Tooltip text for a widget position: the span there (name, category, rank, stream, start,
  // duration, bytes, peer, layer/expert when set), or for an aggregate "N spans, busy X ms,
  // bytes B"; empty when nothing is there.
  QString tooltipAt(QPointF pos) const;
  // Widget position of time t in the middle of (rank, stream)'s sub-lane; (-1, -1) when that
  // sub-lane does not exist. For tests and for placing markers.
  QPointF pointAt(double t, int rank, const std::string& stream, int track = 0) const;

  int lastPaintItemCount() const { return m_lastPaintItems; }  // items drawn by the last paint
  double labelWidth() const { return m_labelWidth; }
  double rulerHeight() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void viewChanged();  // spans, visible range or size changed

 protected:
  bool event(QEvent* e) override;
  void paintEvent(QPaintEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;

 private:
  enum class Drag { None, Band, Pan };

  void layoutAxis();             // axis x0/width and the scroll bar from the widget size
  void viewMoved();              // after zoom/pan: clamp, invalidate items, repaint
  void ensureItems() const;
  void setRuns(std::vector<std::vector<moebench::SpanRow>> runs, const std::vector<std::string>& titles, bool stacked);
  double laneTop() const;        // widget y of layout y = 0
  // The item at pos and its track (nullptr when none).
  const moebench::gui::DrawItem* itemAt(QPointF pos, int* track = nullptr) const;
  void paintRuler(QPainter& p) const;
  void paintLanes(QPainter& p) const;
  void paintItems(QPainter& p) const;

  std::vector<std::vector<moebench::SpanRow>> m_runs;  // per track, sortForTimeline order
  moebench::gui::StackedLayout m_stack;                 // one track per run
  bool m_stacked = false;
  moebench::gui::TimeAxis m_axis;
  double m_tmin = 0, m_tmax = 0;
  double m_labelWidth = 120, m_rankColumn = 60;
  QScrollBar* m_vscroll = nullptr;

  mutable std::vector<std::vector<moebench::gui::DrawItem>> m_items;  // per track
  mutable bool m_itemsDirty = true;
  int m_lastPaintItems = 0;

  Drag m_drag = Drag::None;
  double m_dragStartX = 0, m_dragLastX = 0;
};
