#pragma once
// LaunchSession: one run started by the GUI launcher, as a local QProcess (never through a local
// shell; see launchcommand.h):
//   local   moebench run CONFIG ...
//   remote  moebench launch HOST CONFIG ... --db <localDbPath>: the command line's remote launch
//           (cli/cmd_launch.cpp) uploads the config and the files it names to a new run folder on
//           the host, runs it there over ssh -tt, streams its output, and imports the run
//           folder's store into the local store, so the GUI runs exactly what `moebench launch`
//           runs, and the run lands in the store the GUI shows.
//
//   start(spec) -> started(the command as a shell line), outputLine(...) per line (stdout and
//                  stderr merged; a last line without a newline is delivered when the process
//                  ends; `moebench launch` writes its steps as "moebench launch: ..." lines and the
//                  session its own notes as "moebench-gui: ..."), progress(step, total, loss) for
//                  each progress line the run prints, then finished(exitCode, status, dbPath) once.
//
// status: "finished" (exit 0), "bad config" (exit 2: the config or an option; the run's message
// is in the log), "killed" (exit 130, or any other end
// after cancel()), "failed" (any other end), "could not start: <reason>" (the program could not
// be executed, naming it; the spec cannot be launched, e.g. an empty host or a bad launcher
// prefix; `moebench launch` refused its input before connecting (exit 2 with "moebench: launch:
// <reason>", e.g. a file the config names is missing); or a step of the remote launch failed
// (exit 3) before the run printed anything: the reason is `moebench launch`'s message naming the
// step and the host). exitCode is -1 when there is
// none (could not start, or the process died of a signal).
// dbPath: the local database file that holds the run, "" when there is none:
//   local   the CLI's store.db, resolved against the working directory (the GUI's current
//           directory): --db, or what the CLI reports in its "recording run ... in <db>" line (a
//           config may set [store] db), or runs.db
//   remote  spec.localDbPath (absolute), once `moebench launch` reported the run imported into it
//           (also after a failed or killed run); "" when nothing was imported (the store then is
//           exactly as it was)
//
// cancel(): SIGTERM to moebench (QProcess::terminate). A local run forwards it to its ranks: each
// finishes its step, the run is marked KILLED and it exits 130. `moebench launch` forwards it as
// Ctrl-C through the remote terminal (two with an srun prefix), with the same effect on the host,
// then fetches and imports the KILLED run. If it has not ended after the grace period: a local
// run gets SIGKILL; a remote one a second SIGTERM (a second stop request: the remote run stops
// at once and is still fetched and imported; `moebench launch` hangs up the connection if it still has not ended after 15 s), and
// SIGKILL after another grace period (its ssh then ends with it and the hang-up stops the remote
// run; nothing is imported).
// Destroying a running session cancels it (waiting up to the grace period per step, then killing).
#include <QObject>
#include <QProcess>
#include <QString>

#include "models/launchcommand.h"

class QTimer;

namespace moebench::gui {

class LaunchSession : public QObject {
  Q_OBJECT

 public:
  explicit LaunchSession(QObject* parent = nullptr);
  ~LaunchSession() override;

  // Starts a run; false when one is already running (nothing else happens) or when the spec
  // cannot be launched (finished(-1, "could not start: ...", "") follows, queued).
  bool start(const LaunchSpec& spec);
  // Stops the run (see above). No-op when idle.
  void cancel();
  bool isRunning() const { return m_running; }
  bool isCancelling() const { return m_cancelRequested && isRunning(); }

  // The command of the current (or last) run; empty program before the first start.
  Command command() const { return m_command; }
  LaunchSpec spec() const { return m_spec; }
  // A remote run's folder on the host as `moebench launch` reported it ("" before that, and for
  // local runs).
  QString remoteRunPath() const { return m_remoteRunPath; }
  // Milliseconds between the escalation steps of cancel() (default 15000).
  void setGracePeriod(int ms) { m_graceMs = ms; }
  int gracePeriod() const { return m_graceMs; }
  // The last finished() values.
  int lastExitCode() const { return m_exitCode; }
  QString lastStatus() const { return m_status; }
  QString lastDatabasePath() const { return m_dbPath; }

 signals:
  void started(const QString& command);  // displayCommand() of what was started
  void outputLine(const QString& line);
  void progress(int step, int total, double loss);
  void finished(int exitCode, const QString& status, const QString& dbPath);

 private:
  void failToStart(const QString& reason);
  QString checkProgram(const QString& program) const;
  void readOutput();
  void flushPartialLine();
  void handleLine(QByteArray line);
  void onProcessFinished(int exitCode, QProcess::ExitStatus status);
  void onProcessError(QProcess::ProcessError error);
  void escalate();
  QString runStatus(int exitCode, QProcess::ExitStatus status) const;
  QString localDatabasePath();  // notes in the log why there is none
  void finish(int exitCode, const QString& status, const QString& dbPath);

  LaunchSpec m_spec;
  Command m_command;
  QString m_workDir;
  QString m_reportedDb;     // local: from "recording run ... in <db>, experiment ..."
  QString m_remoteRunPath;  // remote: from "moebench launch: creating the run folder HOST:PATH: ..."
  QString m_lastLaunchNote; // remote: the last "moebench launch: " line, without the prefix
  QString m_launchRefusal;  // remote: "moebench: launch: <message>" (bad input, exit 2), the message
  bool m_imported = false;  // remote: "added|replaced|kept run N (...) into|in DB: ..." seen
  QProcess* m_process = nullptr;
  QTimer* m_escalation = nullptr;
  int m_escalationLevel = 0;
  QByteArray m_buffer;
  bool m_running = false;
  bool m_cancelRequested = false;
  bool m_runOutputSeen = false;  // moebench's header or a progress line arrived
  int m_graceMs = 15000;
  int m_exitCode = -1;
  QString m_status;
  QString m_dbPath;
};

}  // namespace moebench::gui
