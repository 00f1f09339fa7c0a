#include "moebench/data/text_corpus.h"

#include <fstream>

#include "file_util.h"

namespace moebench {

std::vector<int32_t> read_text_bytes(const std::string& path) {
  std::ifstream in;
  const uint64_t size = data_detail::open_input(path, in);
  if (size == 0) throw DataError(path + ": empty file (a text corpus needs at least one byte)");
  std::string bytes((size_t)size, '\0');
  if (!in.read(bytes.data(), (std::streamsize)size))
    throw DataError(path + ": read error (" + std::strerror(errno) + ")");
  std::vector<int32_t> tokens(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) tokens[i] = (int32_t)(unsigned char)bytes[i];
  return tokens;
}

}  // namespace moebench
