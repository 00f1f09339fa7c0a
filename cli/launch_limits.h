#pragma once
// Bounds a run started on this machine must stay within, checked before anything starts:
// at most kMaxRanksPerCore ranks per usable core, and the ranks' memory (kRankBaseBytes each
// for the process, plus what the fp32 trainer holds, corpus included, perf/trainer_memory.h)
// within the memory available now. Beyond them `moebench run` refuses with a UsageError (exit 2)
// naming the bound, unless run.oversubscribe_ok is set (`--oversubscribe-ok`).
#include <cstdint>

#include "moebench/config/config.h"

namespace moebench::cli {

inline constexpr int kMaxRanksPerCore = 8;
// The process itself, beyond what perf/trainer_memory.h counts (MPI, OpenBLAS and the binary): a
// quickstart rank measured 33 MB resident on Debian 12 / OpenMPI 4.1, so 32 MiB is below any rank.
inline constexpr uint64_t kRankBaseBytes = uint64_t(32) << 20;

int usable_cores();                 // sched_getaffinity, else hardware_concurrency
uint64_t available_memory_bytes();  // MemAvailable, tightened by a cgroup v2 memory.max
// What this process itself may still allocate: available_memory_bytes(), tightened by its
// address-space limit (RLIMIT_AS, `ulimit -v`) less what it has mapped. 0 when unknown.
uint64_t process_memory_left_bytes();

// Throws UsageError when `ranks` local ranks of `cfg` exceed a bound.
void check_local_launch(const Config& cfg, int ranks);

}  // namespace moebench::cli
