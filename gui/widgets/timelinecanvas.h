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
//                               (in range-select mode: selects it, as Shift+left-drag)
//   Shift+left-drag             selects a time range (selectionChanged); Shift+click or Esc clears it
//   middle- or right-drag       pan
//   hover                       tooltip (tooltipAt)
//
// Beside the spans (models/timelineflows.h, timelinesearch.h, timelinelabels.h):
//   flows      arrows from each point-to-point send to its receive (flowLinks, computed once per
//              span set when first shown), only those crossing the view, at most kMaxFlowArrows
//   search     setSearchText: matching spans (name contains the text, any case) drawn as usual,
//              every other span dimmed; nextMatch / previousMatch step through the matches of all
//              tracks by start time, bring the match into view (focusRange) and outline it
//   selection  a selected time range, shaded over the lanes and outlined
//   labels     span names only where they fit (spanLabels: elided, never over another label);
//              ruler labels spaced so they never overlap (rulerLayout)
#include <QPointF>
#include <QString>
#include <QWidget>

#include <string>
#include <vector>

#include "models/timelineflows.h"
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
  static constexpr int kMaxFlowArrows = 400;       // flow arrows drawn at most (zoomed out)
  static constexpr double kDimAlpha = 0.22;        // opacity of spans that do not match a search

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
  int lastPaintFlowCount() const { return m_lastPaintFlows; }  // flow arrows drawn by the last paint
  int lastPaintLabelCount() const { return m_lastPaintLabels; }  // span labels drawn by the last paint

  // Flow arrows (send -> receive), shown by default.
  void setShowFlows(bool show);
  bool showFlows() const { return m_showFlows; }
  // Track k's send -> receive links (flowLinks over spans(k)).
  const std::vector<moebench::gui::FlowLink>& flowLinks(int track = 0) const;

  // Search: highlights the spans whose name contains text (any case) and dims the others; an
  // empty text shows every span as usual. Kept when new spans are set (re-matched).
  void setSearchText(const QString& text);
  QString searchText() const { return m_searchText; }
  int matchCount() const { return int(m_matches.size()); }
  // The match last jumped to (0-based, in start order over all tracks), -1 before the first jump.
  int currentMatch() const { return m_currentMatch; }
  // The span of match i (nullptr when out of range) and its track.
  const moebench::SpanRow* matchSpan(int i, int* track = nullptr) const;
  // Jump to the next / previous match (wrapping), showing it (focusRange, and scrolling its lane
  // into view); false when there are none.
  bool nextMatch();
  bool previousMatch();
  bool goToMatch(int i);

  // Time range selection (seconds, t0 <= t1).
  bool hasSelection() const { return m_hasSelection; }
  double selectionStart() const { return m_selT0; }
  double selectionEnd() const { return m_selT1; }
  void setSelection(double t0, double t1);
  void clearSelection();
  // Range-select mode: a plain left-drag selects instead of zooming.
  void setRangeSelectMode(bool on) { m_rangeSelectMode = on; }
  bool rangeSelectMode() const { return m_rangeSelectMode; }
  double labelWidth() const { return m_labelWidth; }
  double rulerHeight() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void viewChanged();       // spans, visible range or size changed
  void searchChanged();     // the matches or the current match changed
  void selectionChanged();  // a range was selected or the selection cleared

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
  enum class Drag { None, Band, Pan, Select };

  void layoutAxis();             // axis x0/width and the scroll bar from the widget size
  void viewMoved();              // after zoom/pan: clamp, invalidate items, repaint
  void ensureItems() const;
  void setRuns(std::vector<std::vector<moebench::SpanRow>> runs, const std::vector<std::string>& titles, bool stacked);
  double laneTop() const;        // widget y of layout y = 0
  // The item at pos and its track (nullptr when none).
  const moebench::gui::DrawItem* itemAt(QPointF pos, int* track = nullptr) const;
  void paintRuler(QPainter& p) const;
  void paintLanes(QPainter& p) const;
  int paintItems(QPainter& p) const;  // returns the labels drawn
  int paintFlows(QPainter& p) const;  // returns the arrows drawn
  void paintSelection(QPainter& p) const;
  void ensureFlows() const;
  void rematch();  // the search's matches over the current spans

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

  bool m_showFlows = true;
  mutable std::vector<std::vector<moebench::gui::FlowLink>> m_flows;  // per track
  mutable bool m_flowsDirty = true;
  int m_lastPaintFlows = 0;
  int m_lastPaintLabels = 0;

  QString m_searchText;
  std::vector<std::vector<char>> m_marks;      // per track: 1 for a matching span (empty: no search)
  std::vector<std::pair<int, int>> m_matches;  // (track, span index), by start time
  int m_currentMatch = -1;

  bool m_hasSelection = false;
  double m_selT0 = 0, m_selT1 = 0;
  bool m_rangeSelectMode = false;
};
