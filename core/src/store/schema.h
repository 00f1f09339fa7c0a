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

// Runs migrations from+1 .. to on `db` (no transaction of its own).
void apply_migrations(Db& db, int from, int to);

// Checks, reading only, that `db` is an empty database or a moebench run store this build can
// read: SQLite, ours, not corrupt (quick_check up to kQuickCheckMaxBytes of `file_size`), its
// tables as its version defines them (check_schema_shape), not newer than this build; read_only
// also refuses an empty database and an older version. Throws StoreError naming the file.
void check_store(Db& db, bool read_only, int64_t file_size);

// Throws StoreError "<file>: schema damaged (table metrics missing; ...); left unchanged" unless
// every table of schema `version` is in `db` with exactly the columns migrations 1..version
// create (names, types, NOT NULL, defaults, primary key). Tables of other names are allowed.
void check_schema_shape(Db& db, int version);

// For a read-write connection to a file that passed check_store (or is new): WAL mode, the
// connection pragmas, and the missing migrations in one transaction.
void prepare_for_writing(Db& db);

}  // namespace moebench::store_detail
