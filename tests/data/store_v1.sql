-- A run store of schema version 1, as moebench wrote it before migration 2 (0-based steps;
-- "eval after step N" at N - 1; no process_start / boot_id). tst_store_schema loads it with
-- sqlite3_exec and checks what migration 2 makes of it. The schema below is migration 1 as it
-- shipped: this file must not change when the code does.
PRAGMA application_id = 1299137858;
PRAGMA user_version = 1;
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
INSERT INTO experiments VALUES (1, 'default', 1700000000.0);
INSERT INTO runs VALUES (1, '0123456789abcdef0123456789abcdef', 'old', 1, 'FINISHED', 'expert_centric', '{}',
  '1 node x 2 devices', 'abc123', 'old-host', 4242, 2, 1700000000.0, 1700000010.0);
INSERT INTO runs VALUES (2, 'fedcba9876543210fedcba9876543210', 'crashed', 1, 'RUNNING', 'local', '{}', '',
  'abc123', 'old-host', 4343, 1, 1700000100.0, 0);
INSERT INTO params VALUES (1, 'train.steps', '3');
-- run 1: 3 steps, an eval after step 3 (stored at 2)
INSERT INTO metrics VALUES (1, 'loss', 0, 3.0, 1700000001.0), (1, 'loss', 1, 2.5, 1700000002.0),
  (1, 'loss', 2, 2.0, 1700000003.0), (1, 'eval_loss', 2, 2.2, 1700000003.5);
INSERT INTO spans VALUES (1, 0, 0, 'host', 'step', 'compute', 0.0, 0.1, 0, -1, -1, -1),
  (1, 1, 0, 'host', 'step', 'compute', 0.1, 0.1, 0, -1, -1, -1),
  (1, 2, 0, 'host', 'step', 'compute', 0.2, 0.1, 0, -1, -1, -1),
  (1, 2, 1, 'host', 'step', 'compute', 5.2, 0.1, 0, -1, -1, -1);
INSERT INTO traffic VALUES (1, 0, 0, 1, 'intra_node', 100), (1, 1, 0, 1, 'intra_node', 101),
  (1, 2, 0, 1, 'intra_node', 102);
INSERT INTO routing VALUES (1, 0, 1, 0, 0, 10), (1, 1, 1, 0, 0, 11), (1, 2, 1, 0, 0, 12);
-- run 2: one step, then its process vanished
INSERT INTO metrics VALUES (2, 'loss', 0, 4.0, 1700000101.0);
