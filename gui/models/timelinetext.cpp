#include "models/timelinetext.h"

#include <QStringList>

#include <algorithm>
#include <cmath>

#include "models/byteformat.h"

namespace moebench::gui {

QString formatDuration(double seconds) {
  if (std::abs(seconds) < 1e-5) return QString::number(seconds * 1e6, 'f', 3) + QStringLiteral(" us");
  return QString::number(seconds * 1e3, 'f', 3) + QStringLiteral(" ms");
}

QString formatTimeMs(double seconds) { return QString::number(seconds * 1e3, 'f', 3) + QStringLiteral(" ms"); }

QString formatBytes(int64_t bytes) {
  const QString exact = QString::number(bytes) + QStringLiteral(" B");
  return std::abs(double(bytes)) < 1e3 ? exact : exact + QStringLiteral(" (") + compactBytes(double(bytes)) + QLatin1Char(')');
}

RulerTicks rulerTicks(const TimeAxis& axis, double minPixels) {
  RulerTicks r;
  const double spanMs = axis.span() * 1e3;
  if (!(spanMs > 0) || !(axis.width > 0) || !(minPixels > 0)) return r;
  const double maxTicks = std::max(1.0, std::floor(axis.width / minPixels));
  const double raw = spanMs / maxTicks;  // smallest step keeping ticks minPixels apart
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  r.stepMs = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
  r.decimals = std::clamp(int(-std::floor(std::log10(r.stepMs) + 1e-9)), 0, 9);
  const double t0ms = axis.t0 * 1e3, t1ms = axis.t1 * 1e3;
  for (double k = std::ceil(t0ms / r.stepMs - 1e-9); k * r.stepMs <= t1ms + 1e-9 * r.stepMs; k += 1)
    r.times.push_back(k * r.stepMs / 1e3);
  return r;
}

QString tickLabel(double seconds, int decimals) {
  double ms = seconds * 1e3;
  if (std::abs(ms) < 0.5 * std::pow(10.0, -decimals)) ms = 0;  // no "-0.0"
  return QString::number(ms, 'f', decimals);
}

QString spanTooltip(const SpanRow& s) {
  QStringList lines;
  lines << QString::fromStdString(s.name);
  lines << QStringLiteral("category: %1").arg(QString::fromStdString(s.category));
  lines << QStringLiteral("rank %1, stream %2").arg(s.rank).arg(QString::fromStdString(s.stream));
  lines << QStringLiteral("step %1").arg(s.step);
  lines << QStringLiteral("start %1").arg(formatTimeMs(s.start));
  lines << QStringLiteral("duration %1").arg(formatDuration(s.duration));
  lines << QStringLiteral("bytes %1").arg(formatBytes(s.bytes));
  if (s.peer >= 0) lines << QStringLiteral("peer rank %1").arg(s.peer);
  if (s.layer >= 0) lines << QStringLiteral("layer %1").arg(s.layer);
  if (s.expert >= 0) lines << QStringLiteral("expert %1").arg(s.expert);
  // a pipeline's forward / backward phases carry their micro-batch (train/rank_step.h)
  if (s.chunk >= 0) lines << (s.stream == "host" ? QStringLiteral("micro-batch %1") : QStringLiteral("chunk %1")).arg(s.chunk);
  return lines.join(QLatin1Char('\n'));
}

QString aggregateTooltip(const DrawItem& item, int rank, const std::string& stream) {
  QStringList lines;
  lines << QStringLiteral("%1 spans (aggregated at this zoom)").arg(item.count);
  lines << QStringLiteral("rank %1, stream %2").arg(rank).arg(QString::fromStdString(stream));
  lines << QStringLiteral("from %1 to %2").arg(formatTimeMs(item.start), formatTimeMs(item.end));
  lines << QStringLiteral("busy %1").arg(formatDuration(item.busy));
  lines << QStringLiteral("bytes %1").arg(formatBytes(item.bytes));
  lines << QStringLiteral("category: %1").arg(QString::fromStdString(item.category));
  return lines.join(QLatin1Char('\n'));
}

}  // namespace moebench::gui
