#include "models/metricunits.h"

#include <QLocale>
#include <QObject>

#include <cmath>

#include "models/byteformat.h"

namespace moebench::gui {

MetricUnit metricUnit(const QString& key, bool predicted) {
  const QString who = predicted ? QObject::tr("all ranks") : QObject::tr("rank 0");
  if (key == "step_ms") return {MetricKind::milliseconds, QObject::tr("step time (ms)")};
  if (key == "comm_ms") return {MetricKind::milliseconds, QObject::tr("exposed communication per step (ms)")};
  if (key.endsWith("_ms")) return {MetricKind::milliseconds, QObject::tr("%1 (ms)").arg(key)};
  if (key == "tokens_per_s") return {MetricKind::tokensPerSecond, QObject::tr("throughput (tokens/s)")};
  if (key == "bytes_intra") return {MetricKind::bytes, QObject::tr("bytes sent intra-node per step, %1").arg(who)};
  if (key == "bytes_inter") return {MetricKind::bytes, QObject::tr("bytes sent inter-node per step, %1").arg(who)};
  if (key.endsWith("_bytes")) return {MetricKind::bytes, key};
  if (key == "loss") return {MetricKind::plain, QObject::tr("training loss")};
  if (key == "eval_loss") return {MetricKind::plain, QObject::tr("held-out loss")};
  if (key == "aux_loss") return {MetricKind::plain, QObject::tr("load-balancing loss (aux)")};
  return {MetricKind::plain, key};
}

AxisScale axisScale(MetricKind kind, double maxAbs) {
  if (kind != MetricKind::bytes || !(maxAbs >= 1e3)) return {1, kind == MetricKind::bytes ? QStringLiteral("B") : QString()};
  static const char* const units[] = {"kB", "MB", "GB", "TB"};
  double divisor = 1e3;
  int u = 0;
  while (maxAbs / divisor >= 1e3 && u < 3) {
    divisor *= 1e3;
    ++u;
  }
  return {divisor, QString::fromLatin1(units[u])};
}

QString scaledTitle(const MetricUnit& unit, const AxisScale& scale) {
  if (unit.kind != MetricKind::bytes) return unit.title;
  return QObject::tr("%1 (%2)").arg(unit.title, scale.unit);
}

QString formatMetricValue(MetricKind kind, double value) {
  if (std::isnan(value)) return QObject::tr("NaN");
  switch (kind) {
    case MetricKind::milliseconds: return QObject::tr("%1 ms").arg(value, 0, 'f', std::fabs(value) < 10 ? 2 : 1);
    case MetricKind::tokensPerSecond: return QObject::tr("%1 tokens/s").arg(QLocale(QLocale::English, QLocale::UnitedStates).toString(qlonglong(std::llround(value))));
    case MetricKind::bytes: return compactBytes(value);
    case MetricKind::plain: break;
  }
  return QString::number(value, 'g', 5);
}

}  // namespace moebench::gui
