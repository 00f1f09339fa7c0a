#pragma once
// Timeline geometry (KDAB Hotspot's split: the maths lives in plain structs, the widget only
// paints what these return and forwards mouse events). No widgets here; everything is tested
// headless in tests/tst_timeline_geometry.cpp.
//
//  TimeAxis     maps span time (seconds) to pixels and back; zoom / pan / clamp / fit.
//  LaneLayout   one lane per rank, one sub-lane per stream present on that rank.
//  visibleItems what to draw: spans in the visible range; when zoomed out, sub-pixel spans on a
//               sub-lane are merged into aggregate items so the item count stays bounded by
//               about (pixels x sub-lanes) whatever the number of spans.
//  hitTest      the span under the mouse, for tooltips.
//  (beside it: timelineflows.h send -> receive arrows, timelinesearch.h span search,
//   timelinelabels.h labels that do not overlap, timelinerangesummary.h a range's summary)
//  StackedLayout several runs on one time axis: each run's lanes below the previous run's,
//               under a header row naming the run; stepStartOrigin / shiftSpans align each
//               run's first shown step at t = 0.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <QColor>

#include "moebench/store/run_store.h"

namespace moebench::gui {

// Visible time range [t0, t1] (seconds) drawn over the pixels [x0, x0 + width].
struct TimeAxis {
  double t0 = 0, t1 = 1;
  double x0 = 0, width = 1;

  static constexpr double kMinSpan = 1e-6;  // smallest visible time span: 1 microsecond

  double span() const { return t1 - t0; }
  double toX(double t) const;
  double toTime(double x) const;
  // Zooms so that the time under pixel x stays under x; factor > 1 zooms in, < 1 zooms out.
  // Never zooms in below kMinSpan.
  void zoomAround(double x, double factor);
  // Moves the view by dx pixels as a drag does: dx > 0 moves the content right (earlier
  // times come into view).
  void pan(double dx_pixels);
  // Keeps the view inside [tmin, tmax]: shifts it back inside, keeping the visible span when it
  // fits, otherwise shows the whole range. The visible span is at least kMinSpan.
  void clampTo(double tmin, double tmax);
  // Shows exactly [tmin, tmax] (at least kMinSpan wide).
  void fitTo(double tmin, double tmax);
  // Rubber band: shows the times between pixels xa and xb (either order; at least kMinSpan).
  void zoomToRange(double xa, double xb);
};

// Stream order inside a rank: host, compute, compute.comm, comm, then others by name.
int streamOrder(const std::string& stream);
// Sorts by (rank, stream order, stream, start, duration): the order visibleItems and the
// layout expect (visibleItems needs each sub-lane's spans in start order).
void sortForTimeline(std::vector<SpanRow>& spans);

struct SubLane {
  int rank = 0;
  std::string stream;
  double top = 0, height = 0;
};

struct Lane {
  int rank = 0;
  std::string label;  // "rank 3"
  double top = 0, height = 0;
  int firstSubLane = 0, subLaneCount = 0;  // indices into LaneLayout::subLanes
};

struct LaneLayout {
  std::vector<Lane> lanes;        // by rank, ascending
  std::vector<SubLane> subLanes;  // top to bottom
  double subLaneHeight = 0, rankGap = 0;
  double top = 0;                 // y of the first lane (the tops above are absolute: >= top)
  double totalHeight = 0;         // from top to the last sub-lane's bottom

  // Lanes from y = top downwards.
  static LaneLayout build(const std::vector<SpanRow>& spans, double subLaneHeight, double rankGap, double top = 0);
  double bottom() const { return top + totalHeight; }

  int laneCount() const { return int(lanes.size()); }
  int subLaneCount() const { return int(subLanes.size()); }
  // Sub-lane index at y, or -1 (above, below, or in a gap between ranks).
  int subLaneAt(double y) const;
  // Sub-lane index of (rank, stream), or -1.
  int subLaneIndex(int rank, const std::string& stream) const;
  // Top y of the sub-lane of (rank, stream), or -1 when there is none.
  double subLaneTop(int rank, const std::string& stream) const;
  // "rank 0" for lanes; the stream name for sub-lanes.
  std::string laneLabel(int lane) const { return lanes.at(size_t(lane)).label; }
  std::string subLaneLabel(int subLane) const { return subLanes.at(size_t(subLane)).stream; }
  std::vector<std::string> labels() const;  // "rank 0 / compute" per sub-lane, top to bottom

