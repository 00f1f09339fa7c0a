#pragma once
// The words of a remote launch (`moebench launch`, the GUI's remote mode), quoted once, here.
// Locally nothing goes through a shell (every command is an argv); the remote side has one: ssh
// joins its arguments into one string for the remote login shell, so every remote command is
// built as ONE string in which each word is POSIX single-quoted (shell_quote). Plain C++, no Qt.
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace moebench::remote {

// The folder, under the remote directory, that holds one folder per launched run.
inline constexpr const char* kRunsFolder = "moebench-runs";

// POSIX single-quoting: abc -> 'abc', an embedded ' -> '\''. Safe for any bytes, including the
// empty string and newlines.
std::string shell_quote(std::string_view s);

// argv as one line a user could paste into a POSIX shell: plain words (letters, digits,
// _ . / = : @ % + , -) as they are, every other word shell_quote()d.
std::string display_command(const std::vector<std::string>& argv);

// A path for the remote shell: shell_quote(path), except that a leading "~/" (or "~" alone)
// stays unquoted so the remote shell expands it to the home directory: ~/'runs dir'.
std::string quote_remote_path(std::string_view path);

// Splits a launcher prefix ("mpirun -np 4", "srun -N2 --mpi=pmix") into words. Whitespace
// separates words; simple '...' and "..." quoting is honoured (no escapes inside). Throws
// std::invalid_argument for shell metacharacters (; | & ` $ ( ) < > \ newline) and unterminated
// quotes: a prefix is words, never shell code.
std::vector<std::string> split_launcher_prefix(std::string_view prefix);

// Throws std::invalid_argument for a host ssh cannot be given: empty, starting with '-' (read as
// an option), or holding whitespace or control characters.
void check_ssh_host(std::string_view host);

// Throws std::invalid_argument unless `option` is one ssh -o option "Key=Value" (a key of
// letters and digits, then '=' or whitespace and a value; ssh and scp both accept these).
void check_ssh_option(std::string_view option);

// A new run id: local time to the second, then 6 random hex digits ("20250114-153012-1a2b3c").
std::string new_run_id(std::time_t now = std::time(nullptr));

// "<dir>/<rel>" as the remote shell sees it ("<rel>" when dir is empty: the login directory).
std::string join_remote_path(std::string_view dir, std::string_view rel);

// The single string handed to the remote shell to run `program args...` in `dir`:
//   cd DIR && 'prefix' 'words' 'program' 'arg' ...
// (no "cd" part when dir is empty; DIR and the program through quote_remote_path, so either may
// start with ~/). Throws like
// split_launcher_prefix for a bad prefix.
std::string remote_shell_command(std::string_view dir, std::string_view prefix, std::string_view program,
                                 const std::vector<std::string>& args);

}  // namespace moebench::remote
