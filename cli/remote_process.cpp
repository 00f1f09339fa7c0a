// ssh and scp as child processes of `moebench launch` (remote_process.h).
#include "remote_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <stdexcept>

#include "stop_signals.h"

namespace moebench::cli {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    data += w;
    n -= (size_t)w;
  }
}

struct Child {
  pid_t pid = -1;
  std::string exec_error;
};

// fork + execvp with `in` / `out` as stdin / stdout (-1: /dev/null for stdin, ours for stdout).
// An exec failure comes back through a close-on-exec pipe.
Child spawn(const std::vector<std::string>& argv, int in, int out, const std::vector<int>& close_in_child) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the launcher died already
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (in < 0) in = open("/dev/null", O_RDONLY | O_CLOEXEC);  // dup2 clears CLOEXEC on stdin
    if (in >= 0) dup2(in, STDIN_FILENO);
    if (out >= 0) dup2(out, STDOUT_FILENO);
    for (int fd : close_in_child) close(fd);
    execvp(args[0], args.data());
    const int e = errno;
    write_all(report[1], reinterpret_cast<const char*>(&e), sizeof e);
    _exit(127);
  }
  close(report[1]);
  Child c{pid, {}};
  int e = 0;
  ssize_t n;
  while ((n = read(report[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  if (n == (ssize_t)sizeof e) {
    c.exec_error = std::strerror(e);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    c.pid = -1;
  }
  return c;
}

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

StepEnd run_step(const std::vector<std::string>& argv, int stop_after) {
  StepEnd end;
  const Child c = spawn(argv, -1, -1, {});
  if (c.pid < 0) {
    end.exec_error = c.exec_error;
    end.code = 127;
    return end;
  }
  double term_at = 0;
  for (;;) {
    int st = 0;
    const pid_t r = waitpid(c.pid, &st, WNOHANG);
    if (r == c.pid) {
      end.code = exit_code(st);
      return end;
    }
    if (stop_requests() >= stop_after && !end.stopped) {
      end.stopped = true;
      kill(c.pid, SIGTERM);
      term_at = now_s();
    }
    if (end.stopped && term_at > 0 && now_s() - term_at > 5) {
      kill(c.pid, SIGKILL);
      term_at = 0;
    }
    usleep(20000);
  }
}

RunEnd run_streaming(const std::vector<std::string>& argv, bool srun, double grace_s) {
  RunEnd end;
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  const Child c = spawn(argv, in[0], out[1], {});
  close(in[0]);
  close(out[1]);
  if (c.pid < 0) {
    close(in[1]);
    close(out[0]);
    end.exec_error = c.exec_error;
    end.code = 127;
    return end;
  }
  int forwarded = 0;        // stop requests forwarded as Ctrl-C
  double second_ctrl_c = 0;  // srun: when the second Ctrl-C of the first request is due
  double second_at = 0;     // when the second request was forwarded
  int escalation = 0;       // 1: ssh terminated, 2: killed
  bool open_out = true;
  std::string pending;      // a '\r' held back until the next byte shows whether "\r\n" follows
  auto ctrl_c = [&] { write_all(in[1], "\x03", 1); };
  for (;;) {
    const int requests = stop_requests();
    if (requests > forwarded) {
      end.stop_requested = true;
      ctrl_c();
      if (forwarded == 0 && srun) second_ctrl_c = now_s() + 0.3;
      if (requests >= 2) second_at = now_s();
      forwarded = requests;
    }
    if (second_ctrl_c > 0 && now_s() >= second_ctrl_c) {
      ctrl_c();
      second_ctrl_c = 0;
    }
    if (second_at > 0 && escalation == 0 && now_s() - second_at > grace_s) {
      kill(c.pid, SIGTERM);
      escalation = 1;
    } else if (second_at > 0 && escalation == 1 && now_s() - second_at > 2 * grace_s) {
      kill(c.pid, SIGKILL);
      escalation = 2;
    }
    if (!open_out) {
      int st = 0;
      const pid_t r = waitpid(c.pid, &st, WNOHANG);
      if (r == c.pid) {
        end.code = exit_code(st);
        break;
      }
      usleep(20000);
      continue;
    }
    pollfd p{out[0], POLLIN, 0};
    const int ready = poll(&p, 1, 50);
    if (ready <= 0) continue;
    char buf[65536];
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      open_out = false;
      write_all(STDOUT_FILENO, pending.data(), pending.size());
      continue;
    }
    end.output_seen = true;
    std::string text = pending;
    pending.clear();
    text.append(buf, (size_t)n);
    std::string cleaned;
    cleaned.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\r') {
        if (i + 1 == text.size()) {
          pending = "\r";
          break;
        }
        if (text[i + 1] == '\n') continue;
      }
      cleaned += text[i];
    }
    write_all(STDOUT_FILENO, cleaned.data(), cleaned.size());
  }
  close(in[1]);
  close(out[0]);
  return end;
}

}  // namespace moebench::cli
