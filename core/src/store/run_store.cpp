// RunStore: opening (checks, migrations, recovery of vanished runs) and writing.
// Reading is in run_store_read.cpp; the schema in schema.cpp.
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <random>
#include <vector>

#include "moebench/store/run_store.h"
#include "process_liveness.h"
#include "read_access.h"
#include "run_store_impl.h"
#include "schema.h"

namespace moebench {

using store_detail::Stmt;
using store_detail::Txn;

namespace store_detail {

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string this_host() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

bool run_vanished(const RunInfo& r) {
  return r.status == RunStatus::running && r.host == this_host() &&
         process_gone(r.pid, r.process_start, r.boot_id);
}

}  // namespace store_detail

namespace {
using store_detail::this_host;
}  // namespace

int64_t RunStore::Impl::write_run_row(const RunInfo& run, int64_t experiment_id, std::optional<int64_t> local_id) {
  const char* sql =
      local_id ? "UPDATE runs SET uuid = ?1, name = ?2, experiment_id = ?3, status = ?4, strategy = ?5, "
                 "config_json = ?6, topology = ?7, git_rev = ?8, host = ?9, pid = ?10, ranks = ?11, "
                 "start_time = ?12, end_time = ?13, process_start = ?14, boot_id = ?15 WHERE id = ?16"
               : "INSERT INTO runs (uuid, name, experiment_id, status, strategy, config_json, topology, git_rev, "
                 "host, pid, ranks, start_time, end_time, process_start, boot_id) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";
  store_detail::Stmt& r = stmt(sql);
  r.bind(1, run.uuid)
      .bind(2, run.name)
      .bind(3, experiment_id)
      .bind(4, std::string(run_status_name(run.status)))
      .bind(5, run.strategy)
      .bind(6, run.config_json)
      .bind(7, run.topology)
      .bind(8, run.git_rev)
      .bind(9, run.host)
      .bind(10, run.pid)
      .bind(11, run.ranks)
      .bind(12, run.start_time)
      .bind(13, run.end_time)
      .bind(14, run.process_start)
      .bind(15, run.boot_id);
  if (local_id) r.bind(16, *local_id);
  r.run();
  return local_id ? *local_id : db.last_insert_rowid();
}

int64_t RunStore::Impl::experiment_id(const std::string& name, double created, const char* op) {
  stmt("INSERT INTO experiments (name, created) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING")
      .bind(1, name)
      .bind(2, created)
      .run();
  store_detail::Stmt& s = stmt("SELECT id FROM experiments WHERE name = ?1");
  store_detail::Stmt::Scope scope(s);
  s.bind(1, name);
  if (!s.step()) throw StoreError(path() + ": " + op + ": experiment '" + name + "' vanished");
  return s.i64(0);
}

bool run_process_alive(const RunInfo& run) {
  return run.status == RunStatus::running && run.host == this_host() &&
         !store_detail::process_gone(run.pid, run.process_start, run.boot_id);
}

std::string new_run_uuid() {
  std::random_device rd;
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (int w = 0; w < 4; ++w) {
    uint32_t x = rd();
    for (int k = 0; k < 8; ++k) out += hex[(x >> (4 * k)) & 0xf];
  }
  return out;
}

const char* run_status_name(RunStatus s) {
  switch (s) {
    case RunStatus::running: return "RUNNING";
    case RunStatus::finished: return "FINISHED";
    case RunStatus::failed: return "FAILED";
    case RunStatus::killed: return "KILLED";
  }
  return "UNKNOWN";
}

RunStatus parse_run_status(const std::string& s) {
  std::string up;
  for (char c : s) up += (char)std::toupper((unsigned char)c);
  for (RunStatus r : {RunStatus::running, RunStatus::finished, RunStatus::failed, RunStatus::killed})
    if (up == run_status_name(r)) return r;
  throw StoreError("unknown run status '" + s + "' (RUNNING, FINISHED, FAILED or KILLED)");
}

int RunStore::schema_version() { return store_detail::known_schema_version(); }

RunStore::RunStore(const std::string& path, Mode mode) : path_(path), impl_(new Impl) {
  namespace fs = std::filesystem;
  using store_detail::ReadPurpose;
  try {
    impl_->read_only = mode == Mode::read_only;
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    bool exists = fs::exists(st);
    if (exists && fs::is_directory(st)) throw StoreError(path + " is a directory, not a run database");
    if (exists && !fs::is_regular_file(st)) throw StoreError(path + " is not a regular file");
    if (!exists) {
      if (impl_->read_only) throw StoreError(path + " does not exist");
      fs::path parent = fs::path(path).parent_path();
      if (!parent.empty() && !fs::is_directory(parent, ec))
        throw StoreError("cannot create " + path + ": directory " + parent.string() + " does not exist");
    }
    int64_t size = exists ? (int64_t)fs::file_size(path, ec) : 0;
    // Every check is made first, on a connection that can neither write nor leave a -wal or
    // -shm file behind: a file that fails one stays exactly as it was.
    auto configure = [](store_detail::Db& db) {
      sqlite3_busy_timeout(db.handle(), 5000);
      // No checkpoint on close: a reader never writes the main file, and a writer not before
      // prepare_for_writing (the file may be another application's).
      sqlite3_db_config(db.handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int*)nullptr);
    };
    if (exists) {
      // A snapshot check (read_access.h) of a file that a writer changed meanwhile can look
      // corrupt: corruption is reported when the file stayed the same during the check that found
      // it; otherwise the check is made again, with SQLite's locks where the store allows them.
      ReadPurpose purpose = ReadPurpose::check;
      for (int attempt = 1;; ++attempt) {
        const store_detail::FileStamp before = store_detail::file_stamp(path);
        store_detail::Db look;
        const bool snapshot = store_detail::open_for_reading(look, path, purpose);
        configure(look);
        try {
          store_detail::check_store(look, impl_->read_only, size);
          break;
        } catch (const StoreError& e) {
          const bool corrupt = std::string(e.what()).find(" is corrupt (") != std::string::npos;
          if (!snapshot || !corrupt || attempt == 3 || store_detail::file_stamp(path) == before) throw;
        }
        purpose = ReadPurpose::check_live;
        size = (int64_t)fs::file_size(path, ec);
      }
    }
    if (impl_->read_only) {
      impl_->snapshot = store_detail::open_for_reading(impl_->db, path, ReadPurpose::view);
      configure(impl_->db);
      impl_->db.exec("PRAGMA query_only = ON", "set query_only");
    } else {
      impl_->db.open(path, SQLITE_OPEN_READWRITE | (exists ? 0 : SQLITE_OPEN_CREATE));
      configure(impl_->db);
      store_detail::prepare_for_writing(impl_->db);
    }
  } catch (...) {
    delete impl_;
    throw;
  }
  if (!impl_->read_only) {
    try {
      mark_vanished_runs();
    } catch (...) {
      delete impl_;
      throw;
    }
  }
}

