#pragma once
// Sub-command registration for the moebench CLI. Each add_* registers a sub-command whose
// callback stores the action to run in `action`; run_cli runs it and maps exceptions to exit
// codes (0 ok, 1 run failed, 2 bad usage or config).
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "option_checks.h"

namespace moebench::cli {

using Action = std::function<int()>;

// The whole command line (cli/entry.cpp): parses argv, runs the verb, returns the exit code.
// Strategies registered before the call (strategies/strategy_descriptor.h) are known to it.
int run_cli(int argc, char** argv);

// The command line as started (argv), for re-launching under mpirun.
void set_program_args(int argc, char** argv);
const std::vector<std::string>& program_args();
// The MPI rank a launcher gave this process (from its environment), or -1 when not launched
// by one; used before MPI is initialised (e.g. to print config errors on rank 0 only).
int launcher_rank();
// The number of ranks that launcher started, or -1 when unknown or not launched.
int launcher_size();

void add_run_command(CLI::App& app, Action& action);
void add_ablate_command(CLI::App& app, Action& action);
void add_validate_command(CLI::App& app, Action& action);
void add_bench_command(CLI::App& app, Action& action);
void add_runs_command(CLI::App& app, Action& action);
void add_trace_command(CLI::App& app, Action& action);
void add_export_command(CLI::App& app, Action& action);
void add_plan_command(CLI::App& app, Action& action);
void add_simulate_command(CLI::App& app, Action& action);
void add_calibrate_command(CLI::App& app, Action& action);
void add_infer_command(CLI::App& app, Action& action);
void add_launch_command(CLI::App& app, Action& action);

}  // namespace moebench::cli
