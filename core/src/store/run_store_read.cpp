// RunStore: reading (runs, params, tags, metrics, spans, traffic, routing) and run lookup.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <vector>

#include "moebench/store/run_store.h"
#include "run_store_impl.h"

namespace moebench {

using store_detail::Stmt;

namespace {

// The last column: for a RUNNING run, when it last recorded anything (its last metric's
// timestamp, else its start): the end time it gets if its process turns out to have vanished.
constexpr const char* kRunColumns =
    "SELECT r.id, r.uuid, r.name, e.name, r.status, r.strategy, r.config_json, r.topology, r.git_rev, r.host, "
    "r.pid, r.start_time, r.end_time, r.ranks, r.process_start, r.boot_id, "
    "CASE WHEN r.status = 'RUNNING' THEN COALESCE((SELECT max(m.timestamp) FROM metrics m WHERE m.run = r.id), "
    "r.start_time) END FROM runs r JOIN experiments e ON e.id = r.experiment_id ";

RunInfo read_run(const Stmt& s) {
  RunInfo r;
  r.id = s.i64(0);
  r.uuid = s.text(1);
  r.name = s.text(2);
  r.experiment = s.text(3);
  r.status = parse_run_status(s.text(4));
  r.strategy = s.text(5);
  r.config_json = s.text(6);
  r.topology = s.text(7);
  r.git_rev = s.text(8);
  r.host = s.text(9);
  r.pid = s.i64(10);
  r.start_time = s.f64(11);
  r.end_time = s.f64(12);
  r.ranks = s.i32(13);
  r.process_start = s.i64(14);
  r.boot_id = s.text(15);
  // A read-only view cannot store the FAILED mark of a vanished run, but still shows it, and
  // the end time mark_vanished_runs stores.
  if (store_detail::run_vanished(r)) {
    r.status = RunStatus::failed;
    r.end_time = s.f64(16);
  }
  return r;
}

bool all_of(const std::string& s, int (*pred)(int)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return pred((unsigned char)c) != 0; });
}

int64_t last_or_max(int64_t last) { return last < 0 ? std::numeric_limits<int64_t>::max() : last; }

std::vector<std::pair<std::string, std::string>> key_values(Stmt& s, int64_t run) {
  Stmt::Scope scope(s);
  s.bind(1, run);
  std::vector<std::pair<std::string, std::string>> out;
  while (s.step()) out.emplace_back(s.text(0), s.text(1));
  return out;
}

}  // namespace

