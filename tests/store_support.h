#pragma once
// Helpers shared by the run store suites: file bytes, a plain sqlite3 connection (as another
// program would open the file), a small store, and processes in known states for the
// vanished-run rules.
#include <QString>
#include <QStringList>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "moebench/store/run_store.h"

namespace moebench::test {

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), (std::streamsize)bytes.size());
}

// Rows of column `col` of `sql` run on a plain sqlite3 connection (several statements: the last
// one's rows); "<error: ...>" rows on failure.
inline QStringList raw_rows(const std::string& path, const std::string& sql, int col = 0) {
  sqlite3* db = nullptr;
  QStringList rows;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return {"<open failed>"};
  }
  const char* next = sql.c_str();
  while (next && *next) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, next, -1, &st, &next) != SQLITE_OK) {
      rows << QString("<error: %1>").arg(sqlite3_errmsg(db));
      break;
    }
    if (!st) continue;  // whitespace or a comment
    rows.clear();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, col);
      rows << (t ? QString::fromUtf8(reinterpret_cast<const char*>(t)) : QString("<null>"));
    }
    if (rc != SQLITE_DONE) rows << QString("<error: %1>").arg(sqlite3_errmsg(db));
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return rows;
}

inline QString raw_one(const std::string& path, const std::string& sql) {
  QStringList r = raw_rows(path, sql);
  return r.isEmpty() ? QString("<no row>") : r.front();
}

// A store with one FINISHED run "done" of two steps (a span, traffic and routing each), closed
// again: no -wal is left.
inline void write_small_store(const std::string& path) {
  RunStore store(path);
  RunInfo info;
  info.name = "done";
  const int64_t run = store.create_run(info).id;
  SpanRow span;
  span.stream = "host";
  span.name = "step";
  span.category = "compute";
  for (int step = 1; step <= 2; ++step) {
    span.step = step;
    store.log_step(run, {{"loss", step, 1.0, 0}}, {span}, {{step, 0, 1, "intra_node", 10}}, {{step, 1, 0, 0, 5}});
  }
  store.set_status(run, RunStatus::finished, 0);
}

// A pid that certainly belonged to a process that has exited (and been reaped).
inline pid_t dead_pid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// /proc/<pid>/stat fields 3.. (state first, start time at [19]), parsed here independently of
// the store: the command name may hold spaces and ')', the fields follow the last ')'.
inline std::vector<std::string> proc_stat_fields(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  std::istringstream rest(line.substr(line.rfind(')') + 1));
  std::vector<std::string> fields;
  for (std::string w; rest >> w;) fields.push_back(w);
  return fields;
}

// A child process that blocks until exit_now(), then exits and stays a zombie until reap()
// (as a rank does under an init that does not reap).
class ChildProcess {
 public:
  ChildProcess() {
    if (::pipe(fds_) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      ::close(fds_[1]);
      char c;
      while (::read(fds_[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    ::close(fds_[0]);
  }
  ~ChildProcess() {
    exit_now();
    reap();
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  int64_t start_ticks() const { return std::stoll(proc_stat_fields(pid_).at(19)); }
  void exit_now() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }
  // After exit_now(): true once the child shows as a zombie (state Z), within 10 s.
  bool wait_for_zombie() const {
    for (int i = 0; i < 1000; ++i) {
      const auto f = proc_stat_fields(pid_);
      if (!f.empty() && f[0] == "Z") return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  void reap() {
    if (pid_ <= 0) return;
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  int fds_[2] = {-1, -1};
  pid_t pid_ = -1;
};

}  // namespace moebench::test
