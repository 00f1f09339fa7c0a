#pragma once
// Sub-command registration for the moebench CLI. Each add_* registers a sub-command whose
// callback stores the action to run in `action`; main() runs it and maps exceptions to exit
// codes (0 ok, 1 run failed, 2 bad usage or config).
#include <CLI/CLI.hpp>

#include <climits>
#include <functional>

namespace moebench::cli {

using Action = std::function<int()>;

// Integer option checks with readable messages ("Value 0 not in range 1 to 2147483647").
inline CLI::Range positive() { return CLI::Range(1, INT_MAX); }
inline CLI::Range non_negative() { return CLI::Range(0, INT_MAX); }

void add_run_command(CLI::App& app, Action& action);
void add_validate_command(CLI::App& app, Action& action);
void add_bench_command(CLI::App& app, Action& action);

}  // namespace moebench::cli
