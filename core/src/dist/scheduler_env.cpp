// Slurm's environment read into SlurmEnv, the oversubscription rule that makes MPI yield under
// srun, and the launcher tags a run records (scheduler_env.h).
#include "moebench/dist/scheduler_env.h"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace moebench {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A non-negative integer, else `fallback`.
int to_int(std::string_view s, int fallback) {
  if (s.empty() || s.size() > 9) return fallback;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return fallback;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

int slurm_tasks_on_node(const std::string& per_node, int node) {
  if (node < 0) return 0;
  std::string_view rest = per_node;
  int first = 0;  // the index of the first node the next item describes
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    int repeat = 1;
    if (const size_t paren = item.find("(x"); paren != std::string_view::npos) {
      if (item.back() != ')') return 0;
      repeat = to_int(item.substr(paren + 2, item.size() - paren - 3), -1);
      item = item.substr(0, paren);
    }
    const int tasks = to_int(item, -1);
    if (tasks < 0 || repeat < 1) return 0;
    if (node < first + repeat) return tasks;
    first += repeat;
  }
  return 0;
}

std::optional<SlurmEnv> slurm_env() {
  SlurmEnv e;
  e.job_id = env("SLURM_JOB_ID");
  if (e.job_id.empty()) return std::nullopt;
  e.step_id = env("SLURM_STEP_ID");
  e.nodelist = env("SLURM_NODELIST");
  e.ntasks = to_int(env("SLURM_NTASKS"), 0);
  e.procid = to_int(env("SLURM_PROCID"), -1);
  e.localid = to_int(env("SLURM_LOCALID"), -1);
  e.nodeid = to_int(env("SLURM_NODEID"), -1);
  const int node = e.nodeid < 0 ? 0 : e.nodeid;
  const std::string step_layout = env("SLURM_STEP_TASKS_PER_NODE");
  e.tasks_on_node = slurm_tasks_on_node(step_layout.empty() ? env("SLURM_TASKS_PER_NODE") : step_layout, node);
  e.cpus_on_node = to_int(env("SLURM_CPUS_ON_NODE"), 0);
  return e;
}

bool slurm_node_oversubscribed(const SlurmEnv& e, int online_cpus) {
  if (!e.in_step() || e.tasks_on_node <= 1) return false;
  int cpus = online_cpus > 0 ? online_cpus : 1;
  if (e.cpus_on_node > 0 && e.cpus_on_node < cpus) cpus = e.cpus_on_node;
  return e.tasks_on_node > cpus;
}

bool yield_when_oversubscribed_under_srun() {
  if (std::getenv("OMPI_MCA_mpi_yield_when_idle")) return false;  // the user's choice stands
  const std::optional<SlurmEnv> e = slurm_env();
  if (!e || !slurm_node_oversubscribed(*e, (int)sysconf(_SC_NPROCESSORS_ONLN))) return false;
  return setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0) == 0;
}

std::vector<std::pair<std::string, std::string>> launch_tags() {
  std::vector<std::pair<std::string, std::string>> tags;
  const std::optional<SlurmEnv> e = slurm_env();
  // mpirun's daemons export OMPI_COMM_WORLD_SIZE to the ranks they start (also an mpirun inside
  // a Slurm job); tasks srun starts directly have a step id and no OMPI_COMM_WORLD_SIZE.
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) tags.emplace_back("launcher", "mpirun");
  else if (e && e->in_step()) tags.emplace_back("launcher", "srun");
  if (!e) return tags;
  tags.emplace_back("slurm_job_id", e->job_id);
  for (const auto& [tag, var] : {std::pair{"slurm_step_id", "SLURM_STEP_ID"}, {"slurm_nodelist", "SLURM_NODELIST"},
                                 {"slurm_ntasks", "SLURM_NTASKS"}, {"slurm_tasks_per_node", "SLURM_TASKS_PER_NODE"}})
    if (const std::string v = env(var); !v.empty()) tags.emplace_back(tag, v);
  return tags;
}

}  // namespace moebench
