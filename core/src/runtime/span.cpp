#include "moebench/runtime/span.h"

#include <algorithm>
#include <utility>

namespace moebench {
namespace {

using Intervals = std::vector<std::pair<double, double>>;

// Sorted, disjoint union of the intervals, clipped to [begin, end).
Intervals merged(Intervals v, double begin, double end) {
  for (auto& [a, b] : v) a = std::max(a, begin), b = std::min(b, end);
  std::erase_if(v, [](const auto& iv) { return iv.second <= iv.first; });
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  }
  return out;
}

}  // namespace

double exposed_comm_seconds(const std::vector<Span>& spans, double begin, double end) {
  Intervals comm, compute;
  for (const Span& s : spans) {
    if (s.category == TaskCategory::comm) comm.push_back({s.start, s.end});
    else if (s.category == TaskCategory::compute && s.role != StreamRole::host) compute.push_back({s.start, s.end});
  }
  const Intervals c = merged(std::move(comm), begin, end), k = merged(std::move(compute), begin, end);
  double exposed = 0.0;
  size_t j = 0;
  for (const auto& [a, b] : c) {
    double covered = 0.0;
    while (j < k.size() && k[j].second <= a) ++j;
    for (size_t i = j; i < k.size() && k[i].first < b; ++i)
      covered += std::min(b, k[i].second) - std::max(a, k[i].first);
    exposed += (b - a) - covered;
  }
  return exposed;
}

}  // namespace moebench