RunStore::~RunStore() { delete impl_; }

RunInfo RunStore::create_run(RunInfo info) {
  std::lock_guard lock(impl_->mu);
  Impl& I = *impl_;
  I.require_writable("create_run");
  if (info.experiment.empty()) info.experiment = "default";
  if (info.uuid.empty()) info.uuid = new_run_uuid();
  if (info.start_time == 0) info.start_time = store_detail::unix_now();
  if (info.host.empty()) info.host = this_host();
  if (info.pid == 0) info.pid = (int64_t)::getpid();
  if (info.host == this_host()) {
    if (info.process_start == 0) info.process_start = store_detail::process_start_ticks(info.pid).value_or(0);
    if (info.boot_id.empty()) info.boot_id = store_detail::current_boot_id();
  }

  Txn txn(I.db, "create_run");
  const int64_t experiment_id = I.experiment_id(info.experiment, store_detail::unix_now(), "create_run");
  info.id = I.write_run_row(info, experiment_id);
  txn.commit();
  return info;
}

void RunStore::set_topology(int64_t run, const std::string& topology) {
  std::lock_guard lock(impl_->mu);
  Impl& I = *impl_;
  I.require_writable("set_topology");
  Txn txn(I.db, "set_topology");
  I.require_run(run);
  I.stmt("UPDATE runs SET topology = ?1 WHERE id = ?2").bind(1, topology).bind(2, run).run();
  txn.commit();
}

void RunStore::set_status(int64_t run, RunStatus status, double end_time) {
  std::lock_guard lock(impl_->mu);
  Impl& I = *impl_;
  I.require_writable("set_status");
  if (status != RunStatus::running && end_time <= 0) end_time = store_detail::unix_now();
  Txn txn(I.db, "set_status");
  I.require_run(run);
  I.stmt("UPDATE runs SET status = ?1, end_time = ?2 WHERE id = ?3")
      .bind(1, std::string(run_status_name(status)))
      .bind(2, end_time)
      .bind(3, run)
      .run();
  txn.commit();
  // A run that ended: move the WAL into the main file, so that a copy of that file alone (the
  // GUI fetching a remote store with scp) holds the whole run. Best effort: a reader holding an
  // old snapshot only delays it to the next checkpoint.
  if (status != RunStatus::running) {
    try {
      I.db.exec("PRAGMA wal_checkpoint(TRUNCATE)", "checkpoint");
    } catch (const StoreError&) {
    }
  }
}

void RunStore::log_params(int64_t run, const std::vector<std::pair<std::string, std::string>>& params) {
  std::lock_guard lock(impl_->mu);
  Impl& I = *impl_;
  I.require_writable("log_params");
  Txn txn(I.db, "log_params");
  I.require_run(run);
  Stmt& s = I.stmt("INSERT INTO params (run, key, value) VALUES (?1, ?2, ?3) "
                   "ON CONFLICT (run, key) DO UPDATE SET value = excluded.value");
  for (const auto& [key, value] : params) s.bind(1, run).bind(2, key).bind(3, value).run();
  txn.commit();
}

