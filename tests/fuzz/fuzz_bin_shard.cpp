// Fuzz target: the llm.c `.bin` token shard reader (parse_bin_shard, which shares its checks
// with read_bin_shard) on arbitrary bytes. It either returns exactly the tokens the header
// announces, all >= 0, or throws DataError; any other exception or a crash is a finding.
#include <cstdio>
#include <cstdlib>
#include <span>

#include "moebench/data/bin_shard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::vector<int32_t> tokens = moebench::parse_bin_shard(std::span(data, size), "fuzz.bin");
    const size_t width = data[4] == 1 ? 2 : 4;  // accepted: the header is there, version 1 or 2
    bool ok = tokens.size() * width == size - moebench::kBinShardHeaderBytes;
    for (int32_t t : tokens) ok = ok && t >= 0;
    if (!ok) {
      std::fprintf(stderr, "fuzz_bin_shard: %zu tokens accepted from %zu bytes\n", tokens.size(), size);
      std::abort();
    }
  } catch (const moebench::DataError&) {
  }
  return 0;
}
