#include "models/timelinegeometry.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace moebench::gui {

// ---------------------------------------------------------------- TimeAxis

double TimeAxis::toX(double t) const {
  const double s = span();
  if (s <= 0) return x0;
  return x0 + (t - t0) / s * width;
}

double TimeAxis::toTime(double x) const {
  if (width <= 0) return t0;
  return t0 + (x - x0) / width * span();
}

void TimeAxis::zoomAround(double x, double factor) {
  if (!(factor > 0) || !std::isfinite(factor) || width <= 0) return;
  const double anchor = toTime(x);
  const double frac = (x - x0) / width;
  const double s = std::max(span() / factor, kMinSpan);
  t0 = anchor - frac * s;
  t1 = t0 + s;
}

void TimeAxis::pan(double dx_pixels) {
  if (width <= 0) return;
  const double dt = dx_pixels / width * span();
  t0 -= dt;
  t1 -= dt;
}

void TimeAxis::clampTo(double tmin, double tmax) {
  if (tmax < tmin) std::swap(tmin, tmax);
  double s = span();
  if (s < kMinSpan) {  // widen around the centre first
    const double c = 0.5 * (t0 + t1);
    s = kMinSpan;
    t0 = c - 0.5 * s;
  }
  const double range = tmax - tmin;
  if (range <= s) {  // the whole range fits: show all of it (at least kMinSpan from tmin)
    t0 = tmin;
    t1 = tmin + std::max(range, kMinSpan);
    return;
  }
  t0 = std::clamp(t0, tmin, tmax - s);
  t1 = t0 + s;
}

void TimeAxis::fitTo(double tmin, double tmax) {
  if (tmax < tmin) std::swap(tmin, tmax);
  t0 = tmin;
  t1 = tmin + std::max(tmax - tmin, kMinSpan);
}

void TimeAxis::zoomToRange(double xa, double xb) {
  double a = toTime(std::min(xa, xb));
  double b = toTime(std::max(xa, xb));
  if (b - a < kMinSpan) {
    const double c = 0.5 * (a + b);
    a = c - 0.5 * kMinSpan;
    b = a + kMinSpan;
  }
  t0 = a;
  t1 = b;
}

// ---------------------------------------------------------------- ordering

int streamOrder(const std::string& stream) {
  if (stream == "host") return 0;
  if (stream == "compute") return 1;
  if (stream == "compute.comm") return 2;
  if (stream == "comm") return 3;
  if (stream == "comm.intra") return 4;  // the task-graph runtime's roles
  if (stream == "comm.inter") return 5;
  if (stream == "copy") return 6;
  if (stream == "io") return 7;
  return 8;
}

namespace {
bool streamLess(const std::string& a, const std::string& b) {
  const int oa = streamOrder(a), ob = streamOrder(b);
  if (oa != ob) return oa < ob;
  return a < b;
}
}  // namespace

void sortForTimeline(std::vector<SpanRow>& spans) {
  std::sort(spans.begin(), spans.end(), [](const SpanRow& a, const SpanRow& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.stream != b.stream) return streamLess(a.stream, b.stream);
    if (a.start != b.start) return a.start < b.start;
    return a.duration < b.duration;
  });
}

// ---------------------------------------------------------------- LaneLayout

LaneLayout LaneLayout::build(const std::vector<SpanRow>& spans, double subLaneHeight, double rankGap, double top) {
  std::map<int, std::set<std::string, decltype(&streamLess)>> streams;
  {
    int lastRank = 0;
    const std::string* lastStream = nullptr;
    for (const SpanRow& s : spans) {  // skip runs of the same (rank, stream) cheaply
      if (lastStream && s.rank == lastRank && s.stream == *lastStream) continue;
      auto it = streams.try_emplace(s.rank, &streamLess).first;
      it->second.insert(s.stream);
      lastRank = s.rank;
      lastStream = &s.stream;
    }
  }
  LaneLayout l;
  l.subLaneHeight = subLaneHeight;
  l.rankGap = rankGap;
  l.top = top;
  double y = top;
  bool first = true;
  for (const auto& [rank, names] : streams) {
    if (!first) y += rankGap;
    first = false;
    Lane lane;
    lane.rank = rank;
    lane.label = "rank " + std::to_string(rank);
    lane.top = y;
    lane.firstSubLane = int(l.subLanes.size());
    for (const std::string& name : names) {
      l.index_[{rank, name}] = int(l.subLanes.size());
      l.subLanes.push_back(SubLane{rank, name, y, subLaneHeight});
      y += subLaneHeight;
    }
    lane.subLaneCount = int(l.subLanes.size()) - lane.firstSubLane;
    lane.height = y - lane.top;
    l.lanes.push_back(std::move(lane));
  }
  l.totalHeight = y - top;
  return l;
}

