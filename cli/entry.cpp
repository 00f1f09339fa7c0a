// moebench's command line (commands.h run_cli): the verbs, their usage errors and the exit
// codes: 0 ok, 1 run failed, 2 bad usage or config. main.cpp calls it; a test binary that
// registers its own strategy first calls it the same way (tests/moebench_toy.cpp).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

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

// Usage errors CLI11 words unclearly get one plain line each (main prints it, exit 2).

// "moebench runs" for the `runs` sub-command: how a message names where the error is.
std::string command_path(const CLI::App* cmd) {
  std::string path;
  for (; cmd->get_parent(); cmd = cmd->get_parent()) path = cmd->get_name() + (path.empty() ? "" : " " + path);
  return "moebench" + (path.empty() ? "" : " " + path);
}

// An option given an empty value: "--steps=" (CLI11: "1 required TEXT missing") or "--steps ''"
// (CLI11 takes "" as given, or lets the option's check fail on it), or none at the end of the
// line. Follows the sub-command words of argv to know whose option a name is.
std::string empty_option_value(const CLI::App& app, int argc, char** argv) {
  const CLI::App* cmd = &app;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.empty() || arg[0] != '-') {
      const auto sub = cmd->get_subcommands([&](const CLI::App* s) { return s->check_name(arg); });
      if (!sub.empty()) cmd = sub.front();
      continue;
    }
    const bool glued = arg.back() == '=';
    if (glued) arg.pop_back();
    if (arg.find('=') != std::string::npos) continue;
    const CLI::Option* o = nullptr;
    for (const CLI::App* c = cmd; c && !o; c = c->get_parent()) o = c->get_option_no_throw(arg);
    if (!o || o->get_expected_min() == 0) continue;
    const char* got = glued || (i + 1 < argc && argv[i + 1][0] == '\0') ? "an empty one" : i + 1 == argc ? "none" : "";
    if (*got) return command_path(cmd) + ": " + arg + " needs a value, and got " + got + " (" + o->get_description() + ")";
  }
  return "";
}

// An empty positional argument ("moebench runs show ''").
std::string empty_positional(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const CLI::Option* o : sub->get_options())
      for (const std::string& value : o->results())
        if (!o->nonpositional() && value.empty()) return command_path(sub) + ": " + o->get_name() + " is empty";
    if (std::string e = empty_positional(*sub); !e.empty()) return e;
  }
  return "";
}

// A word that names no sub-command where one is expected ("moebench frobnicate").
std::string unknown_subcommand(const CLI::App& app) {
  const CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
  const auto subs = cmd->get_subcommands([](const CLI::App*) { return true; });
  const auto rest = cmd->remaining();
  if (subs.empty() || rest.empty() || rest.front().starts_with("-")) return "";
  std::string names;
  for (const CLI::App* sub : subs) names += (names.empty() ? "" : ", ") + sub->get_name();
  return command_path(cmd) + ": unknown sub-command '" + rest.front() + "' (expected one of: " + names + ")";
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "%s\nRun with --help for more information.\n", message.c_str());
  return 2;
}
}  // namespace

int moebench::cli::run_cli(int argc, char** argv) {
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
  moebench::cli::add_simulate_command(app, action);
  moebench::cli::add_calibrate_command(app, action);
  moebench::cli::add_infer_command(app, action);
  moebench::cli::add_launch_command(app, action);
  if (std::string e = empty_option_value(app, argc, argv); !e.empty()) return usage_error(e);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (std::string unknown = unknown_subcommand(app); !unknown.empty()) return usage_error(unknown);
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (std::string e = empty_positional(app); !e.empty()) return usage_error(e);
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
