#include "byteformat.h"

#include <cmath>

namespace moebench::gui {

QString compactBytes(double bytes) {
  const double a = std::fabs(bytes);
  if (a < 1e3) return QString::number(bytes, 'f', 0) + QStringLiteral(" B");
  static const char* const units[] = {"kB", "MB", "GB", "TB", "PB"};
  double v = bytes / 1e3;
  int u = 0;
  while (std::fabs(v) >= 999.995 && u < 4) {
    v /= 1e3;
    ++u;
  }
  const int precision = std::fabs(v) < 10 ? 2 : std::fabs(v) < 100 ? 1 : 0;
  return QString::number(v, 'f', precision) + QLatin1Char(' ') + QLatin1String(units[u]);
}

}  // namespace moebench::gui
