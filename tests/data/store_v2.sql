-- A run store of schema version 2, as moebench wrote it before migration 3 (spans without
-- flops and chunk). tst_store_schema loads it with sqlite3_exec and checks what migration 3
-- makes of it. The schema below is migrations 1 and 2 as they shipped (migration 2's columns
-- written into CREATE TABLE runs): this file must not change when the code does.
PRAGMA application_id = 1299137858;
PRAGMA user_version = 2;
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
  end_time      REAL NOT NULL DEFAULT 0,             -- 0 while running
  process_start INTEGER NOT NULL DEFAULT 0,
  boot_id       TEXT NOT NULL DEFAULT ''
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
INSERT INTO runs VALUES (1, '00112233445566778899aabbccddeeff', 'v2', 1, 'FINISHED', 'expert_centric', '{}',
  '1 node x 2 devices', 'abc123', 'old-host', 4242, 2, 1700000000.0, 1700000010.0, 123456, 'boot-v2');
INSERT INTO metrics VALUES (1, 'loss', 1, 3.0, 1700000001.0), (1, 'loss', 2, 2.5, 1700000002.0);
-- step 1: a compute and a comm span on rank 0; step 2: the comm span on rank 1
INSERT INTO spans VALUES (1, 1, 0, 'compute', 'moe.experts', 'compute', 0.01, 0.02, 0, -1, 1, 3),
  (1, 1, 0, 'comm.inter', 'moe.dispatch', 'comm', 0.0, 0.01, 4096, 1, 1, -1),
  (1, 2, 1, 'comm.inter', 'moe.dispatch', 'comm', 0.1, 0.01, 2048, 0, 1, -1);
INSERT INTO traffic VALUES (1, 1, 0, 1, 'inter_node', 4096), (1, 2, 1, 0, 'inter_node', 2048);
INSERT INTO routing VALUES (1, 1, 1, 0, 3, 10), (1, 2, 1, 1, 3, 12);
