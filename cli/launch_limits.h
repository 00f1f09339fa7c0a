#pragma once
// Bounds a launch on this machine must stay within, checked before anything starts:
// at most kMaxRanksPerCore ranks per usable core, and the ranks' memory (kRankBaseBytes each
// for the process, plus what the fp32 trainer holds, corpus included, perf/trainer_memory.h) within the memory
// available now. Beyond them a launch is refused with a UsageError (exit 2) naming the bound,
// unless run.oversubscribe_ok is set (`--oversubscribe-ok`). kMaxLocalRanks holds even then.
// The rank bounds are checked by launch_local_ranks itself (local_launch.h), so no command
// that starts local ranks can skip them; the memory part needs a config and is checked by the
// commands that have one (run, ablate) before they start anything.
#include <cstdint>
#include <string>

#include "moebench/config/config.h"

namespace moebench::cli {

inline constexpr int kMaxRanksPerCore = 8;
// One local launch starts at most this many ranks, --oversubscribe-ok or not: 1024 processes
// of at least kRankBaseBytes are 32 GiB before any model, and mpirun forks them one by one (a
// launch of 100,000 ran for minutes before it was killed). Larger worlds are for a cluster
// launcher (mpirun / srun started by the user), which moebench does not bound.
inline constexpr int kMaxLocalRanks = 1024;
// The process itself, beyond what perf/trainer_memory.h counts (MPI, OpenBLAS and the binary): a
// quickstart rank measured 33 MB resident on Debian 12 / OpenMPI 4.1, so 32 MiB is below any rank.
inline constexpr uint64_t kRankBaseBytes = uint64_t(32) << 20;

int usable_cores();                 // sched_getaffinity, else hardware_concurrency
uint64_t available_memory_bytes();  // MemAvailable, tightened by a cgroup v2 memory.max
// What this process itself may still allocate: available_memory_bytes(), tightened by its
// address-space limit (RLIMIT_AS, `ulimit -v`) less what it has mapped. 0 when unknown.
uint64_t process_memory_left_bytes();

// Throws UsageError when `ranks` local ranks exceed kMaxLocalRanks, or kMaxRanksPerCore per
// usable core unless oversubscribe_ok. `given_as` says where the count came from ("--ranks
// 100000", "run.ranks = 100000"); `override_hint` how to allow more than the per-core bound
// ("pass --oversubscribe-ok to start them anyway"), "" where the command has no such option.
void check_rank_count(int ranks, bool oversubscribe_ok, const std::string& given_as, const std::string& override_hint);

// How `moebench run` (and ablate) allow more ranks than the per-core bound, or more memory.
inline constexpr const char* kRunOversubscribeHint =
    "pass --oversubscribe-ok (or set run.oversubscribe_ok = true) to start them anyway";

// The ranks as run.ranks of a config, for messages: "--ranks N" when the flag set it, else
// "run.ranks = N".
std::string ranks_given_as(int ranks, bool from_flag);

// check_rank_count for the config's run.ranks, then the memory the ranks of `cfg` need
// against the memory available now (unless run.oversubscribe_ok).
void check_local_launch(const Config& cfg, const std::string& given_as);

}  // namespace moebench::cli
