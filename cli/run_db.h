#pragma once
// Helpers shared by the sub-commands that read the run store (runs, trace, export): opening
// the --db file with clear messages, plain-text tables and number/time formatting.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "moebench/store/run_store.h"

namespace moebench::cli {

// The --db default: runs.db in the current directory.
inline const char* kDefaultRunDb = "runs.db";

// Opens an existing run database. A missing file is an error here (read_write would create
// an empty one): StoreError "runs.db: does not exist ...". StoreErrors from the store that do
// not name the file get it prepended, so every message reads "<file>: <what>".
inline std::unique_ptr<RunStore> open_run_db(const std::string& path, RunStore::Mode mode) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st))
    throw StoreError(path + ": does not exist (runs are recorded by `moebench run` into runs.db of the "
                            "current directory; pass --db PATH for another file)");
  if (std::filesystem::is_directory(st)) throw StoreError(path + ": is a folder, not a run database");
  try {
    return std::make_unique<RunStore>(path, mode);
  } catch (const StoreError& e) {
    const std::string what = e.what();
    if (what.find(path) != std::string::npos) throw;
    throw StoreError(path + ": " + what);
  }
}

// Runs `body`, prefixing the db path to StoreErrors that do not name it.
template <class F>
int with_run_db(const std::string& path, F&& body) {
  try {
    return body();
  } catch (const StoreError& e) {
    const std::string what = e.what();
    if (what.find(path) != std::string::npos) throw;
    throw StoreError(path + ": " + what);
  }
}

// A left-aligned text table; numeric columns may be right-aligned.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header, std::vector<bool> right = {})
      : header_(std::move(header)), right_(std::move(right)) {
    right_.resize(header_.size(), false);
  }
  void add(std::vector<std::string> row) {
    row.resize(header_.size());
    rows_.push_back(std::move(row));
  }
  std::string str() const {
    std::vector<size_t> width(header_.size(), 0);
    for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
    for (const auto& r : rows_)
      for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    std::string out;
    auto line = [&](const std::vector<std::string>& r) {
      std::string l;
      for (size_t c = 0; c < r.size(); ++c) {
        const size_t pad = width[c] - r[c].size();
        if (c) l += "  ";
        if (right_[c]) l += std::string(pad, ' ') + r[c];
        else l += r[c] + (c + 1 < r.size() ? std::string(pad, ' ') : std::string());
      }
      while (!l.empty() && l.back() == ' ') l.pop_back();
      out += l + "\n";
    };
    line(header_);
    for (const auto& r : rows_) line(r);
    return out;
  }

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// printf-style formatting of one number; "-" for NaN/inf.
inline std::string fmt_num(const char* format, double v) {
  if (!(v == v) || v > 1e300 || v < -1e300) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A value the run recorded, as fmt_num, but a recorded NaN or infinity (a diverged loss) reads
// "nan" / "inf" as in `runs show` and the progress lines; "-" only when nothing was recorded.
inline std::string fmt_recorded(const char* format, double v, bool recorded) {
  if (!recorded) return "-";
  if (v != v) return "nan";
  if (v > 1e300 || v < -1e300) return v > 0 ? "inf" : "-inf";
  return fmt_num(format, v);
}

// Local time "2024-05-01 13:45:12"; "-" for 0.
inline std::string fmt_time(double unix_seconds) {
  if (unix_seconds <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// "12.3s", "4m05s", "2h07m".
inline std::string fmt_duration(double seconds) {
  if (!(seconds >= 0)) return "-";
  char buf[32];
  if (seconds < 60) std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  else if (seconds < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(seconds) / 60, int(seconds) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", int(seconds) / 3600, (int(seconds) % 3600) / 60);
  return buf;
}

// Wall time of a run: end - start, or now - start while it is RUNNING.
inline double run_duration(const RunInfo& r) {
  if (r.start_time <= 0) return -1;
  const double end = r.end_time > 0 ? r.end_time : double(std::time(nullptr));
  return end - r.start_time;
}

}  // namespace moebench::cli
