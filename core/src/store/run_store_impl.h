#pragma once
// Internal: RunStore::Impl, shared by run_store.cpp (open, writing) and run_store_read.cpp.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "moebench/store/run_store.h"
#include "sqlite_db.h"

namespace moebench {

struct RunStore::Impl {
  // Declared first so it is destroyed last: the cached statements are finalized before close.
  store_detail::Db db;
  bool read_only = false;
  bool snapshot = false;  // a read-only connection to an immutable snapshot (read_access.h)
  // One connection, used by one thread at a time: every public method holds this lock.
  std::mutex mu;
  std::unordered_map<std::string, std::unique_ptr<store_detail::Stmt>> cache;

  // A prepared statement for `sql`, prepared once and reused (callers reset it: Stmt::Scope).
  store_detail::Stmt& stmt(const std::string& sql) {
    auto it = cache.find(sql);
    if (it == cache.end()) it = cache.emplace(sql, std::make_unique<store_detail::Stmt>(db, sql)).first;
    return *it->second;
  }

  const std::string& path() const { return db.path(); }
  void require_writable(const char* op) const {
    if (read_only) throw StoreError(path() + ": " + op + ": the run store is open read-only");
  }
  // StoreError "no run 42 in runs.db" unless the run exists.
  void require_run(int64_t run);
  std::optional<RunInfo> load_run(int64_t run);
  // The runs stored as RUNNING on this host, read as every reader sees them (vanished: FAILED).
  std::vector<RunInfo> running_runs_of_this_host();
  // The id of the experiment `name`, created (with `created` as its time) when missing; `op`
  // names the caller in the error. Inside the caller's transaction.
  int64_t experiment_id(const std::string& name, double created, const char* op);
  // Writes run's row (every column but its id) into the runs table: a new row (local_id empty;
  // returns its id) or the row local_id overwritten in place. Inside the caller's transaction.
  int64_t write_run_row(const RunInfo& run, int64_t experiment_id, std::optional<int64_t> local_id = {});
};

namespace store_detail {

// This host's name; whether a RUNNING run of this host lost its process (process_liveness.h:
// it is shown, and on a read-write open stored, as FAILED).
std::string this_host();
bool run_vanished(const RunInfo& r);

double unix_now();
}

}  // namespace moebench
