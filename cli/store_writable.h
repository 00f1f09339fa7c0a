#pragma once
// The run store a command will record into (store.db, --db), checked before anything starts:
// what SQLite would only find when rank 0 opens it, after mpirun started every rank.
#include <string>

namespace moebench::cli {

// Throws UsageError naming the store and why it cannot be written: its folder does not exist
// or is not a folder, it is a folder itself or not a regular file, the file is read-only for
// this user, or the folder is not writable (SQLite keeps <db>-wal and <db>-shm beside it)
// while those files are missing or read-only. `named_as` is how the command names the path,
// e.g. "store.db (--db)".
void check_store_writable(const std::string& db, const std::string& named_as);

}  // namespace moebench::cli
