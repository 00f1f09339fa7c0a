#pragma once
// Per-step series arithmetic of the Metrics view (issue 35, point 4).
//   smoothEma   TensorBoard's smoothing: an exponential moving average with weight w in [0, 1)
//               (0: the raw values), debiased so the first points are not pulled toward 0:
//               m_i = w m_{i-1} + (1 - w) v_i, shown m_i / (1 - w^(i+1)).
//   defaultRange the y range a chart opens with: every finite value except the first step's
//               when the series has more than 2 points (its warm-up spike: the rule of the
//               ms/step column and `runs show`), all values otherwise; empty when no value.
#include <optional>
#include <utility>
#include <vector>

namespace moebench::gui {

std::vector<double> smoothEma(const std::vector<double>& values, double weight);

// points: (step, value) in step order, one series per run.
std::optional<std::pair<double, double>> defaultRange(const std::vector<std::vector<std::pair<double, double>>>& series);

}  // namespace moebench::gui
