#pragma once
// Internal: how the run store opens an existing file for reading. Reading never writes the
// database, and never leaves a -wal or -shm file that the store's owner could not use: a reader
// that is not the owner (and not root) would create them as its own (SQLite gives files created
// as root to the database's owner), and a read-only connection cannot remove them on close.
#include <cstdint>
#include <string>

#include "sqlite_db.h"

namespace moebench::store_detail {

enum class ReadPurpose {
  view,        // a read-only RunStore: sees a writer's later commits where it can
  check,       // the look at a file before a read-write open: a snapshot is enough
  check_live,  // the look again at a store that changed during a snapshot check: a writer is at
               // work, so the check reads with SQLite's locks where it can (below)
};

// Opens `path` read-only on `db`; returns true when the connection reads an immutable snapshot
// of the main file (no locks: a writer that changes the file meanwhile can make such a read see
// torn pages, so a caller re-checks a snapshot that looked corrupt once the file changed):
//  - `path-wal` exists (a writer has the store open, or one crashed): SQLITE_OPEN_READONLY through
//    the existing -wal and -shm (an -shm the user cannot write is used read-only), so commits
//    still in the WAL are seen. Without its -shm, a reader other than the owner or root is
//    refused with a message rather than leave an -shm of its own.
//  - no -wal, the owner (or root) in a writable directory: SQLITE_OPEN_READONLY with SQLite's
//    locks for a view, and for check_live of a file whose header says it is a moebench store in
//    WAL mode (a writer is at work beside it: only a locking read is safe). SQLite creates -wal
//    and -shm owned by the store's owner and keeps seeing later commits.
//  - otherwise (a directory the user cannot write, a store of another user, and `check`, which
//    must leave a file it refuses without new files): immutable=1, no lock and no file created;
//    the view is a snapshot (a writer that starts later reaches the main file only at a
//    checkpoint: 1000 pages of WAL, or the end of its run).
bool open_for_reading(Db& db, const std::string& path, ReadPurpose purpose);

// What a re-check compares: the main file's size and modification time and whether a -wal
// exists. Equal stamps before and after a snapshot read mean no writer touched the file.
struct FileStamp {
  int64_t size = -1, mtime_ns = -1;
  bool wal = false;
  bool operator==(const FileStamp&) const = default;
};
FileStamp file_stamp(const std::string& path);

}  // namespace moebench::store_detail
