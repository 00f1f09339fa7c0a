#pragma once
// Internal: the run store's schema, its migrations and the checks made before any write.
#include <cstdint>

#include "sqlite_db.h"

namespace moebench::store_detail {

// PRAGMA application_id of a moebench run store: 'MoEB'.
constexpr int64_t kApplicationId = 0x4D6F4542;

// Files up to this size get a full PRAGMA quick_check when opened; larger ones only the
// structural checks (SQLite itself still reports a corrupt page when a query reaches it).
constexpr int64_t kQuickCheckMaxBytes = int64_t(256) << 20;

// The schema version this build writes (= number of migrations).
int known_schema_version();

// Checks that `db` (just opened, nothing written yet) is an empty database or a moebench run
// store this build can read, then sets the connection pragmas and, in read-write mode,
// switches to WAL and applies the missing migrations in one transaction. Throws StoreError
// with a clear message; never writes to a file that fails the checks. `file_size` is the
// size of the main database file (0 for a new one).
void prepare_schema(Db& db, bool read_only, int64_t file_size);

}  // namespace moebench::store_detail
