// RowOps' helpers over row ranges (moe/row_ops.h).
#include "moebench/moe/row_ops.h"

namespace moebench {

void gather_row_ranges(RowOps& ops, float* dst, const float* src, const std::vector<std::pair<long, long>>& ranges,
                       int C) {
  long at = 0;
  for (const auto& [first, n] : ranges) {
    if (n) ops.copy(dst + at * C, src + first * C, n * C);
    at += n;
  }
}

void scatter_row_ranges(RowOps& ops, float* dst, const float* src, const std::vector<std::pair<long, long>>& ranges,
                        int C) {
  long at = 0;
  for (const auto& [first, n] : ranges) {
    if (n) ops.copy(dst + first * C, src + at * C, n * C);
    at += n;
  }
}

}  // namespace moebench
