#pragma once
// RunStore: the SQLite run database (MLflow's tracking schema as the model) that every run,
// measured or predicted, is kept in. WAL mode, versioned schema with migrations, every SQL
// statement parameterised. One RunStore is one connection; readers and a writer may use the
// same file at once (WAL). Errors throw StoreError naming the file and what is wrong.
// A RunStore may be shared between threads (each call holds its lock); one connection each.
// Every method taking a run id throws StoreError "no run 42 in runs.db" for an unknown id.
// Metric values may be NaN or +-Inf (NaN is stored as NULL and read back as NaN).
//
// Tables: experiments, runs, params, metrics, tags, spans, traffic, routing (see schema.cpp).
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace moebench {

// The experiment of the benchmarks' records (bench gemm / bench comm results runs carry).
inline constexpr const char* kBenchExperiment = "bench";

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class RunStatus { running, finished, failed, killed };
const char* run_status_name(RunStatus s);  // "RUNNING", "FINISHED", "FAILED", "KILLED"
// A new random run uuid: 32 lower-case hex characters (a launcher may name a run in advance).
std::string new_run_uuid();
RunStatus parse_run_status(const std::string& s);

struct RunInfo {
  int64_t id = 0;            // row id
  std::string uuid;          // 32 hex chars
  std::string name;
  std::string experiment;    // experiment name ("default" when none)
  RunStatus status = RunStatus::running;
  std::string strategy;
  std::string config_json;   // canonical resolved config
  std::string topology;      // "2 nodes x 2 devices (virtual)"
  std::string git_rev;
  std::string host;
  int64_t pid = 0;
  int64_t process_start = 0; // pid's start, clock ticks after boot (/proc/<pid>/stat field 22); 0 unknown
  std::string boot_id;       // the host's boot id at the start; "" unknown
  double start_time = 0;     // unix seconds
  double end_time = 0;       // 0 while running (a vanished run: its last recorded time)
  int ranks = 1;
};

// Whether the process that records a RUNNING run is known to be alive: the run is of this host
// and its process is not gone (see RunStore::mark_vanished_runs). False for runs of other
// hosts, whose processes cannot be seen from here.
bool run_process_alive(const RunInfo& run);

// Steps are 1-based: step k is the k-th optimizer step of the run (what `moebench run` prints as
// "step k/N"; an evaluation after N steps is at step N).
struct MetricPoint {
  std::string key;
  int64_t step = 0;
  double value = 0;
  double timestamp = 0;  // unix seconds
};

// One executed task (runtime Span) as stored.
struct SpanRow {
  int64_t step = 0;
  int rank = 0;
  std::string stream, name, category;
  double start = 0, duration = 0;  // seconds; start relative to the rank's executor epoch
  int64_t bytes = 0;
  int peer = -1, layer = -1, expert = -1;
  double flops = 0;  // the task's FLOPs (0: none, or recorded before schema 3)
  int chunk = -1;    // chunk index of a chunked task, else -1
};

struct TrafficRow {
  int64_t step = 0;
  int rank = 0, peer = 0;
  std::string link;  // "intra_node" | "inter_node"
  int64_t bytes = 0;
};

struct RoutingRow {
  int64_t step = 0;
  int layer = 0, source_rank = 0, expert = 0;
  int64_t tokens = 0;
};

enum class RecordTable { spans, traffic, routing };

// What RunStore::import_runs did with one run of the other store.
struct ImportedRun {
  enum class Outcome {
    added,      // its uuid was not here: added with a new local id
    replaced,   // here, but the incoming copy is further on: it replaced the local one (same local id)
    unchanged,  // here and as far on (or further): the local copy was kept
  };
  Outcome outcome = Outcome::added;
  RunInfo run;                 // as this store now holds it (local id)
  int64_t last_step = 0;       // the incoming copy's last recorded step (0: none)
  RunStatus local_status = RunStatus::running;  // replaced / unchanged: the local copy before the import
  int64_t local_last_step = 0;
};

class RunStore {
 public:
  enum class Mode { read_write, read_only };
  // Opens (read_write: creates if missing) and migrates the database; marks RUNNING runs whose
  // process is gone as FAILED, ended at their last recorded time (see run_vanished below).
  // Throws StoreError for a file that is not a SQLite database, is corrupt, whose tables do not
  // match the schema version it claims ("runs.db: schema damaged (table metrics missing); left
  // unchanged"), or has a newer schema than this build knows ("runs.db has schema version 7;
  // this moebench knows up to 2: upgrade moebench"). Every check is made on a read-only
  // connection: a file that fails one is never written to. An empty (0-byte) file is an empty
  // SQLite database: read_write makes it a new store, read_only refuses it ("runs.db is empty").
  // read_only never writes, and works in a directory the user cannot write (read_access.h: a
  // store nobody has open is then read as a snapshot of its main file).
  explicit RunStore(const std::string& path, Mode mode = Mode::read_write);
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::string& path() const { return path_; }
  static int schema_version();  // the version this build writes

  // --- writing (rank 0 of a run) ---
  // Creates the experiment when needed; fills id, uuid, start_time, host, pid (this process)
  // when empty, and for a pid of this host, its process_start and boot_id when unknown.
  RunInfo create_run(RunInfo info);
  // end_time <= 0 with a status other than RUNNING means now. Ending a run also checkpoints the
  // WAL into the main database file (a copy of that file alone then holds the run).
  void set_status(int64_t run, RunStatus status, double end_time);
  // The run's topology text, once known (a run is recorded before its ranks have set it up).
  void set_topology(int64_t run, const std::string& topology);
  // Logging a key again replaces its value (as set_tag does).
  void log_params(int64_t run, const std::vector<std::pair<std::string, std::string>>& params);
  void set_tag(int64_t run, const std::string& key, const std::string& value);
  // One step's records in one transaction (a crash never leaves half a step). A metric
  // timestamp <= 0 means now.
  void log_step(int64_t run, const std::vector<MetricPoint>& metrics, const std::vector<SpanRow>& spans,
                const std::vector<TrafficRow>& traffic, const std::vector<RoutingRow>& routing);
  // Stores the FAILED status of the vanished runs (the reading methods already show them so);
  // returns how many. A RUNNING run has vanished when it is of this host and its process is
  // certainly gone: the host rebooted, no process has the pid, the process is a zombie, or the
  // pid now names a process with another start time. Its end_time becomes the timestamp of its
  // last metric (its start_time without any).
  int mark_vanished_runs();

  // --- reading ---
  // Runs as stored, except that a vanished run shows as FAILED with its end_time as above.
  std::vector<RunInfo> list_runs(const std::string& experiment = "") const;
  // By row id, full uuid, unique uuid prefix (>= 4 chars) or unique name; StoreError
  // ("no run 'abc' in runs.db") when there is none, or when a prefix/name is ambiguous.
  RunInfo find_run(const std::string& ref) const;
  std::vector<std::pair<std::string, std::string>> params(int64_t run) const;
  std::vector<std::pair<std::string, std::string>> tags(int64_t run) const;
  std::vector<std::string> metric_keys(int64_t run) const;
  std::vector<MetricPoint> metrics(int64_t run, const std::string& key = "") const;  // by step
  // Steps [first, last] (inclusive; -1 = open end).
  std::vector<SpanRow> spans(int64_t run, int64_t first = 0, int64_t last = -1) const;
  std::vector<TrafficRow> traffic(int64_t run, int64_t first = 0, int64_t last = -1) const;
  std::vector<RoutingRow> routing(int64_t run, int64_t first = 0, int64_t last = -1) const;
  // The distinct steps that have rows in `table`, ascending (step selectors of the GUI).
  std::vector<int64_t> steps_with(int64_t run, RecordTable table) const;
  void delete_run(int64_t run);  // the run and all its rows
  // Copies runs from the moebench store `other_db` (every run, or those whose uuid is in
  // `uuids`), each with every row it owns (params, tags, metrics, spans, traffic, routing: every
  // table with a `run` column), matched by uuid (run_store_import.cpp has the rule):
  //  - a uuid not here is added, under a new local id, in the experiment of its name (created
  //    when missing);
  //  - a uuid here is replaced by the incoming copy when that copy is further on: more recorded
  //    steps (the largest metric step), or as many and ended (FINISHED / FAILED / KILLED) where
  //    the local one is RUNNING. The run keeps its local id, and its local tags whose keys the
  //    incoming copy lacks (notes and tags set here) are kept. Otherwise the local copy stays.
  // The other store is opened read-only and checked like any store (a missing, damaged or
  // foreign file, or another schema version, throws StoreError naming it); runs are read as a
  // reader sees them (a vanished RUNNING run of this host as FAILED). All in one transaction:
  // on any error nothing here changes. A uuid of `uuids` that the other store lacks throws.
  std::vector<ImportedRun> import_runs(const std::string& other_db, const std::vector<std::string>& uuids = {});
  // A new name for the run (not empty; other runs may share it: find_run then refuses the name).
  void rename_run(int64_t run, const std::string& name);
  // Whether this connection sees commits made after it opened: false for a read-only store read
  // as a snapshot of its main file (read_access.h), which a reader opens again to see them.
  bool sees_later_commits() const;

 private:
  struct Impl;
  std::string path_;
  Impl* impl_;
};

}  // namespace moebench
