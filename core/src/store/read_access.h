#pragma once
// Internal: how the run store opens an existing file for reading. Reading never writes the
// database, and never leaves a -wal or -shm file that the store's owner could not use: a reader
// that is not the owner (and not root) would create them as its own (SQLite gives files created
// as root to the database's owner), and a read-only connection cannot remove them on close.
#include <string>

#include "sqlite_db.h"

namespace moebench::store_detail {

enum class ReadPurpose {
  view,   // a read-only RunStore: sees a writer's later commits where it can
  check,  // the look at a file before a read-write open: a snapshot is enough
};

// Opens `path` read-only on `db`:
//  - `path-wal` exists (a writer has the store open, or one crashed): SQLITE_OPEN_READONLY through
//    the existing -wal and -shm (an -shm the user cannot write is used read-only), so commits
//    still in the WAL are seen. Without its -shm, a reader other than the owner or root is
//    refused with a message rather than leave an -shm of its own.
//  - no -wal: the main file holds every commit. For `check`, for a directory the user cannot
//    write and for a store of another user: immutable=1, no lock and no file created; the view
//    is a snapshot (a writer that starts later reaches the main file only at a checkpoint:
//    1000 pages of WAL, or the end of its run).
//  - no -wal, the owner (or root) in a writable directory: SQLITE_OPEN_READONLY; SQLite creates
//    -wal and -shm owned by the store's owner and keeps seeing later commits.
void open_for_reading(Db& db, const std::string& path, ReadPurpose purpose);

}  // namespace moebench::store_detail
