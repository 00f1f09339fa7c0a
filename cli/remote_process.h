#pragma once
// The processes of `moebench launch` (ssh and scp), started without a shell (fork + execvp), each
// in a process group of its own (a terminal's Ctrl-C reaches only `moebench launch`, which
// decides what to do with it) and ended with it (PR_SET_PDEATHSIG: if the launcher dies, ssh is
// terminated, the connection drops and the remote run stops on the hang-up).
#include <string>
#include <vector>

namespace moebench::cli {

// A step that ends by itself (mkdir, upload, fetch): stdin /dev/null, stdout and stderr ours.
// `stop_after` stop requests (stop_signals.h) terminate it (SIGTERM, then SIGKILL after 5 s).
struct StepEnd {
  int code = 0;          // exit code; 128 + signal when one ended it
  bool stopped = false;  // ended because of stop requests
  std::string exec_error;  // non-empty: the program could not be started (strerror)
};
StepEnd run_step(const std::vector<std::string>& argv, int stop_after);

// The run over `ssh -tt`: its stdin a pipe of ours, its stdout streamed to ours (the remote
// terminal's "\r\n" turned into "\n"), its stderr ours. Stop requests become Ctrl-C bytes on its
// stdin: the first request one (two, 300 ms apart, when `srun` is true: srun reports status on
// one and stops the job on two), a second request one more; `grace_s` after the second request
// ssh is terminated (the remote terminal hangs up), and killed after as long again.
struct RunEnd {
  int code = 0;
  bool output_seen = false;     // the remote side printed something
  bool stop_requested = false;  // a stop request was forwarded
  std::string exec_error;
};
RunEnd run_streaming(const std::vector<std::string>& argv, bool srun, double grace_s);

}  // namespace moebench::cli
