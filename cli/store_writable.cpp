// The run store's path checked before a command starts (store_writable.h).
#include "store_writable.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "moebench/config/usage_error.h"

namespace moebench::cli {
namespace {

namespace fs = std::filesystem;

bool writable(const fs::path& p) { return ::faccessat(AT_FDCWD, p.c_str(), W_OK, AT_EACCESS) == 0; }

}  // namespace

void check_store_writable(const std::string& db, const std::string& named_as) {
  if (db.empty()) return;
  const std::string what = named_as + " " + db + ": ";
  std::error_code ec;
  const fs::path path = fs::absolute(db, ec);
  const fs::path dir = path.parent_path();
  const auto dir_status = fs::status(dir, ec);
  if (!fs::exists(dir_status)) throw UsageError(what + "its folder " + dir.string() + " does not exist");
  if (!fs::is_directory(dir_status)) throw UsageError(what + dir.string() + " is not a folder");
  const auto status = fs::status(path, ec);
  const bool dir_writable = writable(dir) && ::faccessat(AT_FDCWD, dir.c_str(), X_OK, AT_EACCESS) == 0;
  if (!fs::exists(status)) {
    if (!dir_writable) throw UsageError(what + "cannot be created: the folder " + dir.string() + " is not writable");
    return;
  }
  if (fs::is_directory(status)) throw UsageError(what + "is a folder, not a run database");
  if (!fs::is_regular_file(status)) throw UsageError(what + "is not a regular file");
  if (!writable(path)) throw UsageError(what + "the file is read-only for this user: runs cannot be recorded in it");
  if (dir_writable) return;
  for (const char* side : {"-wal", "-shm"}) {
    const fs::path p = path.string() + side;
    if (!fs::exists(p, ec) || !writable(p))
      throw UsageError(what + "the folder " + dir.string() + " is not writable, and SQLite needs " + p.string() +
                       " there to record runs");
  }
}

}  // namespace moebench::cli