int LaneLayout::subLaneAt(double y) const {
  // the last sub-lane whose top <= y
  auto it = std::upper_bound(subLanes.begin(), subLanes.end(), y,
                             [](double v, const SubLane& s) { return v < s.top; });
  if (it == subLanes.begin()) return -1;
  --it;
  if (y >= it->top + it->height) return -1;
  return int(it - subLanes.begin());
}

int LaneLayout::subLaneIndex(int rank, const std::string& stream) const {
  auto it = index_.find({rank, stream});
  return it == index_.end() ? -1 : it->second;
}

double LaneLayout::subLaneTop(int rank, const std::string& stream) const {
  const int i = subLaneIndex(rank, stream);
  return i < 0 ? -1.0 : subLanes[size_t(i)].top;
}

std::vector<std::string> LaneLayout::labels() const {
  std::vector<std::string> out;
  out.reserve(subLanes.size());
  for (const SubLane& s : subLanes) out.push_back("rank " + std::to_string(s.rank) + " / " + s.stream);
  return out;
}

// ---------------------------------------------------------------- StackedLayout

StackedLayout StackedLayout::build(const std::vector<const std::vector<SpanRow>*>& runs,
                                   const std::vector<std::string>& titles, double subLaneHeight, double rankGap,
                                   double headerHeight, double trackGap) {
  StackedLayout out;
  double y = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    if (k > 0) y += trackGap;
    StackedTrack t;
    t.title = k < titles.size() ? titles[k] : std::string();
    t.top = y;
    t.headerHeight = headerHeight;
    t.lanes = LaneLayout::build(*runs[k], subLaneHeight, rankGap, y + headerHeight);
    y = t.bottom();
    out.tracks.push_back(std::move(t));
  }
  out.totalHeight = y;
  return out;
}

int StackedLayout::trackAt(double y) const {
  for (size_t k = 0; k < tracks.size(); ++k)
    if (y >= tracks[k].top && y < tracks[k].bottom()) return int(k);
  return -1;
}

double stepStartOrigin(const std::vector<SpanRow>& spans) {
  double earliest = 0, earliestStep = 0;
  bool any = false, anyStep = false;
  for (const SpanRow& s : spans) {
    if (!any || s.start < earliest) earliest = s.start;
    any = true;
    if (s.stream == "host" && s.name == "step" && (!anyStep || s.start < earliestStep)) {
      earliestStep = s.start;
      anyStep = true;
    }
  }
  return anyStep ? earliestStep : earliest;
}

void shiftSpans(std::vector<SpanRow>& spans, double dt) {
  for (SpanRow& s : spans) s.start += dt;
}

// ---------------------------------------------------------------- visibleItems

namespace {
struct Tally {
  std::vector<std::pair<const std::string*, std::pair<double, int>>> byCategory;  // busy, count
  void add(const std::string& c, double busy) {
    for (auto& e : byCategory)
      if (*e.first == c) {
        e.second.first += busy;
        e.second.second += 1;
        return;
      }
    byCategory.push_back({&c, {busy, 1}});
  }
  std::string majority(double totalBusy, int totalCount) const {
    for (const auto& e : byCategory) {
      // strictly more than half (with a margin so that equal shares summed in floating point
      // come out "mixed")
      if (totalBusy > 0 ? e.second.first > 0.5 * totalBusy * (1 + 1e-9) : e.second.second * 2 > totalCount)
        return *e.first;
    }
    return "mixed";
  }
};
}  // namespace