 private:
  std::map<std::pair<int, std::string>, int> index_;
};

// A stacked timeline: several runs on one time axis (e.g. a measured run and its prediction,
// or two strategies). Track k's header row (headerHeight, naming the run) starts trackGap below
// track k-1's last lane, its lanes (LaneLayout, absolute y) right below the header. Each track
// is laid out from its own spans, so its sub-lane indices are its own; visibleItems and hitTest
// take one track's spans and lanes. The time axis is shared: a span of a given duration has the
// same width in every track.
struct StackedTrack {
  std::string title;  // "#7 ec (predicted) · predicted · step 2"
  double top = 0;     // top of the header row
  double headerHeight = 0;
  LaneLayout lanes;
  double bottom() const { return lanes.bottom(); }
};

struct StackedLayout {
  std::vector<StackedTrack> tracks;
  double totalHeight = 0;  // bottom of the last track

  // runs[k]: track k's spans (sortForTimeline order), titles[k] its header text.
  static StackedLayout build(const std::vector<const std::vector<SpanRow>*>& runs,
                             const std::vector<std::string>& titles, double subLaneHeight, double rankGap,
                             double headerHeight, double trackGap);
  int trackCount() const { return int(tracks.size()); }
  // The track whose header or lanes hold y, or -1 (above, below, or in a gap between tracks).
  int trackAt(double y) const;
};

// The time a run's shown steps are aligned at: the earliest start of a host "step" span (the
// trainer's and the simulator's whole-step span), else the earliest start of any span; 0 when
// there are none. Measured spans count from each rank's executor epoch and predicted ones from
// 0, so runs are compared after subtracting this (shiftSpans(spans, -origin)).
double stepStartOrigin(const std::vector<SpanRow>& spans);
void shiftSpans(std::vector<SpanRow>& spans, double dt);  // start += dt for every span

// One rectangle to paint. count == 1: one span (span points at it). count > 1: an aggregate of
// `count` spans merged because they were narrower than the minimum pixel width.
struct DrawItem {
  int subLane = 0;
  double x = 0, width = 0;   // pixels, clipped to the axis (width may be < 1: paint at least 1 px)
  double y = 0, height = 0;  // the sub-lane's rectangle
  double start = 0, end = 0; // time covered (seconds, unclipped)
  std::string category;      // the span's category; for aggregates the one holding more than
                             // half of the duration, else "mixed"
  int count = 1;
  double busy = 0;           // summed duration of the spans
  int64_t bytes = 0;         // summed bytes
  const SpanRow* span = nullptr;  // the span when count == 1
  int marked = 0;            // how many of its spans are marked (visibleItems' marks: search matches)
};

// Items intersecting the visible range, O(n) over spans. Each sub-lane's spans must be in start
// order (sortForTimeline) for the merging to bound the item count: per sub-lane at most
// ceil(width / minPixelWidth) items (one aggregate per pixel column; an aggregate may reach
// less than a pixel into the next column). Spans whose (rank, stream) is not in the layout are
// skipped. Wide spans (>= minPixelWidth) are never merged with each other.
// marks (optional, one flag per span, e.g. matchFlags of a search): each item counts its marked
// spans in DrawItem::marked.
std::vector<DrawItem> visibleItems(const std::vector<SpanRow>& spans, const LaneLayout& layout,
                                   const TimeAxis& axis, double minPixelWidth = 1.0,
                                   const std::vector<char>* marks = nullptr);

// The span under (x, y) with a 2 px horizontal tolerance (the nearest; inside beats near,
// the shortest wins among nested spans), or nullptr.
const SpanRow* hitTest(const std::vector<SpanRow>& spans, const LaneLayout& layout, const TimeAxis& axis,
                       double x, double y);

// Fill colour per category: compute, comm, copy, io, mixed; grey for anything else.
QColor categoryColor(const std::string& category);

}  // namespace moebench::gui
