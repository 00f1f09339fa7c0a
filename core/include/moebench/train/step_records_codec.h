#pragma once
// The wire format a rank ships its step records in to rank 0 (Trainer::collect_records):
// its spans, the bytes it sent to each peer, the kept-token counts per MoE block and expert, and
// the strategy's decisions per MoE block (MoeStrategy::decisions; blocks past `decisions`' size
// have none). Little-endian host layout; ranks of one job share the binary.
#include <cstdint>
#include <span>
#include <vector>

#include "moebench/runtime/span.h"
#include "moebench/train/trainer.h"

namespace moebench {

std::vector<uint8_t> encode_rank_records(const std::vector<Span>& spans, const std::vector<uint64_t>& traffic,
                                         const std::vector<std::vector<int>>& routing,
                                         const std::vector<std::vector<StrategyDecision>>& decisions = {});

// Appends one rank's records to `into` (spans, one traffic row, one routing and one decisions
// entry with into.moe_blocks.size() blocks each). Throws std::runtime_error naming what is wrong and where on a
// malformed buffer (truncated, a count larger than the bytes left, a span category that is not
// a TaskCategory, a negative routing count, a decision value that is not finite, trailing bytes); `into` is then left unchanged.
void decode_rank_records(std::span<const uint8_t> buf, StepRecords& into);

}  // namespace moebench
