// How the run store opens a file for reading (see read_access.h).
#include "read_access.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace moebench::store_detail {

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Root, or the owner of the file: SQLite's new -wal/-shm files then belong to the file's owner.
bool owner_or_root(const std::string& path) {
  struct stat st;
  const uid_t me = ::geteuid();
  return me == 0 || (::stat(path.c_str(), &st) == 0 && st.st_uid == me);
}

bool directory_writable(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  return ::faccessat(AT_FDCWD, dir.c_str(), W_OK, AT_EACCESS) == 0;
}

}  // namespace

void open_for_reading(Db& db, const std::string& path, ReadPurpose purpose) {
  const std::string wal = path + "-wal", shm = path + "-shm";
  if (exists(wal)) {
    if (!exists(shm) && !owner_or_root(path))
      throw StoreError(path + ": its write-ahead log " + wal + " has no " + shm +
                       " beside it, and reading it would create one owned by you, which the store's owner "
                       "could not use: open the store once as its owner; it was left unchanged");
    db.open(path, SQLITE_OPEN_READONLY, "mode=ro");
    return;
  }
  const bool snapshot = purpose == ReadPurpose::check || !directory_writable(path) || !owner_or_root(path);
  db.open(path, SQLITE_OPEN_READONLY, snapshot ? "mode=ro&immutable=1" : "mode=ro");
}

}  // namespace moebench::store_detail
