#pragma once
// `moebench run` with run.ranks > 1 outside any MPI launcher starts its ranks itself:
//
//   moebench (launcher) ── guard (own session) ── mpirun ── rank 0 .. rank N-1
//
// The guard is a small process that starts mpirun in a session of its own, so the launcher
// can find and signal mpirun and every rank it started (Open MPI puts each rank in its own
// process group, but they stay in the session). If the launcher dies (even by SIGKILL), the
// kernel tells the guard (PR_SET_PDEATHSIG), which stops the ranks like a Ctrl-C and kills
// whatever is left after run.stop_grace_s: nothing outlives the launcher by more than that.
//
// The launcher relays the ranks' output; mpirun's banners about a failing job are held back
// (dist/mpirun_output.h) and the cause is printed once:
//   moebench: rank 2 of 4 failed: <its message>      (from the rank's report, dist/launch_report.h)
//   moebench: rank 2 of 4 died (signal 9, Killed)
// Exit codes: 0 done, 1 a rank failed or died, 2 a rank reported bad usage, 130 stopped.
// Stop: the first SIGINT / SIGTERM / SIGHUP asks every rank to finish its step, checkpoint
// and mark the run KILLED; ranks still alive after run.stop_grace_s, or at a second signal,
// are killed, and the launcher marks the run KILLED itself.
#include <string>

namespace moebench::cli {

// Set by the launcher for its ranks: the run's uuid (the recorded run is found by it after
// the job) and the output directory whose lock the launcher holds for them.
inline constexpr const char* kRunUuidEnv = "MOEBENCH_RUN_UUID";
inline constexpr const char* kOutLockedEnv = "MOEBENCH_OUT_LOCKED";

struct LocalLaunch {
  int ranks = 2;
  double stop_grace_s = 8;
  std::string db;        // the run store ("" when recording is off)
  std::string run_uuid;  // the run's uuid in `db` ("" when recording is off)
  std::string out_dir;   // canonical output directory; the caller holds its lock
};

// Starts mpirun -np ranks with this process's own command line, waits, reports. Returns the
// exit code.
int launch_local_ranks(const LocalLaunch& launch);

}  // namespace moebench::cli
