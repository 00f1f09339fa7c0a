#pragma once
// What a batch scheduler tells a process about its launch, read from the environment: Slurm's job,
// step and task layout (SLURM_JOB_ID, SLURM_STEP_ID, SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURM_NODEID, SLURM_NODELIST, SLURM_STEP_TASKS_PER_NODE, SLURM_CPUS_ON_NODE), whether srun
// started this process (a step) or it runs in an allocation without one (salloc's shell, a batch
// script), the rule for making MPI yield on an oversubscribed node, and the tags a run records
// about its launcher. Plain getenv: no Slurm library.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace moebench {

struct SlurmEnv {
  std::string job_id;    // SLURM_JOB_ID
  std::string step_id;   // SLURM_STEP_ID: set in the tasks srun starts, empty in salloc / a batch script
  std::string nodelist;  // SLURM_NODELIST (compressed, e.g. "node[01-04]")
  int ntasks = 0;        // SLURM_NTASKS (0: not given)
  int procid = -1, localid = -1, nodeid = -1;  // SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID
  int tasks_on_node = 0;  // tasks of this step (else of the job) on this node; 0: not given
  int cpus_on_node = 0;   // SLURM_CPUS_ON_NODE: the CPUs Slurm gave the job on this node; 0: not given
  bool in_step() const { return !step_id.empty(); }  // started by srun
};

// The Slurm job this process runs in (SLURM_JOB_ID set), else nullopt.
std::optional<SlurmEnv> slurm_env();

// Tasks on node `node` of a Slurm per-node list ("4", "2(x3),1": nodes 0-2 run 2, node 3 runs 1);
// 0 when the list does not name that node or cannot be read.
int slurm_tasks_on_node(const std::string& per_node, int node);

// Under srun with more tasks on this node than CPUs to run them (the fewer of the node's online
// CPUs and the CPUs Slurm gave the job here): MPI ranks that busy-poll would take turns on a core
// and every message waits a scheduler slice. mpirun sets mpi_yield_when_idle itself when it
// oversubscribes; under srun no one does.
bool slurm_node_oversubscribed(const SlurmEnv& env, int online_cpus);

// Before MPI_Init: sets OMPI_MCA_mpi_yield_when_idle=1 when slurm_node_oversubscribed (unless the
// user set it). Returns whether it did.
bool yield_when_oversubscribed_under_srun();

// The tags a run records about how it was launched: "launcher" (srun, mpirun; none for a rank
// started alone) and, in a Slurm job, slurm_job_id, slurm_step_id, slurm_nodelist, slurm_ntasks,
// slurm_tasks_per_node (only the variables that are set).
std::vector<std::pair<std::string, std::string>> launch_tags();

}  // namespace moebench
