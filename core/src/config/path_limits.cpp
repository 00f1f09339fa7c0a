// Path lengths (path_limits.h).
#include "moebench/config/path_limits.h"

namespace moebench {

std::string path_length_problem(const std::string& path) {
  if (path.size() > kMaxPathBytes)
    return "the path has " + std::to_string(path.size()) + " bytes; a path has at most " +
           std::to_string(kMaxPathBytes);
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end - start > kMaxFileNameBytes)
      return "a name in it has " + std::to_string(end - start) + " bytes ('" + path.substr(start, 16) +
             "...'); a file name has at most " + std::to_string(kMaxFileNameBytes);
    start = end + 1;
  }
  return "";
}

}  // namespace moebench
