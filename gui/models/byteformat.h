#pragma once
// Byte counts as the GUI shows them, in decimal units like the CLI (kB = 1000 B):
// 999 -> "999 B", 1234 -> "1.23 kB", 45.6e6 -> "45.6 MB" (three significant digits).
#include <QString>

namespace moebench::gui {

QString compactBytes(double bytes);

}  // namespace moebench::gui
