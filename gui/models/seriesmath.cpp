#include "models/seriesmath.h"

#include <algorithm>
#include <cmath>

namespace moebench::gui {

std::vector<double> smoothEma(const std::vector<double>& values, double weight) {
  const double w = std::clamp(weight, 0.0, 0.999);
  std::vector<double> out;
  out.reserve(values.size());
  double m = 0, wpow = 1;
  for (double v : values) {
    m = w * m + (1 - w) * v;
    wpow *= w;
    out.push_back(w == 0 ? v : m / (1 - wpow));
  }
  return out;
}

std::optional<std::pair<double, double>> defaultRange(const std::vector<std::vector<std::pair<double, double>>>& series) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : series)
    for (size_t i = s.size() > 2 ? 1 : 0; i < s.size(); ++i) {
      const double v = s[i].second;
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (lo > hi) return std::nullopt;
  return std::make_pair(lo, hi);
}

}  // namespace moebench::gui
