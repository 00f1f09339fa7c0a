#include "models/rooflinegeometry.h"

#include <cmath>
#include <numbers>

namespace moebench::gui {

LogRange decadeRange(double lo, double hi, double margin) {
  return {std::pow(10.0, std::floor(std::log10(lo / margin))), std::pow(10.0, std::ceil(std::log10(hi * margin)))};
}

QPointF LogPlotFrame::toPixels(const QPointF& data) const {
  const double fx = std::log(data.x() / xmin) / std::log(xmax / xmin);
  const double fy = std::log(data.y() / ymin) / std::log(ymax / ymin);
  return {fx * width, fy * height};
}

QPointF LogPlotFrame::toData(const QPointF& pixels) const {
  return {xmin * std::pow(xmax / xmin, pixels.x() / width), ymin * std::pow(ymax / ymin, pixels.y() / height)};
}

std::vector<QPointF> arrowPolyline(const QPointF& from, const QPointF& to, const LogPlotFrame& frame,
                                   const ArrowStyle& style) {
  const QPointF a = frame.toPixels(from), b = frame.toPixels(to);
  const double dx = b.x() - a.x(), dy = b.y() - a.y();
  const double length = std::hypot(dx, dy);
  const double shaft = length - style.startGapPx - style.endGapPx;
  if (!(shaft >= 0.5)) return {};
  const double ux = dx / length, uy = dy / length;
  const QPointF start(a.x() + ux * style.startGapPx, a.y() + uy * style.startGapPx);
  const QPointF tip(b.x() - ux * style.endGapPx, b.y() - uy * style.endGapPx);
  const double head = std::min(style.headPx, 0.5 * shaft);
  const double back = std::atan2(-uy, -ux), spread = style.headDegrees * std::numbers::pi / 180.0;
  auto side = [&](double angle) {
    return frame.toData(QPointF(tip.x() + head * std::cos(angle), tip.y() + head * std::sin(angle)));
  };
  const QPointF tipData = frame.toData(tip);
  return {frame.toData(start), tipData, side(back + spread), tipData, side(back - spread)};
}

}  // namespace moebench::gui
