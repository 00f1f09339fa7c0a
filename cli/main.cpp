// moebench: the command-line entry point. Exit codes: 0 ok, 1 run failed, 2 bad usage or config.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "commands.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/usage_error.h"
#include "moebench/store/run_store.h"

namespace {
// libgomp reads OMP_WAIT_POLICY once, when it loads. Its default spin-waiting fights
// OpenBLAS's worker threads for the cores (measured on 2 cores: quickstart 24.8 s active vs
// 4.9 s passive; bench moe-layer 77 vs 136 GFLOP/s), so unless the user chose a policy the
// CLI re-executes itself once with the passive one.
void prefer_passive_omp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY")) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on with the default policy
}
}  // namespace

int main(int argc, char** argv) {
  prefer_passive_omp_wait(argv);
  moebench::cli::set_program_args(argc, argv);
  CLI::App app{"moebench: a workbench for distributed Mixture-of-Experts training"};
  app.require_subcommand(1);
  moebench::cli::Action action;
  moebench::cli::add_run_command(app, action);
  moebench::cli::add_ablate_command(app, action);
  moebench::cli::add_validate_command(app, action);
  moebench::cli::add_bench_command(app, action);
  moebench::cli::add_runs_command(app, action);
  moebench::cli::add_trace_command(app, action);
  moebench::cli::add_export_command(app, action);
  moebench::cli::add_plan_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    return action ? action() : 0;
  } catch (const moebench::ConfigError& e) {
    if (moebench::cli::launcher_rank() <= 0) std::fprintf(stderr, "moebench: config error:\n%s\n", e.what());
    return 2;
  } catch (const moebench::UsageError& e) {
    std::fprintf(stderr, "moebench: %s\n", e.what());
    return 2;
  } catch (const moebench::StoreError& e) {
    // The run store's messages name the file: "moebench: runs.db: does not exist".
    std::fprintf(stderr, "moebench: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moebench: error: %s\n", e.what());
    return 1;
  }
}
