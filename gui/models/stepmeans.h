#pragma once
// Means of a per-step metric (metrics() rows, one per step) as the run views report them.
//   warmupMean  summarize_run's rule (moebench/store/run_summary.h): the first step is a warm-up
//               and left out when more than 2 steps were recorded. The run browser's ms/step and
//               tokens/s and the measured side of the prediction accuracy use it, so a run's
//               ms/step is the same number in every view and in `moebench runs show`.
//   plainMean   every step counted (simulated steps have no warm-up).
// Both are NaN without points.
#include <vector>

#include "moebench/store/run_store.h"

namespace moebench::gui {

double warmupMean(const std::vector<MetricPoint>& points);
double plainMean(const std::vector<MetricPoint>& points);

}  // namespace moebench::gui
