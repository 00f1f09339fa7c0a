// Process liveness for the run store (see process_liveness.h).
#include "process_liveness.h"

#include <signal.h>

#include <cerrno>
#include <climits>
#include <fstream>
#include <sstream>
#include <vector>

namespace moebench::store_detail {

namespace {

struct ProcStat {
  char state = '?';         // field 3: R, S, D, Z (zombie), X (dead), ...
  int64_t start_ticks = 0;  // field 22
};

// /proc/<pid>/stat, or nullopt when it cannot be read. The command name (field 2) is in
// parentheses and may itself hold spaces and ')': the fields after it follow the last ')'.
std::optional<ProcStat> read_proc_stat(int64_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!f || !std::getline(f, line)) return std::nullopt;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;  // fields[0] is field 3
  for (std::string word; rest >> word;) fields.push_back(word);
  if (fields.size() < 20 || fields[0].empty()) return std::nullopt;
  ProcStat out;
  out.state = fields[0][0];
  try {
    out.start_ticks = std::stoll(fields[19]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return out;
}

bool have_proc() {
  static const bool have = bool(std::ifstream("/proc/self/stat"));
  return have;
}

}  // namespace

std::string current_boot_id() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!f || !std::getline(f, id)) return "";
  return id;
}

std::optional<int64_t> process_start_ticks(int64_t pid) {
  if (pid <= 0 || pid > INT_MAX) return std::nullopt;
  const auto st = read_proc_stat(pid);
  if (!st) return std::nullopt;
  return st->start_ticks;
}

bool process_gone(int64_t pid, int64_t start_ticks, const std::string& boot_id) {
  if (pid <= 0 || pid > INT_MAX) return false;  // unknown: never kill(0) or kill(-1)
  if (!boot_id.empty()) {
    const std::string now = current_boot_id();
    if (!now.empty() && now != boot_id) return true;  // rebooted: every process of that boot is gone
  }
  if (!have_proc()) return ::kill((pid_t)pid, 0) == -1 && errno == ESRCH;  // EPERM: exists, not ours
  const auto st = read_proc_stat(pid);
  if (!st) return ::kill((pid_t)pid, 0) == -1 && errno == ESRCH;  // gone, or /proc hides it (hidepid)
  if (st->state == 'Z' || st->state == 'X') return true;
  return start_ticks > 0 && st->start_ticks != start_ticks;
}

}  // namespace moebench::store_detail
