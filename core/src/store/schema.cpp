// The run store schema: migrations as an ordered list of SQL scripts, the version kept in
// PRAGMA user_version, the store marked by PRAGMA application_id. Opening a file checks it
// before anything is written: a file that is not SQLite, a SQLite database of another
// application, a corrupt store, a store whose tables do not match its version (schema_shape.cpp)
// or a store of a newer schema is refused and left as it was.
#include "schema.h"

#include <string>
#include <vector>

namespace moebench::store_detail {

namespace {

// Migration k (1-based) takes the schema from version k-1 to k. Append only; never edit a
// script that has shipped. Each runs inside the migration transaction.
const char* const kMigrations[] = {
    // 1: the initial schema (MLflow's tracking tables + spans, traffic, routing).
    R"sql(
CREATE TABLE experiments (
  id      INTEGER PRIMARY KEY,
  name    TEXT NOT NULL UNIQUE,
  created REAL NOT NULL                -- unix seconds
);
CREATE TABLE runs (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,   -- ids of deleted runs are never reused
  uuid          TEXT NOT NULL UNIQUE,                -- 32 lower-case hex characters
  name          TEXT NOT NULL DEFAULT '',
  experiment_id INTEGER NOT NULL REFERENCES experiments(id),
  status        TEXT NOT NULL CHECK (status IN ('RUNNING', 'FINISHED', 'FAILED', 'KILLED')),
  strategy      TEXT NOT NULL DEFAULT '',
  config_json   TEXT NOT NULL DEFAULT '',            -- canonical resolved config
  topology      TEXT NOT NULL DEFAULT '',
  git_rev       TEXT NOT NULL DEFAULT '',
  host          TEXT NOT NULL DEFAULT '',
  pid           INTEGER NOT NULL DEFAULT 0,
  ranks         INTEGER NOT NULL DEFAULT 1,
  start_time    REAL NOT NULL,                       -- unix seconds
  end_time      REAL NOT NULL DEFAULT 0              -- 0 while running
);
CREATE INDEX runs_experiment ON runs (experiment_id);
CREATE INDEX runs_name ON runs (name);
CREATE INDEX runs_status_host ON runs (status, host);
CREATE TABLE params (
  run   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key   TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run, key)
) WITHOUT ROWID;
CREATE TABLE tags (
  run   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key   TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run, key)
) WITHOUT ROWID;
CREATE TABLE metrics (
  run       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key       TEXT NOT NULL,
  step      INTEGER NOT NULL,
  value     REAL,                      -- NULL stands for NaN (SQLite stores NaN as NULL)
  timestamp REAL NOT NULL              -- unix seconds
);
CREATE INDEX metrics_run_step ON metrics (run, step);
CREATE INDEX metrics_run_key_step ON metrics (run, key, step);
CREATE TABLE spans (
  run      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step     INTEGER NOT NULL,
  rank     INTEGER NOT NULL,
  stream   TEXT NOT NULL,
  name     TEXT NOT NULL,
  category TEXT NOT NULL,
  start    REAL NOT NULL,              -- seconds from the rank's executor epoch
  duration REAL NOT NULL,              -- seconds
  bytes    INTEGER NOT NULL DEFAULT 0,
  peer     INTEGER NOT NULL DEFAULT -1,
  layer    INTEGER NOT NULL DEFAULT -1,
  expert   INTEGER NOT NULL DEFAULT -1
);
CREATE INDEX spans_run_step ON spans (run, step);
CREATE TABLE traffic (
  run   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step  INTEGER NOT NULL,
  rank  INTEGER NOT NULL,
  peer  INTEGER NOT NULL,
  link  TEXT NOT NULL,                 -- intra_node | inter_node
  bytes INTEGER NOT NULL
);
CREATE INDEX traffic_run_step ON traffic (run, step);
CREATE TABLE routing (
  run         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step        INTEGER NOT NULL,
  layer       INTEGER NOT NULL,
  source_rank INTEGER NOT NULL,
  expert      INTEGER NOT NULL,
  tokens      INTEGER NOT NULL
);
CREATE INDEX routing_run_step ON routing (run, step);
)sql",
    // 2: who wrote a run, beyond its pid (Linux reuses pids, and a reboot starts them over): the
    //    process's start time and the host's boot id, so a RUNNING run whose pid now names
    //    another process counts as vanished. And steps become 1-based everywhere: step k is the
    //    k-th optimizer step, as `moebench run` prints it ("step 1/300", "eval after step 50",
    //    checkpoint step_000300). Version 1 stored the k-th step as k - 1 and "eval after step
    //    N" as N - 1 (at 0 for an eval after 0 steps, which this moves to 1 with the rest).
    R"sql(
ALTER TABLE runs ADD COLUMN process_start INTEGER NOT NULL DEFAULT 0;  -- /proc/<pid>/stat starttime (clock ticks after boot); 0 unknown
ALTER TABLE runs ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';          -- /proc/sys/kernel/random/boot_id at the start; '' unknown
UPDATE metrics SET step = step + 1;
UPDATE spans SET step = step + 1;
UPDATE traffic SET step = step + 1;
UPDATE routing SET step = step + 1;
)sql",
    // 3: spans carry the rest of the runtime Span's typed cost: the task's FLOPs and its chunk
    //    (Tutel / MoNTA chunk index). Spans recorded before keep flops 0 (unknown) and chunk -1.
    R"sql(
ALTER TABLE spans ADD COLUMN flops REAL NOT NULL DEFAULT 0;
ALTER TABLE spans ADD COLUMN chunk INTEGER NOT NULL DEFAULT -1;
)sql",
};

constexpr int kKnownVersion = int(sizeof(kMigrations) / sizeof(kMigrations[0]));

