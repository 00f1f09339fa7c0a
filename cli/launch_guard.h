#pragma once
// The guard process of a local launch (see local_launch.h): runs in the child of fork().
#include <sys/types.h>

namespace moebench::cli {

// Makes this process a session leader, starts mpirun (argv) in that session with stdout and
// stderr on out_fd / err_fd and stdin on /dev/null, and waits for it. When `launcher` dies
// it stops the ranks (SIGTERM) and kills everything left in the session after stop_grace_s;
// when mpirun ends it kills any rank still alive. Exits with mpirun's exit status (128 +
// signal when mpirun was killed, 127 when it could not start). Never returns.
[[noreturn]] void run_launch_guard(pid_t launcher, char** argv, int out_fd, int err_fd, double stop_grace_s);

}  // namespace moebench::cli
