// The refusals of `moebench run` under Slurm where its ranks could not form one job: several
// ranks in an allocation without srun, tasks srun started without an MPI plugin
// (slurm_allocation.h).
#include "slurm_allocation.h"

#include <cstdio>
#include <cstdlib>

#include "moebench/config/usage_error.h"
#include "moebench/dist/scheduler_env.h"

namespace moebench::cli {

void check_not_in_allocation_without_srun(int ranks, const std::string& given_as, const std::string& config) {
  if (ranks <= 1) return;
  const std::optional<SlurmEnv> e = slurm_env();
  if (!e || e->in_step()) return;
  const std::string tasks = e->ntasks > 0 ? " (" + std::to_string(e->ntasks) + " tasks)" : "";
  throw UsageError(given_as + " inside Slurm job " + e->job_id + tasks +
                   " without srun: start the ranks with `srun -n " + std::to_string(ranks) + " moebench run " + config +
                   " ...` (moebench does not start mpirun inside an allocation; each srun task is one rank)");
}

int refuse_srun_without_mpi_plugin(const std::string& config) {
  const std::optional<SlurmEnv> e = slurm_env();
  if (!e || !e->in_step() || e->ntasks <= 1) return 0;
  for (const char* v : {"PMIX_RANK", "PMI_RANK", "PMI_FD", "OMPI_COMM_WORLD_SIZE"})
    if (std::getenv(v)) return 0;
  if (e->procid <= 0) {
    std::fprintf(stderr,
                 "moebench: srun started %d tasks without an MPI plugin (srun --mpi=none or the cluster's "
                 "MpiDefault): start them with `srun --mpi=pmix -n %d moebench run %s ...` (`srun --mpi=list` "
                 "shows the plugins)\n",
                 e->ntasks, e->ntasks, config.c_str());
    std::fflush(stderr);
  }
  return 2;
}

}  // namespace moebench::cli
