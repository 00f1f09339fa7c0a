// Output files (output_file.h).
#include "output_file.h"

#include <filesystem>

#include "moebench/config/path_limits.h"
#include "moebench/config/usage_error.h"

namespace moebench::cli {

void check_output_file(const std::string& what, const std::string& path, bool force) {
  if (const std::string why = path_length_problem(path); !why.empty())
    throw UsageError(what + " " + path.substr(0, 48) + (path.size() > 48 ? "..." : "") + ": " + why);
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status))
    throw UsageError(what + " " + path + ": it is a folder; name a file");
  if (std::filesystem::exists(status) && !force)
    throw UsageError(what + " " + path + " exists; pass --force to replace it (or write another file)");
}

}  // namespace moebench::cli
