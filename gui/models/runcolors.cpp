#include "models/runcolors.h"

namespace moebench::gui {

QColor runColor(int64_t runId) {
  static const QRgb palette[] = {0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f, 0xedc948,
                                 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac, 0x1f77b4, 0x8c564b};
  constexpr int64_t n = sizeof(palette) / sizeof(palette[0]);
  const int64_t i = runId < 0 ? 0 : runId;
  QColor c = QColor::fromRgb(palette[i % n]);
  const int shade = int((i / n) % 3);  // 0, 1, 2: darker each round
  return shade == 0 ? c : c.darker(100 + 35 * shade);
}

}  // namespace moebench::gui
