#pragma once
// The wire format a rank ships its step records in to rank 0 (Trainer::collect_records):
// its spans, the bytes it sent to each peer, and the kept-token counts per MoE block and
// expert. Little-endian host layout; ranks of one job share the binary.
#include <cstdint>
#include <span>
#include <vector>

#include "moebench/runtime/span.h"
#include "moebench/train/trainer.h"

namespace moebench {

std::vector<uint8_t> encode_rank_records(const std::vector<Span>& spans, const std::vector<uint64_t>& traffic,
                                         const std::vector<std::vector<int>>& routing);

// Appends one rank's records to `into` (spans, one traffic row, one routing entry with
// into.moe_blocks.size() blocks). Throws std::runtime_error naming what is wrong and where on a
// malformed buffer (truncated, a count larger than the bytes left, a span category that is not
// a TaskCategory, a negative routing count, trailing bytes); `into` is then left unchanged.
void decode_rank_records(std::span<const uint8_t> buf, StepRecords& into);

}  // namespace moebench
