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
// and mark the run KILLED; ranks still alive after run.stop_grace_s, or at a second signal
// (stop_signals.h: not one that arrives together with the first), are killed, and the
// launcher marks the run KILLED itself. A guard killed from outside stops the job the same way.
// Every command that starts local ranks does so here: the rank bounds of launch_limits.h are
// checked first, before anything is created or started.
#include <string>

#include "moebench/store/run_store.h"

namespace moebench::cli {

// Set by the launcher for its ranks: the run's uuid (the recorded run is found by it after
// the job) and the output directory whose lock the launcher holds for them.
inline constexpr const char* kRunUuidEnv = "MOEBENCH_RUN_UUID";
inline constexpr const char* kOutLockedEnv = "MOEBENCH_OUT_LOCKED";

struct LocalLaunch {
  int ranks = 2;
  // The bounds (launch_limits.h check_rank_count): where the count came from, for messages
  // (default "--ranks N"), and whether / how more than the per-core bound may be started.
  std::string ranks_given_as;
  bool oversubscribe_ok = false;
  std::string oversubscribe_hint;  // "" : the command has no override
  double stop_grace_s = 8;
  std::string db;        // the run store ("" when recording is off)
  std::string run_uuid;  // the run's uuid in `db` ("" when recording is off)
  std::string out_dir;   // canonical output directory; the caller holds its lock
};

// Starts mpirun -np ranks with this process's own command line, waits, reports. Returns the
// exit code. Throws UsageError (nothing started) when launch.ranks exceeds a bound.
int launch_local_ranks(const LocalLaunch& launch);

// Marks the run `run_uuid` of the store `db` with `status` (FAILED or KILLED) when the process
// that records it could not: it is still RUNNING, or FAILED (its process gone) and `status`
// is KILLED. Nothing when recording is off (empty db or uuid) or the run was never created.
void settle_run(const std::string& db, const std::string& run_uuid, RunStatus status);

}  // namespace moebench::cli
