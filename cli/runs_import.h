#pragma once
// `moebench runs import FILE [--db DB]`: the runs of another moebench store copied into the local
// one (RunStore::import_runs: matched by uuid, a run further on replaces its older copy). Also
// the last step of `moebench launch`, which imports the store it fetched from the host.
#include <string>
#include <vector>

#include "moebench/store/run_store.h"

namespace moebench::cli {

// Checks `file` (a missing, damaged or foreign file throws StoreError naming it, before `db` is
// created or touched), then imports its runs into `db` (created when missing) in one
// transaction. Returns what happened to each run.
std::vector<ImportedRun> import_store(const std::string& db, const std::string& file);

// One line per run: "added run 7 (1a2b3c4d 'tiny') into runs.db: FINISHED at step 12", with the
// local copy's state for a replaced or unchanged one.
std::string describe_import(const ImportedRun& run, const std::string& db);

// The verb: prints describe_import per run and a count; exit 0 (errors throw: StoreError, 1).
int runs_import(const std::string& db, const std::string& file);

}  // namespace moebench::cli
