#pragma once
// Bounds of the synthetic corpus every rank generates (docs/limits.md "Sizes, memory and time"),
// checked when a config is loaded (config_validate.cpp), so that no [data] value can make a run
// take GBs of memory or minutes before its first step:
//   data.corpus_tokens  4 bytes per token on every rank (twice with data.tasks: the per-task
//                       streams); 2^28 tokens is 1 GiB per rank, 13 times the largest sample
//                       config's 20,000,000;
//   the languages' transition tables (synthetic_table_entries, 8 bytes per entry on every rank
//                       while the corpus is generated): 2^26 entries, 512 MiB, 50 times a GPT-2
//                       vocabulary (50,304) x 8 languages x 3 successors;
//   data.branching      drawing a state's distinct successors costs branching^2 / 2
//                       comparisons: 256 keeps a table of 2^26 entries to seconds (the sample
//                       configs use 3).
// Measured (release build, one core): the largest table (1 x 262,144 x 256) and the largest
// corpus (2^28 tokens) each take about 6 s to generate.
#include <algorithm>
#include <cstdint>

#include "moebench/config/config.h"

namespace moebench {

inline constexpr int64_t kMaxCorpusTokens = int64_t(1) << 28;
inline constexpr int64_t kMaxSyntheticTableEntries = int64_t(1) << 26;
inline constexpr int kMaxBranching = 256;

// data.languages x vocab_size x min(data.branching, vocab_size): each a successor and its probability.
inline double synthetic_table_entries(const DataConfig& d, int vocab_size) {
  return (double)d.languages * vocab_size * std::min(d.branching, vocab_size);
}

}  // namespace moebench
