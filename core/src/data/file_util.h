#pragma once
// Private to data/: opening input files with DataError messages that name the file.
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "moebench/data/data_error.h"

namespace moebench::data_detail {

// Opens `path` for binary reading and returns its size in bytes; throws DataError when the file
// is missing, a directory or unreadable.
inline uint64_t open_input(const std::string& path, std::ifstream& in) {
  namespace fs = std::filesystem;
  if (path.empty()) throw DataError("data: empty file path");
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw DataError(path + ": no such file");
  if (fs::is_directory(st)) throw DataError(path + ": is a directory, not a file");
  in.open(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open for reading (" + std::strerror(errno) + ")");
  uint64_t size = fs::file_size(path, ec);
  if (ec) throw DataError(path + ": cannot read file size (" + ec.message() + ")");
  return size;
}

}  // namespace moebench::data_detail