struct Probe {
  int64_t application_id = 0;
  int64_t version = 0;
  std::vector<std::string> tables;  // user tables (not sqlite_*)

  bool empty() const { return application_id == 0 && version == 0 && tables.empty(); }
  bool ours() const { return application_id == kApplicationId; }
};

// The first reads of the file: a file that is not a database or is corrupt fails here.
Probe probe(Db& db) {
  const std::string& path = db.path();
  try {
    Probe p;
    p.application_id = db.query_int("PRAGMA application_id", "read application_id");
    p.version = db.query_int("PRAGMA user_version", "read user_version");
    Stmt s(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!' "
               "ORDER BY name");
    while (s.step()) p.tables.push_back(s.text(0));
    return p;
  } catch (const StoreError& e) {
    if (db.last_error() == SQLITE_NOTADB)
      throw StoreError(path + " is not a moebench run database (file is not a database)");
    if (db.last_error() == SQLITE_CORRUPT)
      throw StoreError(path + " is corrupt (database disk image is malformed); it was left unchanged");
    throw;
  }
}

std::string describe(const Probe& p) {
  std::string out = "application_id " + std::to_string(p.application_id) + ", user_version " +
                    std::to_string(p.version) + ", tables: ";
  if (p.tables.empty()) return out + "none";
  for (size_t i = 0; i < p.tables.size() && i < 8; ++i) out += (i ? ", " : "") + p.tables[i];
  if (p.tables.size() > 8) out += ", ...";
  return out;
}

// Refuses what is not ours to open; returns normally for an empty database or our store.
void check_probe(const std::string& path, const Probe& p) {
  if (p.empty()) return;
  if (!p.ours() || p.version < 1)
    throw StoreError(path + " is a SQLite database but not a moebench run store (" + describe(p) +
                     "); it was left unchanged");
  if (p.version > kKnownVersion)
    throw StoreError(path + " has schema version " + std::to_string(p.version) + "; this moebench knows up to " +
                     std::to_string(kKnownVersion) + ": upgrade moebench");
}

void quick_check(Db& db) {
  const std::string& path = db.path();
  std::vector<std::string> problems;
  try {
    Stmt s(db, "PRAGMA quick_check(3)");
    while (s.step()) problems.push_back(s.text(0));
  } catch (const StoreError&) {
    if (db.last_error() == SQLITE_CORRUPT || db.last_error() == SQLITE_NOTADB)
      throw StoreError(path + " is corrupt (database disk image is malformed); it was left unchanged");
    throw;
  }
  if (problems.size() == 1 && problems[0] == "ok") return;
  // quick_check rows may hold several lines and a "*** in database main ***" header: one line.
  std::string detail;
  for (const std::string& row : problems) {
    size_t from = 0;
    while (from <= row.size()) {
      size_t end = row.find('\n', from);
      if (end == std::string::npos) end = row.size();
      std::string line = row.substr(from, end - from);
      if (!line.empty() && line.rfind("***", 0) != 0) detail += (detail.empty() ? "" : "; ") + line;
      from = end + 1;
    }
  }
  if (detail.empty()) detail = "quick_check failed";
  throw StoreError(path + " is corrupt (" + detail + "); it was left unchanged");
}

void migrate(Db& db) {
  const std::string& path = db.path();
  Txn txn(db, "migrate schema");
  // Another process may have created or migrated the store since the probe: look again,
  // now under the write lock.
  Probe p = probe(db);
  check_probe(path, p);
  if (p.version >= kKnownVersion) return;  // the Txn rolls back its empty transaction
  apply_migrations(db, (int)p.version, kKnownVersion);
  // Pragmas take no parameters; both values are this build's own integer constants.
  db.exec("PRAGMA user_version = " + std::to_string(kKnownVersion), "set user_version");
  db.exec("PRAGMA application_id = " + std::to_string(kApplicationId), "set application_id");
  txn.commit();
}

}  // namespace

int known_schema_version() { return kKnownVersion; }

void apply_migrations(Db& db, int from, int to) {
  for (int v = from + 1; v <= to; ++v)
    db.exec(kMigrations[v - 1], "migration to schema version " + std::to_string(v));
}

void check_store(Db& db, bool read_only, int64_t file_size) {
  const std::string& path = db.path();
  Probe p = probe(db);
  check_probe(path, p);
  if (p.empty()) {
    if (read_only) throw StoreError(path + " is empty: it holds no moebench run store yet");
    return;
  }
  if (file_size <= kQuickCheckMaxBytes) quick_check(db);
  check_schema_shape(db, (int)p.version);
  if (read_only && p.version < kKnownVersion)
    throw StoreError(path + " has schema version " + std::to_string(p.version) + "; this moebench needs " +
                     std::to_string(kKnownVersion) + ": open it once read-write to migrate it (the next `moebench run` "
                     "into it does)");
}

void prepare_for_writing(Db& db) {
  const std::string& path = db.path();
  if (sqlite3_db_readonly(db.handle(), "main") == 1)
    throw StoreError(path + " cannot be opened for writing (no write permission?)");
  // The file passed check_store (or is new): the last writer to close checkpoints the WAL as usual.
  sqlite3_db_config(db.handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, (int*)nullptr);
  // Outside any transaction: journal_mode and foreign_keys cannot change inside one.
  db.query_text("PRAGMA journal_mode = WAL", "set journal_mode");
  db.exec("PRAGMA synchronous = NORMAL", "set synchronous");
  db.exec("PRAGMA foreign_keys = ON", "set foreign_keys");
  // Only a store that needs it takes the write lock (a run may be writing the store already).
  if (db.query_int("PRAGMA user_version", "read user_version") < kKnownVersion) migrate(db);
}

}  // namespace moebench::store_detail
