#pragma once
// Raw text, byte level: every byte of the file is one token in [0, 256) (vocab 256; UTF-8
// multi-byte characters become several tokens). An empty file is a DataError.
#include <cstdint>
#include <string>
#include <vector>

#include "moebench/data/data_error.h"

namespace moebench {

inline constexpr int kTextVocabSize = 256;

std::vector<int32_t> read_text_bytes(const std::string& path);

}  // namespace moebench
