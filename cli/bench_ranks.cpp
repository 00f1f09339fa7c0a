#include "bench_ranks.h"

#include "commands.h"
#include "local_launch.h"
#include "moebench/config/usage_error.h"
#include "moebench/dist/mpi_communicator.h"

namespace moebench::cli {

std::optional<int> launch_bench_ranks(const std::string& bench, int ranks, bool ranks_given) {
  if (MpiRuntime::under_mpi_launcher()) {
    const int launched = launcher_size();
    if (ranks_given && launched > 0 && ranks != launched) {
      if (launcher_rank() > 0) return 2;  // rank 0 says it, once
      throw UsageError(bench + " --ranks " + std::to_string(ranks) + ": the launcher started " +
                       std::to_string(launched) + " ranks (leave --ranks out under mpirun / srun)");
    }
    return std::nullopt;
  }
  LocalLaunch launch;
  launch.ranks = ranks;
  return launch_local_ranks(launch);
}

}  // namespace moebench::cli
