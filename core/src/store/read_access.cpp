// How the run store opens a file for reading (see read_access.h).
#include "read_access.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "schema.h"

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

// The 100-byte SQLite header: "SQLite format 3\0", bytes 18/19 = 2 in WAL mode, the
// application id big-endian at offset 68.
bool our_wal_store(const std::string& path) {
  unsigned char h[100] = {};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, h, sizeof(h));
  ::close(fd);
  if (n != (ssize_t)sizeof(h) || std::memcmp(h, "SQLite format 3", 16) != 0) return false;
  const int64_t app = (int64_t(h[68]) << 24) | (int64_t(h[69]) << 16) | (int64_t(h[70]) << 8) | int64_t(h[71]);
  return h[18] == 2 && h[19] == 2 && app == kApplicationId;
}

}  // namespace

FileStamp file_stamp(const std::string& path) {
  FileStamp out;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    out.size = (int64_t)st.st_size;
    out.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  }
  out.wal = exists(path + "-wal");
  return out;
}

bool open_for_reading(Db& db, const std::string& path, ReadPurpose purpose) {
  const std::string wal = path + "-wal", shm = path + "-shm";
  if (exists(wal)) {
    if (!exists(shm) && !owner_or_root(path))
      throw StoreError(path + ": its write-ahead log " + wal + " has no " + shm +
                       " beside it, and reading it would create one owned by you, which the store's owner "
                       "could not use: open the store once as its owner; it was left unchanged");
    db.open(path, SQLITE_OPEN_READONLY, "mode=ro");
    return false;
  }
  const bool can_lock = directory_writable(path) && owner_or_root(path);
  const bool locking =
      can_lock && (purpose == ReadPurpose::view || (purpose == ReadPurpose::check_live && our_wal_store(path)));
  db.open(path, SQLITE_OPEN_READONLY, locking ? "mode=ro" : "mode=ro&immutable=1");
  return !locking;
}

}  // namespace moebench::store_detail
