#pragma once
// The ranks of the benches that measure between ranks (bench comm, bench overlap). Outside an
// MPI launcher such a bench starts its ranks itself through mpirun, as `moebench run` does
// (local_launch.h, with the same launch bounds); under a launcher it measures the launched
// world, and --ranks, when given, must equal it.
#include <optional>
#include <string>

namespace moebench::cli {

// Returns the exit code of the launch when this process started the ranks, or nullopt when it
// is one of them and should measure. Throws UsageError for --ranks against a launched world of
// another size.
std::optional<int> launch_bench_ranks(const std::string& bench, int ranks, bool ranks_given);

}  // namespace moebench::cli
