// Fuzz target: the step-record decoder (decode_rank_records), which rank 0 runs on every other
// rank's buffer. Input: one byte with the number of MoE blocks (mod 4), then the buffer. It either
// decodes records (spans with a TaskCategory) that encode_rank_records turns back into exactly
// the same bytes, or throws std::runtime_error leaving the records untouched; anything else is
// a finding.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <stdexcept>

#include "moebench/train/step_records_codec.h"

namespace {
void fail(const char* what) {
  std::fprintf(stderr, "fuzz_step_records: %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> buf(data + 1, size - 1);
  moebench::StepRecords rec;
  rec.moe_blocks.resize(data[0] % 4);
  try {
    moebench::decode_rank_records(buf, rec);
  } catch (const std::runtime_error&) {
    if (!rec.spans.empty() || !rec.traffic.empty() || !rec.routing.empty() || !rec.decisions.empty()) fail("a failed decode changed the records");
    return 0;
  }
  if (rec.traffic.size() != 1 || rec.routing.size() != 1 || rec.routing[0].size() != rec.moe_blocks.size() ||
      rec.decisions.size() != 1 || rec.decisions[0].size() != rec.moe_blocks.size())
    fail("decoded records do not have one rank's shape");
  for (const moebench::Span& s : rec.spans)
    if (s.category < moebench::TaskCategory::compute || s.category > moebench::TaskCategory::io)
      fail("a decoded span has no TaskCategory");
  std::vector<std::vector<int>> routing;
  for (const auto& counts : rec.routing[0]) routing.emplace_back(counts.begin(), counts.end());
  const std::vector<uint8_t> again = moebench::encode_rank_records(rec.spans, rec.traffic[0], routing, rec.decisions[0]);
  if (!std::equal(again.begin(), again.end(), buf.begin(), buf.end())) fail("decode + encode is not the identity");
  return 0;
}
