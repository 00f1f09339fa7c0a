// `moebench runs import`: another store's runs into the local one (runs_import.h).
#include "runs_import.h"

#include <cstdio>
#include <filesystem>

namespace moebench::cli {

std::vector<ImportedRun> import_store(const std::string& db, const std::string& file) {
  { RunStore check(file, RunStore::Mode::read_only); }  // refused before `db` is created
  std::error_code ec;
  const bool existed = std::filesystem::exists(db, ec);
  try {
    RunStore store(db, RunStore::Mode::read_write);
    return store.import_runs(file);
  } catch (...) {  // a store this import created holds nothing: it goes again (with its WAL files)
    if (!existed)
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix, ec);
    throw;
  }
}

std::string describe_import(const ImportedRun& r, const std::string& db) {
  auto at = [](RunStatus s, int64_t step) {
    return std::string(run_status_name(s)) + (step > 0 ? " at step " + std::to_string(step) : ", no steps");
  };
  const std::string run = "run " + std::to_string(r.run.id) + " (" + r.run.uuid.substr(0, 8) + " '" + r.run.name + "')";
  switch (r.outcome) {
    case ImportedRun::Outcome::added:
      return "added " + run + " into " + db + ": " + at(r.run.status, r.last_step);
    case ImportedRun::Outcome::replaced:
      return "replaced " + run + " in " + db + ": was " + at(r.local_status, r.local_last_step) + ", now " +
             at(r.run.status, r.last_step);
    case ImportedRun::Outcome::unchanged:
      return "kept " + run + " in " + db + ": it is " + at(r.local_status, r.local_last_step) +
             " there, the imported copy " + (r.last_step > 0 ? "is at step " + std::to_string(r.last_step) : "has no steps");
  }
  return {};
}

int runs_import(const std::string& db, const std::string& file) {
  const std::vector<ImportedRun> runs = import_store(db, file);
  int counts[3] = {0, 0, 0};
  for (const ImportedRun& r : runs) {
    std::printf("%s\n", describe_import(r, db).c_str());
    ++counts[int(r.outcome)];
  }
  std::printf("imported %zu run%s from %s: %d added, %d replaced, %d kept\n", runs.size(), runs.size() == 1 ? "" : "s",
              file.c_str(), counts[0], counts[1], counts[2]);
  return 0;
}

}  // namespace moebench::cli
