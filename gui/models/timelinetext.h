#pragma once
// Text for the timeline (no widgets): time formatting, ruler ticks and hover tooltips.
// Times are SpanRow times: seconds since the rank's executor epoch, shown in milliseconds.
#include <QString>

#include <vector>

#include "models/timelinegeometry.h"
#include "moebench/store/run_store.h"

namespace moebench::gui {

// "12.345 ms"; durations under 10 microseconds as "1.250 us" (ms with 3 decimals would round
// them to 0.001 ms or 0.000 ms).
QString formatDuration(double seconds);
// A point in time in milliseconds with 3 decimals: "512.000 ms".
QString formatTimeMs(double seconds);
// "999 B", "4096 B (4.10 kB)", "3145728 B (3.15 MB)": the exact count first, then compactBytes.
QString formatBytes(int64_t bytes);

// Ruler ticks: a 1-2-5 step (in ms) so that ticks are at least minPixels apart, the ticks
// (seconds) inside [axis.t0, axis.t1], and the decimals that label them without repetition.
struct RulerTicks {
  double stepMs = 0;
  int decimals = 0;
  std::vector<double> times;  // seconds
};
RulerTicks rulerTicks(const TimeAxis& axis, double minPixels);
QString tickLabel(double seconds, int decimals);  // "12.5" (ms, no unit)

// One span: name, then "category: ...", "rank R, stream S", "start ...", "duration ...",
// "bytes ...", and "peer rank P", "layer L", "expert E" when set (>= 0), "step N".
QString spanTooltip(const SpanRow& s);
// An aggregate of item.count spans on (rank, stream): "N spans (aggregated at this zoom)",
// "busy X ms", "bytes ...", the covered range and the majority category.
QString aggregateTooltip(const DrawItem& item, int rank, const std::string& stream);

}  // namespace moebench::gui
