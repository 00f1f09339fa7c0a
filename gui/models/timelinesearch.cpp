#include "models/timelinesearch.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace moebench::gui {

std::vector<int> matchingSpans(const std::vector<SpanRow>& spans, const QString& text) {
  std::vector<int> out;
  if (text.isEmpty()) return out;
  std::unordered_map<std::string, bool> byName;  // span names repeat: fold each name once
  for (size_t i = 0; i < spans.size(); ++i) {
    auto [it, fresh] = byName.try_emplace(spans[i].name, false);
    if (fresh) it->second = QString::fromStdString(spans[i].name).contains(text, Qt::CaseInsensitive);
    if (it->second) out.push_back(int(i));
  }
  std::stable_sort(out.begin(), out.end(), [&spans](int a, int b) { return spans[size_t(a)].start < spans[size_t(b)].start; });
  return out;
}

std::vector<char> matchFlags(size_t spanCount, const std::vector<int>& matches) {
  std::vector<char> flags(spanCount, 0);
  for (int i : matches)
    if (i >= 0 && size_t(i) < spanCount) flags[size_t(i)] = 1;
  return flags;
}

std::pair<double, double> focusRange(const TimeAxis& axis, double start, double end, double minPixels) {
  if (end < start) std::swap(start, end);
  const double span = axis.span(), d = end - start;
  const bool wideEnough = axis.width > 0 && span > 0 && d / span * axis.width >= minPixels;
  const double margin = 0.1 * span;
  if (wideEnough && start >= axis.t0 + margin && end <= axis.t1 - margin) return {axis.t0, axis.t1};
  const double centre = 0.5 * (start + end);
  if (wideEnough && d <= 0.8 * span) return {centre - 0.5 * span, centre + 0.5 * span};
  const double s = std::max(3 * d, TimeAxis::kMinSpan);
  return {centre - 0.5 * s, centre + 0.5 * s};
}

}  // namespace moebench::gui
