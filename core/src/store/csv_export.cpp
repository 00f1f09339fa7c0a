// export_csv: a run's rows as CSV files (layout in csv_export.h).
#include "moebench/store/csv_export.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace moebench {

namespace {

std::string num(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
std::string num(int64_t v) { return std::to_string(v); }
std::string num(int v) { return std::to_string(v); }

// Where file `name` of an export into `root` is written before it is renamed into place.
std::filesystem::path temp_path(const std::filesystem::path& root, const char* name, const std::string& suffix) {
  return root / ("." + std::string(name) + suffix);
}

// Writes one file of an export (under its temporary name): a header and rows of already
// formatted fields. Errors name the file as it will be called.
class CsvFile {
 public:
  CsvFile(const std::filesystem::path& root, const char* name, const std::string& suffix,
          std::initializer_list<const char*> header)
      : path_(root / name) {
    out_.open(temp_path(root, name, suffix), std::ios::binary | std::ios::trunc);
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

// The files of an export, in the order they are written.
constexpr const char* kCsvFiles[] = {"run.csv",   "params.csv",  "tags.csv",   "metrics.csv",
                                     "spans.csv", "traffic.csv", "routing.csv"};

// Writes every file of kCsvFiles under its temporary name.
void write_files(const RunStore& store, const RunInfo& run, const std::filesystem::path& root,
                 const std::string& suffix) {
  {
    CsvFile f(root, "run.csv", suffix, {"id", "uuid", "name", "experiment", "status", "strategy", "topology", "git_rev",
                                   "host", "pid", "start_time", "end_time", "ranks", "config_json"});
    f.row({num(run.id), run.uuid, run.name, run.experiment, run_status_name(run.status), run.strategy, run.topology,
           run.git_rev, run.host, num(run.pid), num(run.start_time), run.end_time > 0 ? num(run.end_time) : "",
           num(run.ranks), run.config_json});
    f.close();
  }
  {
    CsvFile f(root, "params.csv", suffix, {"key", "value"});
    for (const auto& [k, v] : store.params(run.id)) f.row({k, v});
    f.close();
  }
  {
    CsvFile f(root, "tags.csv", suffix, {"key", "value"});
    for (const auto& [k, v] : store.tags(run.id)) f.row({k, v});
    f.close();
  }
  {
    CsvFile f(root, "metrics.csv", suffix, {"step", "key", "value", "timestamp"});
    for (const auto& m : store.metrics(run.id)) f.row({num(m.step), m.key, num(m.value), num(m.timestamp)});
    f.close();
  }
  {
    CsvFile f(root, "spans.csv", suffix,
              {"step", "rank", "stream", "name", "category", "start", "duration", "bytes", "peer", "layer", "expert",
               "flops", "chunk"});
    for (const auto& s : store.spans(run.id))
      f.row({num(s.step), num(s.rank), s.stream, s.name, s.category, num(s.start), num(s.duration), num(s.bytes),
             num(s.peer), num(s.layer), num(s.expert), num(s.flops), num(s.chunk)});
    f.close();
  }
  {
    CsvFile f(root, "traffic.csv", suffix, {"step", "rank", "peer", "link", "bytes"});
    for (const auto& t : store.traffic(run.id)) f.row({num(t.step), num(t.rank), num(t.peer), t.link, num(t.bytes)});
    f.close();
  }
  {
    CsvFile f(root, "routing.csv", suffix, {"step", "layer", "source_rank", "expert", "tokens"});
    for (const auto& r : store.routing(run.id))
      f.row({num(r.step), num(r.layer), num(r.source_rank), num(r.expert), num(r.tokens)});
    f.close();
  }
}

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

void export_csv(const RunStore& store, const RunInfo& run, const std::string& dir, bool replace) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  std::error_code ec;
  if (fs::exists(root, ec) && !fs::is_directory(root, ec))
    throw std::runtime_error("cannot export into " + dir + ": it is not a folder");
  if (!replace) {
    std::vector<std::string> existing;
    for (const char* name : kCsvFiles)
      if (fs::exists(root / name, ec)) existing.push_back((root / name).string());
    if (!existing.empty())
      throw ExportRefused(existing.front() + " already exists" +
                          (existing.size() > 1 ? " (and " + std::to_string(existing.size() - 1) + " more)" : "") +
                          "; nothing was written");
  }
  // The folders this export creates, deepest first: removed again (when still empty) on failure.
  std::vector<fs::path> created;
  for (fs::path p = fs::absolute(root, ec); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    created.push_back(p);
    if (p == p.parent_path()) break;
  }
  fs::create_directories(root, ec);
  if (ec) throw std::runtime_error("cannot create folder " + dir + ": " + ec.message());

  // Every file is written under a temporary name first and renamed when all are complete: a
  // failure (a store error, a full disk) leaves no partial output behind.
  const std::string suffix = "." + std::to_string(::getpid()) + ".tmp";
  std::vector<fs::path> added;  // final files that did not exist before
  try {
    write_files(store, run, root, suffix);
    for (const char* name : kCsvFiles) {
      const bool existed = fs::exists(root / name, ec);
      fs::rename(temp_path(root, name, suffix), root / name, ec);
      if (ec) throw std::runtime_error("cannot write " + (root / name).string() + ": " + ec.message());
      if (!existed) added.push_back(root / name);
    }
  } catch (...) {
    for (const char* name : kCsvFiles) fs::remove(temp_path(root, name, suffix), ec);
    for (const fs::path& p : added) fs::remove(p, ec);  // (files --force replaced cannot come back)
    for (const fs::path& p : created) fs::remove(p, ec);  // only removes an empty folder
    throw;
  }
}

}  // namespace moebench
