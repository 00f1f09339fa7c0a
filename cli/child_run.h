#pragma once
// Running this executable again as a child (`bench predictor` and `calibrate` run and simulate
// whole configurations that way, each in its own process and MPI job).
#include <string>
#include <vector>

namespace moebench::cli {

// This executable's path (/proc/self/exe).
std::string self_path();
// Runs `args` (args[0]: the program) with stdout and stderr into the file `log`; its exit code
// (128 + the signal when one killed it).
int run_logged(const std::vector<std::string>& args, const std::string& log);
// A whole file's text ("" when it cannot be read).
std::string read_text(const std::string& path);

}  // namespace moebench::cli