std::optional<RunInfo> RunStore::Impl::load_run(int64_t run) {
  Stmt& s = stmt(std::string(kRunColumns) + "WHERE r.id = ?1");
  Stmt::Scope scope(s);
  s.bind(1, run);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

std::vector<RunInfo> RunStore::Impl::running_runs_of_this_host() {
  Stmt& s = stmt(std::string(kRunColumns) + "WHERE r.status = 'RUNNING' AND r.host = ?1 ORDER BY r.id");
  Stmt::Scope scope(s);
  s.bind(1, store_detail::this_host());
  std::vector<RunInfo> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

void RunStore::Impl::require_run(int64_t run) {
  Stmt& s = stmt("SELECT 1 FROM runs WHERE id = ?1");
  Stmt::Scope scope(s);
  s.bind(1, run);
  if (!s.step()) throw StoreError("no run " + std::to_string(run) + " in " + path());
}

std::vector<RunInfo> RunStore::list_runs(const std::string& experiment) const {
  std::lock_guard lock(impl_->mu);
  Stmt& s = impl_->stmt(std::string(kRunColumns) + "WHERE ?1 = '' OR e.name = ?1 ORDER BY r.id");
  Stmt::Scope scope(s);
  s.bind(1, experiment);
  std::vector<RunInfo> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

RunInfo RunStore::find_run(const std::string& ref) const {
  std::lock_guard lock(impl_->mu);
  Impl& I = *impl_;
  const std::string missing = "no run '" + ref + "' in " + path_;
  if (ref.empty()) throw StoreError(missing);
  // 1. A row id (all digits) takes precedence over a uuid prefix or name of the same text.
  if (ref.size() <= 18 && all_of(ref, ::isdigit))
    if (auto r = I.load_run(std::stoll(ref))) return *r;
  // 2. A full uuid, or a unique uuid prefix of at least 4 hex characters (any case).
  std::string low;
  for (char c : ref) low += (char)std::tolower((unsigned char)c);
  std::vector<int64_t> by_uuid, by_name;
  if (low.size() >= 4 && all_of(low, ::isxdigit)) {
    Stmt& s = I.stmt("SELECT id FROM runs WHERE uuid GLOB ?1 ORDER BY id");  // hex: no GLOB metacharacters
    Stmt::Scope scope(s);
    s.bind(1, low + "*");
    while (s.step()) by_uuid.push_back(s.i64(0));
  }
  // 3. A run name.
  {
    Stmt& s = I.stmt("SELECT id FROM runs WHERE name = ?1 ORDER BY id");
    Stmt::Scope scope(s);
    s.bind(1, ref);
    while (s.step()) by_name.push_back(s.i64(0));
  }
  std::vector<int64_t> all = by_uuid;
  all.insert(all.end(), by_name.begin(), by_name.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (all.empty()) throw StoreError(missing);
  if (all.size() == 1) {
    if (auto r = I.load_run(all[0])) return *r;
    throw StoreError(missing);
  }
  std::string n = std::to_string(all.size());
  if (by_name.empty()) throw StoreError("'" + ref + "' matches " + n + " runs: use more of the uuid");
  std::string ids;
  for (size_t i = 0; i < all.size() && i < 10; ++i) ids += (i ? ", " : "") + std::to_string(all[i]);
  if (all.size() > 10) ids += ", ...";
  if (by_uuid.empty())
    throw StoreError("'" + ref + "' matches " + n + " runs by name (ids " + ids + "): use the id or uuid");
  throw StoreError("'" + ref + "' matches " + n + " runs by uuid prefix and name (ids " + ids +
                   "): use the id or more of the uuid");
}

std::vector<std::pair<std::string, std::string>> RunStore::params(int64_t run) const {
  std::lock_guard lock(impl_->mu);
  impl_->require_run(run);
  return key_values(impl_->stmt("SELECT key, value FROM params WHERE run = ?1 ORDER BY key"), run);
}

std::vector<std::pair<std::string, std::string>> RunStore::tags(int64_t run) const {
  std::lock_guard lock(impl_->mu);
  impl_->require_run(run);
  return key_values(impl_->stmt("SELECT key, value FROM tags WHERE run = ?1 ORDER BY key"), run);
}

std::vector<std::string> RunStore::metric_keys(int64_t run) const {
  std::lock_guard lock(impl_->mu);
  impl_->require_run(run);
  Stmt& s = impl_->stmt("SELECT DISTINCT key FROM metrics WHERE run = ?1 ORDER BY key");
  Stmt::Scope scope(s);
  s.bind(1, run);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

std::vector<MetricPoint> RunStore::metrics(int64_t run, const std::string& key) const {
  std::lock_guard lock(impl_->mu);
  impl_->require_run(run);
  // The (run, step) and (run, key, step) indexes end in the rowid: insertion order within a step.
  Stmt& s = key.empty() ? impl_->stmt("SELECT key, step, value, timestamp FROM metrics WHERE run = ?1 "
                                      "ORDER BY step, rowid")
                        : impl_->stmt("SELECT key, step, value, timestamp FROM metrics WHERE run = ?1 AND key = ?2 "
                                      "ORDER BY step, rowid");
  Stmt::Scope scope(s);
  s.bind(1, run);
  if (!key.empty()) s.bind(2, key);
  std::vector<MetricPoint> out;
  while (s.step()) out.push_back({s.text(0), s.i64(1), s.f64_or_nan(2), s.f64(3)});
  return out;
}

std::vector<int64_t> RunStore::steps_with(int64_t run, RecordTable table) const {
  std::lock_guard lock(impl_->mu);
  impl_->require_run(run);
  // Constant SQL per table (never a name from outside); the (run, step) indexes answer these.
  const char* sql = table == RecordTable::spans     ? "SELECT DISTINCT step FROM spans WHERE run = ?1 ORDER BY step"
                    : table == RecordTable::traffic ? "SELECT DISTINCT step FROM traffic WHERE run = ?1 ORDER BY step"
                                                    : "SELECT DISTINCT step FROM routing WHERE run = ?1 ORDER BY step";
  Stmt& s = impl_->stmt(sql);
  Stmt::Scope scope(s);
  s.bind(1, run);
  std::vector<int64_t> out;
  while (s.step()) out.push_back(s.i64(0));
  return out;
}

std::vector<SpanRow> RunStore::spans(int64_t run, int64_t first, int64_t last) const {
  std::lock_guard lock(impl_->mu);
  impl_->require_run(run);
  Stmt& s = impl_->stmt(
      "SELECT step, rank, stream, name, category, start, duration, bytes, peer, layer, expert, flops, chunk FROM spans "
      "WHERE run = ?1 AND step >= ?2 AND step <= ?3 ORDER BY step, rowid");
  Stmt::Scope scope(s);
  s.bind(1, run).bind(2, first).bind(3, last_or_max(last));
  std::vector<SpanRow> out;
  while (s.step()) {
    SpanRow r;
    r.step = s.i64(0);
    r.rank = s.i32(1);
    r.stream = s.text(2);
    r.name = s.text(3);
    r.category = s.text(4);
    r.start = s.f64(5);
    r.duration = s.f64(6);
    r.bytes = s.i64(7);
    r.peer = s.i32(8);
    r.layer = s.i32(9);
    r.expert = s.i32(10);
    r.flops = s.f64(11);
    r.chunk = s.i32(12);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<TrafficRow> RunStore::traffic(int64_t run, int64_t first, int64_t last) const {
  std::lock_guard lock(impl_->mu);
  impl_->require_run(run);
  Stmt& s = impl_->stmt(
      "SELECT step, rank, peer, link, bytes FROM traffic WHERE run = ?1 AND step >= ?2 AND step <= ?3 "
      "ORDER BY step, rowid");
  Stmt::Scope scope(s);
  s.bind(1, run).bind(2, first).bind(3, last_or_max(last));
  std::vector<TrafficRow> out;
  while (s.step()) out.push_back({s.i64(0), s.i32(1), s.i32(2), s.text(3), s.i64(4)});
  return out;
}

std::vector<RoutingRow> RunStore::routing(int64_t run, int64_t first, int64_t last) const {
  std::lock_guard lock(impl_->mu);
  impl_->require_run(run);
  Stmt& s = impl_->stmt(
      "SELECT step, layer, source_rank, expert, tokens FROM routing WHERE run = ?1 AND step >= ?2 AND step <= ?3 "
      "ORDER BY step, rowid");
  Stmt::Scope scope(s);
  s.bind(1, run).bind(2, first).bind(3, last_or_max(last));
  std::vector<RoutingRow> out;
  while (s.step()) out.push_back({s.i64(0), s.i32(1), s.i32(2), s.i32(3), s.i64(4)});
  return out;
}

}  // namespace moebench
