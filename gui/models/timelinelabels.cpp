#include "models/timelinelabels.h"

#include <QFontMetricsF>

#include <algorithm>
#include <cmath>

namespace moebench::gui {

std::vector<SpanLabel> spanLabels(const std::vector<DrawItem>& items, const TimeAxis& axis, const QFontMetricsF& fm,
                                  double padding, double minRoom) {
  std::vector<SpanLabel> out;
  // items of each sub-lane by (x, draw order)
  std::vector<int> order(items.size());
  for (size_t i = 0; i < items.size(); ++i) order[i] = int(i);
  std::sort(order.begin(), order.end(), [&items](int a, int b) {
    const DrawItem& A = items[size_t(a)];
    const DrawItem& B = items[size_t(b)];
    if (A.subLane != B.subLane) return A.subLane < B.subLane;
    if (A.x != B.x) return A.x < B.x;
    return a < b;
  });
  const double axisRight = axis.x0 + axis.width;
  const double minWidth = std::max(minRoom, fm.horizontalAdvance(QStringLiteral("M\u2026")));
  double prevRight = -1e300;
  for (size_t k = 0; k < order.size(); ++k) {
    const DrawItem& it = items[size_t(order[k])];
    if (k == 0 || items[size_t(order[k - 1])].subLane != it.subLane) prevRight = -1e300;
    if (it.count != 1 || !it.span) continue;
    double left = std::max(it.x, axis.x0) + padding;
    left = std::max(left, prevRight + padding);
    double right = std::min(it.x + it.width, axisRight) - padding;
    if (k + 1 < order.size()) {
      const DrawItem& next = items[size_t(order[k + 1])];
      if (next.subLane == it.subLane) right = std::min(right, next.x - padding);
    }
    const double room = right - left;
    if (room < minWidth) continue;
    const QString name = QString::fromStdString(it.span->name);
    QString text = fm.horizontalAdvance(name) <= room ? name : fm.elidedText(name, Qt::ElideRight, room);
    if (text.isEmpty() || text == QStringLiteral("\u2026")) continue;
    const double w = std::min(room, fm.horizontalAdvance(text));
    out.push_back(SpanLabel{order[k], QRectF(left, it.y, w, it.height), text});
    prevRight = left + w;
  }
  return out;
}

RulerLayout rulerLayout(const TimeAxis& axis, const QFontMetricsF& fm, double height, double minPixels, double offset,
                        double gap) {
  RulerLayout out;
  double minPx = minPixels;
  for (int attempt = 0; attempt < 8; ++attempt) {
    out.ticks = rulerTicks(axis, minPx);
    if (out.ticks.times.size() < 2 || !(axis.span() > 0)) break;
    double widest = 0;
    for (double t : out.ticks.times) widest = std::max(widest, fm.horizontalAdvance(tickLabel(t, out.ticks.decimals)));
    const double spacing = out.ticks.stepMs / 1e3 / axis.span() * axis.width;
    const double needed = offset + widest + gap;
    if (spacing >= needed) break;
    minPx = std::max(minPx * 1.5, std::ceil(needed) + 1);
  }
  const double axisRight = axis.x0 + axis.width;
  double prevRight = -1e300;
  for (double t : out.ticks.times) {
    const QString text = tickLabel(t, out.ticks.decimals);
    const double x = axis.toX(t) + offset;
    const double w = fm.horizontalAdvance(text);
    if (x + w > axisRight || x < prevRight + gap) continue;  // past the end, or (never, by the spacing) too close
    out.labels.push_back(RulerLabel{t, QRectF(x, 0, w, height), text});
    prevRight = x + w;
  }
  return out;
}

}  // namespace moebench::gui
