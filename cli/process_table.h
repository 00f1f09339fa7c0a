#pragma once
// The process table as /proc shows it, for the local launcher: which processes belong to a
// session (mpirun and every rank it started) and signalling all of them.
#include <sys/types.h>

#include <vector>

namespace moebench::cli {

struct ProcessEntry {
  pid_t pid = 0, ppid = 0, pgrp = 0, session = 0;
  char state = '?';  // R, S, D, Z (zombie), ...
};

// Every process /proc lists now (entries that vanish while reading are skipped).
std::vector<ProcessEntry> list_processes();

// The processes of session `sid` other than its leader that have not yet exited (zombies
// excluded).
std::vector<ProcessEntry> session_members(pid_t sid);

// Sends `sig` to every member of session `sid` except its leader; `first` (mpirun) is
// signalled before the others so it stops starting new ones. Returns how many were signalled.
int signal_session(pid_t sid, int sig, pid_t first = 0);

}  // namespace moebench::cli
