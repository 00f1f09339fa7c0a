// RunStore::import_runs: runs of another moebench store copied into this one, matched by uuid
// (a remote launch fetches the run folder's store and imports it into the local one).
//
// The rule for a uuid both stores hold: the incoming copy replaces the local one when it is the
// same run further on, i.e. it has recorded more steps (the largest step of any metric), or as
// many and it has ended (FINISHED, FAILED, KILLED) while the local copy is RUNNING. Otherwise
// (the same copy imported again, an older copy, or a local copy that went further) the local
// copy stays: importing twice changes nothing. A replaced run keeps its local id, so what shows
// it keeps showing it, and keeps the local tags whose keys the incoming copy lacks (the notes
// and tags a user set here); every other row is the incoming copy's.
//
// Rows are copied generically: every table of this store with a `run` column (params, tags,
// metrics, spans, traffic, routing) is copied column by column with the values as stored, the
// run column renumbered to the local id. No row refers to a run other than through that column
// (tags hold text, not run ids), so nothing else is renumbered.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "moebench/store/run_store.h"
#include "run_store_impl.h"

namespace moebench {

using store_detail::Db;
using store_detail::Stmt;
using store_detail::Txn;

namespace {

struct RunTable {
  std::string name;
  std::vector<std::string> columns;  // `run` first
  bool rowid = true;                 // rows have a rowid: copied in its order (readers order by it)
};

std::vector<std::string> table_names(Db& db) {
  Stmt s(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

std::vector<std::string> column_names(Db& db, const std::string& table) {
  Stmt s(db, "SELECT name FROM pragma_table_info(?1) ORDER BY cid");
  s.bind(1, table);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

std::string quoted(const std::string& identifier) {
  std::string out = "\"";
  for (char c : identifier) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The tables of this store whose rows belong to a run, with the columns both stores have.
std::vector<RunTable> run_tables(Db& here, Db& other) {
  const std::vector<std::string> theirs = table_names(other);
  std::vector<RunTable> out;
  for (const std::string& name : table_names(here)) {
    if (name == "runs" || std::find(theirs.begin(), theirs.end(), name) == theirs.end()) continue;
    const std::vector<std::string> cols = column_names(here, name);
    if (std::find(cols.begin(), cols.end(), "run") == cols.end()) continue;
    const std::vector<std::string> other_cols = column_names(other, name);
    RunTable t{name, {"run"}, true};
    {
      Stmt w(here, "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1");
      w.bind(1, name);
      t.rowid = !(w.step() && w.i64(0) != 0);
    }
    for (const std::string& c : cols)
      if (c != "run" && std::find(other_cols.begin(), other_cols.end(), c) != other_cols.end()) t.columns.push_back(c);
    out.push_back(std::move(t));
  }
  return out;
}

int64_t last_step(Db& db, int64_t run) {
  Stmt s(db, "SELECT COALESCE(max(step), 0) FROM metrics WHERE run = ?1");
  s.bind(1, run);
  return s.step() ? s.i64(0) : 0;
}

// Whether the incoming copy is the same run further on than the local one.
bool further_on(const RunInfo& in, int64_t in_step, const RunInfo& local, int64_t local_step) {
  if (in_step != local_step) return in_step > local_step;
  return in.status != RunStatus::running && local.status == RunStatus::running;
}

// A read transaction on the other store: every read sees one state of it.
class ReadTxn {
 public:
  explicit ReadTxn(Db& db) : db_(db) { db_.exec("BEGIN", "import: begin reading"); }
  ~ReadTxn() { sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr); }
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;

 private:
  Db& db_;
};

}  // namespace

std::vector<ImportedRun> RunStore::import_runs(const std::string& other_db, const std::vector<std::string>& uuids) {
  // Opening checks the file as every store is checked (missing, not SQLite, foreign, corrupt,
  // damaged schema, another version): it throws naming the file before anything here changes.
  RunStore other(other_db, Mode::read_only);
  // Read as a reader sees them (a vanished RUNNING run of this host is FAILED), all in one
  // read transaction of the other store. (`other` is this function's own: no lock needed.)
  Db& src = other.impl_->db;
  ReadTxn reading(src);
  std::vector<RunInfo> incoming;
  {
    const std::vector<RunInfo> all = other.list_runs();
    const std::set<std::string> wanted(uuids.begin(), uuids.end());
    for (const std::string& u : wanted)
      if (std::none_of(all.begin(), all.end(), [&](const RunInfo& r) { return r.uuid == u; }))
        throw StoreError(other_db + ": no run with uuid " + u + " to import");
    for (const RunInfo& r : all)
      if (wanted.empty() || wanted.count(r.uuid)) incoming.push_back(r);
  }

  std::lock_guard lock(impl_->mu);
  Impl& I = *impl_;
  I.require_writable("import_runs");
  const std::vector<RunTable> tables = run_tables(I.db, src);
  std::vector<ImportedRun> out;
  Txn txn(I.db, "import_runs");
  for (const RunInfo& in : incoming) {
    ImportedRun result;
    result.last_step = last_step(src, in.id);
    std::optional<int64_t> local_id;
    {
      Stmt& s = I.stmt("SELECT id FROM runs WHERE uuid = ?1");
      Stmt::Scope scope(s);
      s.bind(1, in.uuid);
      if (s.step()) local_id = s.i64(0);
    }
    std::vector<std::pair<std::string, std::string>> kept_tags;
    if (local_id) {
      const RunInfo local = *I.load_run(*local_id);
      result.local_status = local.status;
      result.local_last_step = last_step(I.db, *local_id);
      if (!further_on(in, result.last_step, local, result.local_last_step)) {
        result.outcome = ImportedRun::Outcome::unchanged;
        result.run = local;
        out.push_back(result);
        continue;
      }
      result.outcome = ImportedRun::Outcome::replaced;
      Stmt& t = I.stmt("SELECT key, value FROM tags WHERE run = ?1");
      Stmt::Scope scope(t);
      t.bind(1, *local_id);
      while (t.step()) kept_tags.emplace_back(t.text(0), t.text(1));
    }

    // The experiment, by name (created with the other store's creation time when missing).
    double created = store_detail::unix_now();
    {
      Stmt s(src, "SELECT created FROM experiments WHERE name = ?1");
      s.bind(1, in.experiment);
      if (s.step()) created = s.f64(0);
    }
    const int64_t experiment_id = I.experiment_id(in.experiment, created, "import_runs");

    // The run's own row: inserted, or the local row overwritten in place (its id kept).
    const int64_t id = I.write_run_row(in, experiment_id, local_id);

    // Every row the run owns, column by column as stored.
    for (const RunTable& t : tables) {
      if (local_id) I.stmt("DELETE FROM " + quoted(t.name) + " WHERE run = ?1").bind(1, id).run();
      std::string cols, params;
      for (size_t c = 0; c < t.columns.size(); ++c) {
        cols += (c ? ", " : "") + quoted(t.columns[c]);
        params += (c ? ", ?" : "?") + std::to_string(c + 1);
      }
      Stmt read(src, "SELECT " + cols + " FROM " + quoted(t.name) + " WHERE run = ?1" +
                         (t.rowid ? " ORDER BY rowid" : ""));
      read.bind(1, in.id);
      Stmt& write = I.stmt("INSERT INTO " + quoted(t.name) + " (" + cols + ") VALUES (" + params + ")");
      while (read.step()) {
        write.bind(1, id);
        for (int c = 1; c < (int)t.columns.size(); ++c) write.bind_value(c + 1, read.value(c));
        write.run();
      }
    }
    for (const auto& [key, value] : kept_tags)
      I.stmt("INSERT INTO tags (run, key, value) VALUES (?1, ?2, ?3) ON CONFLICT (run, key) DO NOTHING")
          .bind(1, id)
          .bind(2, key)
          .bind(3, value)
          .run();
    result.run = *I.load_run(id);
    out.push_back(result);
  }
  txn.commit();
  return out;
}

}  // namespace moebench
