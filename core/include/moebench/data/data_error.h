#pragma once
// DataError: the one exception type of data/. Every message starts with the file (or
// "synthetic corpus", "data.source", ...) it is about and says what is wrong, e.g.
//   "data/train.bin: bad magic 12345 (expected 20240520, an llm.c token shard)".
#include <stdexcept>
#include <string>

namespace moebench {

class DataError : public std::runtime_error {
 public:
  explicit DataError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace moebench
