// Process-level helpers of the CLI: the original command line and the launcher's rank.
#include <cstdlib>

#include "commands.h"

namespace moebench::cli {
namespace {
std::vector<std::string>& args_storage() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

void set_program_args(int argc, char** argv) { args_storage().assign(argv, argv + argc); }

const std::vector<std::string>& program_args() { return args_storage(); }

int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return -1;
}

int launcher_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return -1;
}

}  // namespace moebench::cli
