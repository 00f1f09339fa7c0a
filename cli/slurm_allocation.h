#pragma once
// `moebench run` inside a Slurm allocation without srun (salloc's shell, a batch script): a
// multi-rank run is refused before anything starts, with what to do instead (srun starts the
// ranks; moebench does not nest an mpirun inside an allocation). One rank runs as anywhere.
// And tasks srun started without an MPI plugin (`--mpi=none`): MPI cannot connect them.
#include <string>

namespace moebench::cli {

// Throws UsageError (exit 2) when this process is in a Slurm job but not in a step srun started
// and `ranks` > 1. given_as: how the rank count was asked for ("--ranks 4", "run.ranks = 4");
// config: the config path as given, for the suggested command.
void check_not_in_allocation_without_srun(int ranks, const std::string& given_as, const std::string& config);

// In a task srun started with several tasks but no PMI/PMIx variables (srun --mpi=none, the
// cluster's MpiDefault): task 0 says to use `srun --mpi=pmix`, every task returns 2 before
// MPI_Init (which would fail with Open MPI's long "not built with SLURM's PMI support"). Else 0.
int refuse_srun_without_mpi_plugin(const std::string& config);

}  // namespace moebench::cli
