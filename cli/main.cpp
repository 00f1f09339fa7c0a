// moebench: the command-line entry point. Exit codes: 0 ok, 1 run failed, 2 bad usage or config.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "commands.h"
#include "moebench/config/config_loader.h"

int main(int argc, char** argv) {
  CLI::App app{"moebench: a workbench for distributed Mixture-of-Experts training"};
  app.require_subcommand(1);
  moebench::cli::Action action;
  moebench::cli::add_run_command(app, action);
  moebench::cli::add_validate_command(app, action);
  moebench::cli::add_bench_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    return action ? action() : 0;
  } catch (const moebench::ConfigError& e) {
    std::fprintf(stderr, "moebench: config error:\n%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moebench: error: %s\n", e.what());
    return 1;
  }
}
