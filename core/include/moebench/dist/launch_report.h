#pragma once
// How the ranks of a local launch (`moebench run --ranks N`, which starts mpirun itself) tell
// the launcher why they failed, so the launcher can say it once: "moebench: rank 2 of 4
// failed: ...". The launcher creates a private folder and passes it in MOEBENCH_LAUNCH_DIR;
// a rank that fails writes rank_<R>.failed there (atomically) instead of printing, then
// aborts the job. Ranks started by any other launcher (mpirun / srun typed by the user) see
// no such folder and print their message themselves.
#include <string>
#include <vector>

namespace moebench {

inline constexpr const char* kLaunchDirEnv = "MOEBENCH_LAUNCH_DIR";

struct RankFailure {
  int rank = 0;
  int exit_code = 1;   // what the job should exit with: 1 run failed, 2 bad usage or config
  double time = 0;     // unix seconds when the rank failed (the first one is the cause)
  std::string message;
};

// The folder from MOEBENCH_LAUNCH_DIR, or "" when this process was not started by the
// local launcher.
std::string launch_dir_from_env();

// Writes <dir>/rank_<R>.failed. Never throws (a rank that cannot report still aborts).
void write_rank_failure(const std::string& dir, const RankFailure& failure);

// Every report in `dir`, earliest first; unreadable or malformed files are skipped.
std::vector<RankFailure> read_rank_failures(const std::string& dir);

// The lines the launcher prints for the reports of a job of `world` ranks: one per distinct
// message, earliest first, naming the ranks that reported it:
//   "rank 2 of 4 failed: data.bin: truncated ..."
//   "rank 0 of 4 failed: x (ranks 1, 2, 3 failed the same way)"
std::vector<std::string> describe_rank_failures(const std::vector<RankFailure>& failures, int world);

}  // namespace moebench
