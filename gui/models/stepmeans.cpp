#include "models/stepmeans.h"

#include <limits>

namespace moebench::gui {
namespace {

double meanFrom(const std::vector<MetricPoint>& points, size_t first) {
  if (first >= points.size()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (size_t i = first; i < points.size(); ++i) sum += points[i].value;
  return sum / double(points.size() - first);
}

}  // namespace

double warmupMean(const std::vector<MetricPoint>& points) { return meanFrom(points, points.size() > 2 ? 1 : 0); }
double plainMean(const std::vector<MetricPoint>& points) { return meanFrom(points, 0); }

}  // namespace moebench::gui
