#pragma once
// The stop of a run that has no launcher (`moebench run` on one rank): what the local launcher
// does for its ranks (local_launch.h), done by a thread of the run itself. At the first stop
// request (stop_signals.h) the trainer stops after its current step or evaluation batch,
// checkpoints and marks the run KILLED. At a second request, or when the run has not ended
// run.stop_grace_s after the first, this thread marks the run KILLED and ends the process at
// once with exit code 130, without a checkpoint: no loop of the run can keep it alive.
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace moebench::cli {

class StopSupervisor {
 public:
  explicit StopSupervisor(double stop_grace_s);
  ~StopSupervisor();  // stops watching (the run ended by itself)
  StopSupervisor(const StopSupervisor&) = delete;
  StopSupervisor& operator=(const StopSupervisor&) = delete;

  // The recorded run to mark KILLED when the process is ended (once rank 0 has created it).
  void set_run(const std::string& db, const std::string& run_uuid);

 private:
  void watch();
  [[noreturn]] void end_now(const char* why);

  double grace_s_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string db_, run_uuid_;
  std::thread thread_;
};

}  // namespace moebench::cli
