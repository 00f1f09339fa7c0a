#pragma once
// What a path that is not a regular file is, for the messages that refuse it ("it is a FIFO
// (named pipe)"): config files, prompt files, anything read whole.
#include <filesystem>

namespace moebench {

inline const char* file_kind(const std::filesystem::file_status& status) {
  switch (status.type()) {
    case std::filesystem::file_type::directory: return "a directory";
    case std::filesystem::file_type::fifo: return "a FIFO (named pipe)";
    case std::filesystem::file_type::character: return "a character device";
    case std::filesystem::file_type::block: return "a block device";
    case std::filesystem::file_type::socket: return "a socket";
    default: return "something other than a file";
  }
}

}  // namespace moebench
