#pragma once
// Sizes and counts in messages and tables, held in doubles (configs of absurd size give counts
// beyond 64 bits).
#include <cstdio>
#include <string>

namespace moebench::cli {

// "812 B", "1.25 KiB", "3.4 MiB", "80 GiB" (three significant digits, binary units)
inline std::string bytes_text(double b) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024.0 && u < 5) {
    b /= 1024.0;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.3g %s", b, units[u]);
  return buf;
}

// "1234567"
inline std::string count_text(double n) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

}  // namespace moebench::cli
