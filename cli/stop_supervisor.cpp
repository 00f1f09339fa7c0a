// The stop of a run without a launcher (stop_supervisor.h).
#include "stop_supervisor.h"

#include <unistd.h>

#include <chrono>
#include <exception>

#include "local_launch.h"
#include "stop_signals.h"

namespace moebench::cli {
namespace {

// stderr without stdio: the main thread may hold stdout's lock, blocked on a full pipe.
void say(const std::string& line) {
  const std::string l = "moebench: " + line + "\n";
  for (size_t at = 0; at < l.size();) {
    const ssize_t w = ::write(STDERR_FILENO, l.data() + at, l.size() - at);
    if (w <= 0) return;
    at += (size_t)w;
  }
}

}  // namespace

StopSupervisor::StopSupervisor(double stop_grace_s) : grace_s_(stop_grace_s), thread_([this] { watch(); }) {}

StopSupervisor::~StopSupervisor() {
  {
    std::lock_guard<std::mutex> lock(m_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StopSupervisor::set_run(const std::string& db, const std::string& run_uuid) {
  std::lock_guard<std::mutex> lock(m_);
  db_ = db;
  run_uuid_ = run_uuid;
}

void StopSupervisor::watch() {
  bool told = false;
  std::unique_lock<std::mutex> lock(m_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return done_; })) {
    const int requests = stop_requests();
    if (requests == 0) continue;
    if (!told) {
      told = true;
      say("stopping the run after its current step (a second stop signal ends it at once)");
    }
    if (requests >= 2) end_now("second stop signal: ending the run now, without a checkpoint");
    if (seconds_since_stop_request() > grace_s_)
      end_now("the run did not stop within run.stop_grace_s: ending it now, without a checkpoint");
  }
}

void StopSupervisor::end_now(const char* why) {
  say(why);
  try {
    settle_run(db_, run_uuid_, RunStatus::killed);  // m_ is held: set_run cannot change them
    if (!run_uuid_.empty()) say("run marked KILLED");
  } catch (const std::exception& e) {
    say(std::string("could not mark the run KILLED: ") + e.what());
  }
  ::_exit(130);
}

}  // namespace moebench::cli
