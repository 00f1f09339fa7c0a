#pragma once
// llm.c / nanoGPT token shards (.bin): a header of 256 little-endian int32
//   [0] magic 20240520, [1] version (1 = uint16 tokens, 2 = uint32 tokens), [2] token count,
// the rest zero; then the tokens, little-endian. Reading checks the whole layout and throws a
// DataError naming the file for: a missing/unreadable file, a file shorter than the header, a
// wrong magic, an unknown version, truncated token data and trailing bytes.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "moebench/data/data_error.h"

namespace moebench {

inline constexpr int32_t kBinShardMagic = 20240520;
inline constexpr int kBinShardHeaderInts = 256;
inline constexpr int kBinShardHeaderBytes = kBinShardHeaderInts * 4;

std::vector<int32_t> read_bin_shard(const std::string& path);

// The same checks on a whole shard held in memory; `name` starts every message.
std::vector<int32_t> parse_bin_shard(std::span<const uint8_t> bytes, const std::string& name);

// version 1 needs every token in [0, 65535], version 2 in [0, 2^31). Throws DataError on a
// token that does not fit, an unknown version or a write failure.
void write_bin_shard(const std::string& path, const std::vector<int32_t>& tokens, int version = 1);

}  // namespace moebench
