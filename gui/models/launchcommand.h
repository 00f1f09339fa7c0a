#pragma once
// Launch command construction for the GUI launcher (issue: "Launcher: run locally or over ssh").
// Everything here is pure: the launcher widget feeds a Command to QProcess::start(program,
// arguments), which never goes through a local shell. Only the remote side has a shell (ssh
// joins its arguments into one string for the remote login shell), so the remote command is
// built as ONE string in which every word is POSIX single-quoted by shellQuote().
// The remote command runs with a remote terminal (ssh -tt) so that it can be cancelled: see
// LaunchSession (launchsession.h) for why.
#include <QString>
#include <QStringList>
#include <optional>

namespace moebench::gui {

struct LaunchSpec {
  QString moebenchPath;        // local moebench executable
  QString configPath;          // CONFIG: a local path. A remote run uploads it with the files it
                               // names (launchupload.h) and runs the copy; in the spec of that
                               // run (uploadedRunSpec) it is the copy's path relative to remoteDir.
  QStringList sets;            // "key=value" entries, each passed as --set key=value
  int steps = 0;               // > 0: --steps N
  int ranks = 0;               // > 0: --ranks N
  QString db;                  // non-empty: --db PATH
  QString experiment;          // non-empty: --experiment NAME
  QString outDir;              // non-empty: --out DIR
  bool overwrite = false;      // --overwrite: replace the checkpoints an earlier run left in the output directory
  bool remote = false;
  QString host;                // ssh destination, e.g. "user@cluster"
  QString sshOptions;          // -o Key=Value options for ssh and scp alike (sshOptionWords), e.g.
                               // "-o Port=2222 -o IdentityFile=~/.ssh/id_cluster -o ProxyJump=gw"
  QString remoteDir;           // remote working directory (empty: the login directory)
  QString launcherPrefix;      // e.g. "srun -N2", "mpirun -np 16" (split by splitPrefix)
  QString remoteMoebench = QStringLiteral("moebench");
  // Remote runs: how the run database reaches this machine once the run has ended.
  //   fetch:  copied back with scp (buildFetchDbCommand) to localDbPath
  //   shared: the remote database is on a shared file system; localDbPath is where it is seen here
  enum class RemoteDb { fetch, shared };
  RemoteDb remoteDb = RemoteDb::fetch;
  QString localDbPath;
};

struct Command {
  QString program;
  QStringList arguments;
};

// POSIX single-quoting: abc -> 'abc', embedded ' -> '\''. Safe for any string, including
// empty strings and newlines.
QString shellQuote(const QString& s);

// A path for the remote shell: shellQuote(path), except that a leading "~/" (or "~" alone)
// stays unquoted so the remote shell expands it to the home directory: ~/'runs dir'.
QString quoteRemotePath(const QString& path);

// Splits a launcher prefix into words. Whitespace separates words; simple '...' and "..."
// quoting is honoured (no escapes inside). Throws std::invalid_argument for shell
// metacharacters (; | & ` $ ( ) < > \ newline) and unterminated quotes.
QStringList splitPrefix(const QString& prefix);
// Same, but returns an error message (empty: valid) instead of throwing.
QString validatePrefix(const QString& prefix);

// Throws std::invalid_argument for a host ssh cannot be given: empty, or starting with '-'
// (it would be read as an option).
void checkHost(const QString& host);

// The words of LaunchSpec::sshOptions (split as splitPrefix does): only "-o Key=Value" (or
// "-oKey=Value") options, which ssh and scp both accept (unlike -p/-P for the port). Throws
// std::invalid_argument naming the first word that is not one.
QStringList sshOptionWords(const QString& options);

// The arguments after the executable: run CONFIG [--set k=v]... [--steps N] [--ranks N]
// [--db PATH] [--experiment NAME] [--out DIR].
QStringList runArguments(const LaunchSpec& spec);

// program = spec.moebenchPath, arguments = runArguments(spec).
Command buildLocalCommand(const LaunchSpec& spec);

// The single string handed to the remote shell:
//   cd 'DIR' && 'prefix' 'words' 'moebench' 'run' 'CONFIG' ...
// (no "cd" part when remoteDir is empty). Throws std::invalid_argument on a bad prefix.
QString remoteShellCommand(const LaunchSpec& spec);

// program "ssh", arguments {"-tt", "-o", "BatchMode=yes", host, "--", remoteShellCommand(spec)}.
// -tt gives the remote command a terminal: the run then stops when the connection drops
// (SIGHUP), and a Ctrl-C byte written to ssh's stdin reaches it as SIGINT.
// Throws std::invalid_argument on an empty host or a bad prefix.
Command buildRemoteCommand(const LaunchSpec& spec);

// The remote database path: spec.db or "runs.db" (moebench's default), relative paths
// resolved against remoteDir.
QString remoteDbPath(const LaunchSpec& spec);

// scp -O -T -o BatchMode=yes host:'<remote db path>' localPath. -O selects the legacy scp
// protocol, where the remote path is interpreted by the remote shell, so the quoting is exact.
// -T turns off scp's check that the file name the server sends back matches the requested
// one: that check compares against the quoted string and fails on it ("protocol error:
// filename does not match request", seen with OpenSSH 9.2); the copy goes to the one file
// localPath names, so the check protects nothing here.
Command buildFetchDbCommand(const LaunchSpec& spec, const QString& localPath);

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
