#pragma once
// Launch command construction for the GUI launcher. Everything here is pure: the launcher feeds a
// Command to QProcess::start(program, arguments), which never goes through a local shell.
//   local:  moebench run CONFIG ...
//   remote: moebench launch HOST CONFIG ... (cli/cmd_launch.cpp: uploads the config and the files
//           it names to a run folder on the host, runs it there over ssh -tt, streams its output,
//           and imports the run folder's store into the local store localDbPath). The GUI runs
//           the same code path as the command line; the remote quoting lives in the core
//           (moebench/remote/remote_shell.h), which the helpers below wrap for the form's checks.
#include <QString>
#include <QStringList>
#include <optional>

namespace moebench::gui {

struct LaunchSpec {
  QString moebenchPath;        // local moebench executable (both modes: a remote run is `moebench launch`)
  QString configPath;          // CONFIG: a local path in both modes (a remote run uploads it)
  QStringList sets;            // "key=value" entries, each passed as --set key=value
  int steps = 0;               // > 0: --steps N
  int ranks = 0;               // > 0: --ranks N
  QString db;                  // local runs: non-empty: --db PATH (remote runs: unused; see localDbPath)
  QString experiment;          // non-empty: --experiment NAME
  QString outDir;              // non-empty: --out DIR (remote: relative to remoteDir on the host)
  bool overwrite = false;      // --overwrite: replace the checkpoints an earlier run left in the output directory
  bool remote = false;
  QString host;                // ssh destination, e.g. "user@cluster"
  QString sshOptions;          // -o Key=Value options for ssh and scp alike (sshOptionValues), e.g.
                               // "-o Port=2222 -o IdentityFile=~/.ssh/id_cluster -o ProxyJump=gw"
  QString remoteDir;           // remote working directory (empty: the login directory)
  QString launcherPrefix;      // e.g. "srun -N2", "mpirun -np 16" (split by splitPrefix)
  QString remoteMoebench = QStringLiteral("moebench");
  QString localDbPath;         // remote runs: the local store the run is imported into (launch --db)
};

struct Command {
  QString program;
  QStringList arguments;
};

// POSIX single-quoting (remote::shell_quote): abc -> 'abc', embedded ' -> '\''.
QString shellQuote(const QString& s);

// Splits a launcher prefix into words (remote::split_launcher_prefix): whitespace separates
// words; simple '...' and "..." quoting is honoured. Throws std::invalid_argument for shell
// metacharacters (; | & ` $ ( ) < > \ newline) and unterminated quotes.
QStringList splitPrefix(const QString& prefix);
// Same, but returns an error message (empty: valid) instead of throwing.
QString validatePrefix(const QString& prefix);

// Throws std::invalid_argument for a host ssh cannot be given (remote::check_ssh_host).
void checkHost(const QString& host);

// The Key=Value values of LaunchSpec::sshOptions, which holds only "-o Key=Value" (or
// "-oKey=Value") options, split as splitPrefix does. Throws std::invalid_argument naming the
// first word that is not one.
QStringList sshOptionValues(const QString& options);

// The arguments after the executable: run CONFIG [--set k=v]... [--steps N] [--ranks N]
// [--db PATH] [--experiment NAME] [--out DIR] [--overwrite].
QStringList runArguments(const LaunchSpec& spec);

// program = spec.moebenchPath, arguments = runArguments(spec).
Command buildLocalCommand(const LaunchSpec& spec);

// The arguments of a remote run: launch HOST CONFIG [--dir D] [--prefix P] [--remote-moebench M]
// [--ssh-option K=V]... [--set k=v]... [--steps N] [--ranks N] [--experiment E] [--out O]
// [--overwrite] --db LOCALDB, each value one argument. Throws std::invalid_argument for an empty
// or bad host, bad ssh options or a bad prefix (the CLI would refuse them with exit 2).
QStringList launchArguments(const LaunchSpec& spec);

// program = spec.moebenchPath, arguments = launchArguments(spec).
Command buildRemoteCommand(const LaunchSpec& spec);

// The command as one line a user could paste into a POSIX shell: words that need quoting are
// shellQuote()d, plain words (letters, digits, _ . / = : @ % + , -) are shown as they are.
QString displayCommand(const Command& command);

struct ProgressLine {
  long step = -1, total = -1;
  double loss = 0;
  bool done = false;
};

// Parses `moebench run` output lines:
//   "step  12/300 | loss 3.1234 | aux ..."      -> step 12, total 300, loss 3.1234
//   "done: 300 steps in 1.2 s | ... | final train loss 2.5 | ..." -> done, step = total = 300
// Anything else -> nullopt.
std::optional<ProgressLine> parseProgressLine(const QString& line);

}  // namespace moebench::gui