std::vector<DrawItem> visibleItems(const std::vector<SpanRow>& spans, const LaneLayout& layout,
                                   const TimeAxis& axis, double minPixelWidth, const std::vector<char>* marks) {
  std::vector<DrawItem> items;
  if (marks && marks->size() != spans.size()) marks = nullptr;
  if (axis.width <= 0 || axis.span() <= 0 || layout.subLanes.empty()) return items;
  const double minPx = std::max(minPixelWidth, 1e-6);
  const double xr = axis.x0 + axis.width;
  const long ncols = std::max(1L, long(std::ceil(axis.width / minPx)));
  auto column = [&](double x) { return std::min(ncols - 1, long((x - axis.x0) / minPx)); };

  std::vector<long> open(layout.subLanes.size(), -1);     // open item per sub-lane
  // The column up to which narrow spans join the open item: its start column when it began
  // narrow, its end column when wide. New items thus start in strictly later columns than the
  // previous item's claim, which bounds the items per sub-lane by the number of columns.
  std::vector<long> openEnd(layout.subLanes.size(), -1);
  std::vector<Tally> tallies;                             // per item with count > 1

  int cachedRank = 0;
  const std::string* cachedStream = nullptr;
  int cachedLane = -1;

  for (const SpanRow& s : spans) {
    const double end = s.start + s.duration;
    if (end < axis.t0 || s.start > axis.t1) continue;
    if (!cachedStream || s.rank != cachedRank || s.stream != *cachedStream) {
      cachedRank = s.rank;
      cachedStream = &s.stream;
      cachedLane = layout.subLaneIndex(s.rank, s.stream);
    }
    if (cachedLane < 0) continue;
    const size_t sl = size_t(cachedLane);
    const double xa = std::clamp(axis.toX(s.start), axis.x0, xr);
    const double xb = std::clamp(axis.toX(end), axis.x0, xr);
    const long colA = column(xa), colB = column(xb);
    const bool narrow = xb - xa < minPx;
    const int marked = marks && (*marks)[size_t(&s - spans.data())] ? 1 : 0;

    if (narrow && open[sl] >= 0 && colA <= openEnd[sl]) {  // merge into the open item
      DrawItem& it = items[size_t(open[sl])];
      if (it.count == 1) {
        if (tallies.size() < items.size()) tallies.resize(items.size());
        tallies[size_t(open[sl])].add(it.span->category, it.span->duration);
        it.span = nullptr;
      }
      tallies[size_t(open[sl])].add(s.category, s.duration);
      it.count += 1;
      it.busy += s.duration;
      it.bytes += s.bytes;
      it.marked += marked;
      it.start = std::min(it.start, s.start);
      it.end = std::max(it.end, end);
      const double itEnd = std::max(it.x + it.width, xb);
      it.x = std::min(it.x, xa);
      it.width = itEnd - it.x;
      continue;  // openEnd stays: one aggregate per pixel column, no chaining across columns
    }
    const SubLane& lane = layout.subLanes[sl];
    DrawItem it;
    it.subLane = cachedLane;
    it.x = xa;
    it.width = xb - xa;
    it.y = lane.top;
    it.height = lane.height;
    it.start = s.start;
    it.end = end;
    it.category = s.category;
    it.count = 1;
    it.busy = s.duration;
    it.bytes = s.bytes;
    it.span = &s;
    it.marked = marked;
    open[sl] = long(items.size());
    openEnd[sl] = narrow ? colA : colB;
    items.push_back(std::move(it));
  }
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].count > 1) items[i].category = tallies[i].majority(items[i].busy, items[i].count);
  return items;
}

// ---------------------------------------------------------------- hitTest

const SpanRow* hitTest(const std::vector<SpanRow>& spans, const LaneLayout& layout, const TimeAxis& axis,
                       double x, double y) {
  constexpr double kTolerance = 2.0;
  const int sl = layout.subLaneAt(y);
  if (sl < 0) return nullptr;
  const SubLane& lane = layout.subLanes[size_t(sl)];
  const SpanRow* best = nullptr;
  double bestD = 0;
  for (const SpanRow& s : spans) {
    if (s.rank != lane.rank || s.stream != lane.stream) continue;
    const double xa = axis.toX(s.start), xb = axis.toX(s.start + s.duration);
    const double d = x < xa ? xa - x : (x > xb ? x - xb : 0.0);
    if (d > kTolerance) continue;
    if (!best || d < bestD || (d == bestD && s.duration < best->duration)) {
      best = &s;
      bestD = d;
    }
  }
  return best;
}

// ---------------------------------------------------------------- colours

QColor categoryColor(const std::string& category) {
  if (category == "compute") return QColor(0x4c, 0x78, 0xa8);  // blue
  if (category == "comm") return QColor(0xf5, 0x85, 0x18);     // orange
  if (category == "copy") return QColor(0x54, 0xa2, 0x4b);     // green
  if (category == "io") return QColor(0xb2, 0x79, 0xa2);       // purple
  if (category == "mixed") return QColor(0x9d, 0x9d, 0x9d);    // grey
  return QColor(0x6f, 0x6f, 0x6f);                              // unknown: dark grey
}

}  // namespace moebench::gui
