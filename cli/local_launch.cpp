// The local launcher of `moebench run` (local_launch.h).
#include "local_launch.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>

#include "commands.h"
#include "launch_guard.h"
#include "launch_limits.h"
#include "process_table.h"
#include "stop_signals.h"
#include "moebench/dist/launch_report.h"
#include "moebench/dist/mpirun_output.h"
#include "moebench/store/run_store.h"

namespace moebench::cli {
namespace {

namespace fs = std::filesystem;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // our own output is gone: keep supervising the job regardless
    data += w;
    n -= (size_t)w;
  }
}

void print_err(const std::string& line) {
  const std::string l = line + "\n";
  write_all(STDERR_FILENO, l.data(), l.size());
}

// A private folder for the ranks' failure reports.
std::string make_launch_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/moebench-launch-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a folder in " + tmpl + ": " + std::strerror(errno));
  return tmpl;
}

// The mpirun command line: this program with its own arguments on every rank.
std::vector<std::string> mpirun_args(int ranks) {
  std::vector<std::string> args = {"mpirun", "-np", std::to_string(ranks), "--bind-to", "none"};
  if ((unsigned)ranks > std::thread::hardware_concurrency()) args.push_back("--oversubscribe");
  std::error_code ec;
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  args.push_back(ec ? program_args().at(0) : self);
  const auto& own = program_args();
  args.insert(args.end(), own.begin() + 1, own.end());
  return args;
}

// Relays mpirun's stdout as is and its stderr line by line through the filter.
class Relay {
 public:
  Relay(int out_fd, int err_fd) : fds_{out_fd, err_fd} {}
  bool open() const { return fds_[0] >= 0 || fds_[1] >= 0; }
  // Waits up to timeout_ms for output and passes on what came.
  void pump(int timeout_ms) {
    pollfd p[2];
    int n = 0;
    for (int i = 0; i < 2; ++i)
      if (fds_[i] >= 0) p[n++] = {fds_[i], POLLIN, 0};
    if (n == 0) {
      usleep(timeout_ms * 1000);
      return;
    }
    if (poll(p, n, timeout_ms) <= 0) return;
    for (int k = 0; k < n; ++k)
      if (p[k].revents) read_from(p[k].fd == fds_[0] ? 0 : 1);
  }
  void finish() {
    if (!err_line_.empty()) emit_err(err_line_);
    err_line_.clear();
    for (const auto& l : filter_.finish()) print_err(l);
  }
  const MpirunOutput& filter() const { return filter_; }
  void set_stopping() { filter_.set_stopping(); }

 private:
  void read_from(int which) {
    char buf[65536];
    const ssize_t n = ::read(fds_[which], buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
      ::close(fds_[which]);
      fds_[which] = -1;
      return;
    }
    if (which == 0) return write_all(STDOUT_FILENO, buf, (size_t)n);
    err_line_.append(buf, (size_t)n);
    size_t from = 0;
    for (size_t nl; (nl = err_line_.find('\n', from)) != std::string::npos; from = nl + 1)
      emit_err(err_line_.substr(from, nl - from));
    err_line_.erase(0, from);
  }
  void emit_err(const std::string& line) {
    for (const auto& l : filter_.on_line(line)) print_err(l);
  }

  int fds_[2];
  std::string err_line_;
  MpirunOutput filter_;
};

}  // namespace

// Opening the store already marks a run whose process is gone FAILED, ended at its last
// recorded step; a job stopped on a stop request is KILLED instead.
void settle_run(const std::string& db, const std::string& run_uuid, RunStatus status) {
  if (run_uuid.empty() || db.empty() || !fs::exists(db)) return;
  try {
    RunStore store(db);
    const RunInfo run = store.find_run(run_uuid);
    if (run.status == RunStatus::running || (status == RunStatus::killed && run.status == RunStatus::failed))
      store.set_status(run.id, status, run.end_time);
  } catch (const StoreError& e) {
    // No run recorded yet (the job failed before rank 0 created it) is the common case.
    if (std::string(e.what()).find("no run") == std::string::npos) print_err(std::string("moebench: ") + e.what());
  }
}

