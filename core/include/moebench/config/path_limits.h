#pragma once
// The lengths a path may have on Linux, checked before a command creates or opens anything, so
// "File name too long" is a usage or config error naming the path, not a filesystem exception
// at run time.
#include <string>

namespace moebench {

inline constexpr size_t kMaxFileNameBytes = 255;  // NAME_MAX: one component of a path
inline constexpr size_t kMaxPathBytes = 4095;     // PATH_MAX - 1: a whole path

// "" when every component of `path` has at most kMaxFileNameBytes and the whole at most
// kMaxPathBytes, else what is wrong: "a name of 300 bytes ('aaaa...'); a file name has at most
// 255".
std::string path_length_problem(const std::string& path);

}  // namespace moebench
