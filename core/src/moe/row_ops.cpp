// RowOps' helpers over row ranges (moe/row_ops.h).
#include "moebench/moe/row_ops.h"

namespace moebench {
namespace {

// Each range (first row, rows) of the spread-out side to the next rows of the packed side
// (gather), or back (scatter).
void move_ranges(RowOps& ops, float* dst, const float* src, const std::vector<std::pair<long, long>>& ranges, int C,
                 bool gather) {
  long at = 0;
  for (const auto& [first, n] : ranges) {
    if (n) ops.copy(dst + (gather ? at : first) * C, src + (gather ? first : at) * C, n * C);
    at += n;
  }
}

}  // namespace

void gather_row_ranges(RowOps& ops, float* dst, const float* src, const std::vector<std::pair<long, long>>& ranges,
                       int C) {
  move_ranges(ops, dst, src, ranges, C, true);
}

void scatter_row_ranges(RowOps& ops, float* dst, const float* src, const std::vector<std::pair<long, long>>& ranges,
                        int C) {
  move_ranges(ops, dst, src, ranges, C, false);
}

}  // namespace moebench