int launch_local_ranks(const LocalLaunch& l) {
  check_rank_count(l.ranks, l.oversubscribe_ok,
                   l.ranks_given_as.empty() ? "--ranks " + std::to_string(l.ranks) : l.ranks_given_as,
                   l.oversubscribe_hint);
  const std::string report_dir = make_launch_dir();
  struct RemoveDir {
    std::string path;
    ~RemoveDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } remove_dir{report_dir};
  setenv(kLaunchDirEnv, report_dir.c_str(), 1);
  setenv(kOutLockedEnv, l.out_dir.c_str(), 1);
  if (!l.run_uuid.empty()) setenv(kRunUuidEnv, l.run_uuid.c_str(), 1);
  if (geteuid() == 0) {  // OpenMPI refuses root unless told; its ranks check these too
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  std::vector<std::string> args = mpirun_args(l.ranks);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot create pipes for mpirun: ") + std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  install_stop_counter(0);  // before the fork: no stop signal may be missed
  const pid_t launcher = getpid();
  const pid_t guard = fork();
  if (guard < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (guard == 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    run_launch_guard(launcher, argv.data(), out_pipe[1], err_pipe[1], l.stop_grace_s);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);

  Relay relay(out_pipe[0], err_pipe[0]);
  std::set<pid_t> asked;  // ranks sent SIGTERM
  double stop_at = -1, job_done_at = -1;
  bool killed = false, guard_done = false, guard_killed = false;
  pid_t mpirun = 0;
  int status = 0;
  auto begin_stop = [&](const std::string& why) {
    if (stop_at >= 0) return;
    stop_at = now_s();
    relay.set_stopping();
    print_err("moebench: " + why + "stopping the " + std::to_string(l.ranks) + " ranks after their current step");
  };
  for (;;) {
    relay.pump(50);
    if (!guard_done) {
      const pid_t r = waitpid(guard, &status, WNOHANG);
      if (r < 0 && errno != EINTR) throw std::runtime_error("waitpid on the launch guard failed");
      if (r == guard) {
        guard_done = true;
        // The guard always exits by itself (mpirun's status): killed, it left mpirun and the
        // ranks without a supervisor (mpirun gets SIGTERM from the kernel): stop them here.
        if (WIFSIGNALED(status)) {
          guard_killed = true;
          const int sig = WTERMSIG(status);
          begin_stop("the launch guard (pid " + std::to_string(guard) + ") was killed (signal " + std::to_string(sig) +
                     ", " + strsignal(sig) + "): ");
        }
      }
    }
    const int stops = stop_requests();
    if (stops > 0 && !guard_done) begin_stop("");
    // The job's processes stay in the guard's session, also when the guard is gone.
    std::vector<ProcessEntry> members;
    if (guard_killed || (stop_at >= 0 && !guard_done)) members = session_members(guard);
    if (guard_done && members.empty()) {  // the job is over: what it still printed
      if (job_done_at < 0) job_done_at = now_s();
      if (!relay.open() || now_s() - job_done_at >= 2.0) break;
      continue;
    }
    if (stop_at < 0) continue;
    // mpirun is the guard's child, in the guard's process group (Open MPI puts every rank in a
    // group of its own); the ranks are mpirun's children, also while mpirun starts them.
    for (const ProcessEntry& e : members)
      if (e.ppid == guard || (guard_killed && e.pgrp == guard)) mpirun = e.pid;
    for (const ProcessEntry& e : members)
      if (e.pid != mpirun && (guard_killed || (e.ppid == mpirun && mpirun != 0)) && asked.insert(e.pid).second)
        kill(e.pid, SIGTERM);
    if (!killed && (stops >= 2 || now_s() - stop_at > l.stop_grace_s)) {
      killed = true;
      print_err(stops >= 2 ? "moebench: second stop signal: killing the ranks now"
                           : "moebench: the ranks did not stop within run.stop_grace_s: killing them");
    }
    if (killed) signal_session(guard, SIGKILL, mpirun);
  }
  relay.finish();

  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const MpirunOutput& mpi = relay.filter();
  const std::string of = " of " + std::to_string(l.ranks);
  if (stop_at >= 0) {  // stopped on request, or the guard was killed: rank 0 marked the run KILLED
    if (killed || guard_killed) settle_run(l.db, l.run_uuid, RunStatus::killed);
    return 130;
  }
  const std::vector<RankFailure> failures = read_rank_failures(report_dir);
  if (!failures.empty()) {
    int worst = 1;
    for (const RankFailure& f : failures) worst = std::max(worst, f.exit_code);
    for (const std::string& line : describe_rank_failures(failures, l.ranks)) print_err("moebench: " + line);
    settle_run(l.db, l.run_uuid, RunStatus::failed);
    return worst;
  }
  if (mpi.death()) {
    const RankDeath& d = *mpi.death();
    print_err("moebench: rank " + std::to_string(d.rank) + of + " died (signal " + std::to_string(d.signal) + ", " +
              d.signal_name + ")");
    settle_run(l.db, l.run_uuid, RunStatus::failed);
    return 1;
  }
  if (code == 0 || code == 130) return code;  // 130: the ranks were stopped by a signal from elsewhere
  if (code != 127) {  // 127: mpirun could not start; it said why
    if (mpi.exit())
      print_err("moebench: rank " + std::to_string(mpi.exit()->rank) + of + " exited with status " +
                std::to_string(mpi.exit()->code));
    else {
      for (const std::string& line : mpi.held()) print_err(line);
      print_err("moebench: mpirun failed (exit status " + std::to_string(code) + ")");
    }
  }
  settle_run(l.db, l.run_uuid, RunStatus::failed);
  return 1;
}

}  // namespace moebench::cli