void RunStore::set_tag(int64_t run, const std::string& key, const std::string& value) {
  std::lock_guard lock(impl_->mu);
  Impl& I = *impl_;
  I.require_writable("set_tag");
  Txn txn(I.db, "set_tag");
  I.require_run(run);
  I.stmt("INSERT INTO tags (run, key, value) VALUES (?1, ?2, ?3) "
         "ON CONFLICT (run, key) DO UPDATE SET value = excluded.value")
      .bind(1, run)
      .bind(2, key)
      .bind(3, value)
      .run();
  txn.commit();
}

void RunStore::log_step(int64_t run, const std::vector<MetricPoint>& metrics, const std::vector<SpanRow>& spans,
                        const std::vector<TrafficRow>& traffic, const std::vector<RoutingRow>& routing) {
  std::lock_guard lock(impl_->mu);
  Impl& I = *impl_;
  I.require_writable("log_step");
  double now = store_detail::unix_now();
  Txn txn(I.db, "log_step");
  I.require_run(run);
  if (!metrics.empty()) {
    Stmt& s = I.stmt("INSERT INTO metrics (run, key, step, value, timestamp) VALUES (?1, ?2, ?3, ?4, ?5)");
    for (const MetricPoint& m : metrics)
      s.bind(1, run).bind(2, m.key).bind(3, m.step).bind(4, m.value).bind(5, m.timestamp > 0 ? m.timestamp : now).run();
  }
  if (!spans.empty()) {
    Stmt& s = I.stmt(
        "INSERT INTO spans (run, step, rank, stream, name, category, start, duration, bytes, peer, layer, expert, "
        "flops, chunk) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
    for (const SpanRow& r : spans)
      s.bind(1, run).bind(2, r.step).bind(3, r.rank).bind(4, r.stream).bind(5, r.name).bind(6, r.category)
          .bind(7, r.start).bind(8, r.duration).bind(9, r.bytes).bind(10, r.peer).bind(11, r.layer)
          .bind(12, r.expert).bind(13, r.flops).bind(14, r.chunk).run();
  }
  if (!traffic.empty()) {
    Stmt& s = I.stmt("INSERT INTO traffic (run, step, rank, peer, link, bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    for (const TrafficRow& r : traffic)
      s.bind(1, run).bind(2, r.step).bind(3, r.rank).bind(4, r.peer).bind(5, r.link).bind(6, r.bytes).run();
  }
  if (!routing.empty()) {
    Stmt& s = I.stmt(
        "INSERT INTO routing (run, step, layer, source_rank, expert, tokens) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    for (const RoutingRow& r : routing)
      s.bind(1, run).bind(2, r.step).bind(3, r.layer).bind(4, r.source_rank).bind(5, r.expert).bind(6, r.tokens).run();
  }
  txn.commit();
}

int RunStore::mark_vanished_runs() {
  std::lock_guard lock(impl_->mu);
  Impl& I = *impl_;
  I.require_writable("mark_vanished_runs");
  // The reading path already shows vanished runs FAILED with their end time: store that.
  std::vector<RunInfo> vanished;
  for (const RunInfo& r : I.running_runs_of_this_host())
    if (r.status == RunStatus::failed) vanished.push_back(r);
  if (vanished.empty()) return 0;  // no write lock taken on the common path
  int marked = 0;
  Txn txn(I.db, "mark_vanished_runs");
  Stmt& u = I.stmt("UPDATE runs SET status = 'FAILED', end_time = ?2 WHERE id = ?1 AND status = 'RUNNING'");
  for (const RunInfo& r : vanished) {
    u.bind(1, r.id).bind(2, r.end_time).run();
    marked += (int)I.db.changes();
  }
  txn.commit();
  return marked;
}

void RunStore::delete_run(int64_t run) {
  std::lock_guard lock(impl_->mu);
  Impl& I = *impl_;
  I.require_writable("delete_run");
  Txn txn(I.db, "delete_run");
  I.require_run(run);
  // params, tags, metrics, spans, traffic and routing follow by ON DELETE CASCADE.
  I.stmt("DELETE FROM runs WHERE id = ?1").bind(1, run).run();
  txn.commit();
}

void RunStore::rename_run(int64_t run, const std::string& name) {
  std::lock_guard lock(impl_->mu);
  Impl& I = *impl_;
  I.require_writable("rename_run");
  if (name.empty()) throw StoreError(path_ + ": rename_run: a run name cannot be empty");
  Txn txn(I.db, "rename_run");
  I.require_run(run);
  I.stmt("UPDATE runs SET name = ?1 WHERE id = ?2").bind(1, name).bind(2, run).run();
  txn.commit();
}

bool RunStore::sees_later_commits() const { return !impl_->snapshot; }

}  // namespace moebench
