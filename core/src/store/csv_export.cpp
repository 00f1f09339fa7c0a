// export_csv: a run's rows as CSV files (layout in csv_export.h).
#include "moebench/store/csv_export.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace moebench {

namespace {

std::string num(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
std::string num(int64_t v) { return std::to_string(v); }
std::string num(int v) { return std::to_string(v); }

// Writes one file: a header and rows of already formatted fields.
class CsvFile {
 public:
  CsvFile(const std::filesystem::path& path, std::initializer_list<const char*> header) : path_(path) {
    out_.open(path, std::ios::binary | std::ios::trunc);
    if (!out_) fail();
    bool first = true;
    for (const char* h : header) {
      if (!first) out_ << ',';
      out_ << h;
      first = false;
    }
    out_ << '\n';
  }
  void row(std::initializer_list<std::string> fields) {
    bool first = true;
    for (const auto& f : fields) {
      if (!first) out_ << ',';
      out_ << csv_field(f);
      first = false;
    }
    out_ << '\n';
  }
  void close() {
    out_.close();
    if (!out_) fail();
  }

 private:
  [[noreturn]] void fail() {
    throw std::runtime_error("cannot write " + path_.string() + ": " + std::strerror(errno));
  }
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace

std::string csv_field(const std::string& value) {
  const bool quote = value.find_first_of(",\"\r\n") != std::string::npos ||
                     (!value.empty() && (value.front() == ' ' || value.back() == ' '));
  if (!quote) return value;
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

void export_csv(const RunStore& store, const RunInfo& run, const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw std::runtime_error("cannot create folder " + dir + ": " + ec.message());

  {
    CsvFile f(root / "run.csv", {"id", "uuid", "name", "experiment", "status", "strategy", "topology", "git_rev",
                                 "host", "pid", "start_time", "end_time", "ranks", "config_json"});
    f.row({num(run.id), run.uuid, run.name, run.experiment, run_status_name(run.status), run.strategy, run.topology,
           run.git_rev, run.host, num(run.pid), num(run.start_time), run.end_time > 0 ? num(run.end_time) : "",
           num(run.ranks), run.config_json});
    f.close();
  }
  {
    CsvFile f(root / "params.csv", {"key", "value"});
    for (const auto& [k, v] : store.params(run.id)) f.row({k, v});
    f.close();
  }
  {
    CsvFile f(root / "tags.csv", {"key", "value"});
    for (const auto& [k, v] : store.tags(run.id)) f.row({k, v});
    f.close();
  }
  {
    CsvFile f(root / "metrics.csv", {"step", "key", "value", "timestamp"});
    for (const auto& m : store.metrics(run.id)) f.row({num(m.step), m.key, num(m.value), num(m.timestamp)});
    f.close();
  }
  {
    CsvFile f(root / "spans.csv",
              {"step", "rank", "stream", "name", "category", "start", "duration", "bytes", "peer", "layer", "expert"});
    for (const auto& s : store.spans(run.id))
      f.row({num(s.step), num(s.rank), s.stream, s.name, s.category, num(s.start), num(s.duration), num(s.bytes),
             num(s.peer), num(s.layer), num(s.expert)});
    f.close();
  }
  {
    CsvFile f(root / "traffic.csv", {"step", "rank", "peer", "link", "bytes"});
    for (const auto& t : store.traffic(run.id)) f.row({num(t.step), num(t.rank), num(t.peer), t.link, num(t.bytes)});
    f.close();
  }
  {
    CsvFile f(root / "routing.csv", {"step", "layer", "source_rank", "expert", "tokens"});
    for (const auto& r : store.routing(run.id))
      f.row({num(r.step), num(r.layer), num(r.source_rank), num(r.expert), num(r.tokens)});
    f.close();
  }
}

}  // namespace moebench
