// The guard process of a local launch (launch_guard.h).
#include "launch_guard.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "process_table.h"
#include "stop_signals.h"

namespace moebench::cli {
namespace {

volatile sig_atomic_t g_guard_stop = 0;
extern "C" void guard_note_stop(int) { g_guard_stop = 1; }

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void run_launch_guard(pid_t launcher, char** argv, int out_fd, int err_fd, double stop_grace_s) {
  setsid();
  const pid_t self = getpid();
  install_stop_handler(guard_note_stop, 0);  // the launcher's death arrives as SIGTERM
  std::signal(SIGPIPE, SIG_DFL);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != launcher) g_guard_stop = 1;  // the launcher died before prctl
  // Ranks orphaned by a dying mpirun become our children, so they are reaped here rather than
  // left as zombies (an init that does not reap, in containers).
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t mpirun = fork();
  if (mpirun < 0) _exit(127);
  if (mpirun == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // mpirun on SIGTERM ends its ranks
    if (getppid() != self) _exit(127);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execvp(argv[0], argv);
    std::fprintf(stderr,
                 "moebench: cannot start %s (%s): install openmpi-bin (scripts/install-deps.sh) or launch with "
                 "mpirun/srun yourself\n",
                 argv[0], std::strerror(errno));
    _exit(127);
  }
  close(out_fd);
  close(err_fd);
  int status = 0;
  bool mpirun_done = false;
  double deadline = -1;  // set when the launcher is gone: kill everything after it
  auto reap = [&] {
    int st = 0;
    for (pid_t r; (r = waitpid(-1, &st, WNOHANG)) > 0;)
      if (r == mpirun) status = st, mpirun_done = true;
  };
  for (;;) {
    reap();
    if (mpirun_done) break;
    if ((g_guard_stop || getppid() != launcher) && deadline < 0) {
      deadline = now_s() + stop_grace_s;
      for (const ProcessEntry& e : session_members(self))
        if (e.pid != mpirun) kill(e.pid, SIGTERM);  // ranks: finish the step, checkpoint, mark KILLED
    }
    if (deadline >= 0 && now_s() >= deadline) signal_session(self, SIGKILL, mpirun);
    usleep(50000);
  }
  // mpirun is gone: no rank of it may stay behind (e.g. mpirun killed while starting them).
  for (int round = 0; round < 200 && signal_session(self, SIGKILL) > 0; ++round) {
    usleep(10000);
    reap();
  }
  if (WIFSIGNALED(status)) _exit(128 + WTERMSIG(status));
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace moebench::cli
