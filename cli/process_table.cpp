// /proc process table (process_table.h).
#include "process_table.h"

#include <signal.h>

#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>

namespace moebench::cli {

std::vector<ProcessEntry> list_processes() {
  std::vector<ProcessEntry> out;
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* d = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(d->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::ifstream stat(std::string("/proc/") + d->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');  // the command name may hold spaces and ')'
    if (close == std::string::npos || close + 2 > line.size()) continue;
    std::istringstream rest(line.substr(close + 2));
    ProcessEntry e;
    e.pid = (pid_t)pid;
    if (rest >> e.state >> e.ppid >> e.pgrp >> e.session) out.push_back(e);
  }
  closedir(proc);
  return out;
}

std::vector<ProcessEntry> session_members(pid_t sid) {
  std::vector<ProcessEntry> out;
  for (const ProcessEntry& e : list_processes())
    if (e.session == sid && e.pid != sid && e.state != 'Z') out.push_back(e);
  return out;
}

int signal_session(pid_t sid, int sig, pid_t first) {
  int n = 0;
  if (first > 0 && ::kill(first, sig) == 0) ++n;
  for (const ProcessEntry& e : session_members(sid))
    if (e.pid != first && ::kill(e.pid, sig) == 0) ++n;
  return n;
}

}  // namespace moebench::cli
