#pragma once
// LaunchSession: one `moebench run` started by the GUI launcher, locally or over ssh, as a
// QProcess (never through a local shell; see launchcommand.h for the remote quoting).
//
//   start(spec) -> started(the command as a shell line), outputLine(...) per line (stdout and
//                  stderr merged; a last line without a newline is delivered when the process
//                  ends), progress(step, total, loss) for each progress line the CLI prints,
//                  then for a remote run with RemoteDb::fetch the database is copied back with
//                  scp (its output also goes to outputLine, and the session's own notes, which
//                  start with "moebench-gui: "), then finished(exitCode, status, dbPath) once.
//   A remote run first uploads the config (launchupload.h): start(spec) reads the config and
//                  checks every file it names (one missing: "could not start: ..." naming the
//                  key and the file, nothing run) and stages the upload in a local temporary
//                  folder; started() names the run on the uploaded copy; then the run folder is
//                  created on the host over ssh and the files are copied there with scp (their
//                  output and a note per step go to outputLine). A failed step ends the session
//                  with "could not start: ..." naming the step and the host (and a note saying
//                  the run was not started); else the run starts, as above, on the copy.
//
// status: "finished" (exit 0), "bad config" (exit 2), "killed" (exit 130, or any other end
// after cancel()), "failed" (any other end), "could not start: <reason>" (the program could
// not be executed, naming it; a remote shell's 127/126, or ssh's 255 before moebench printed
// anything, naming the host; or the spec cannot be launched, e.g. an empty host or a bad
// launcher prefix). exitCode is -1 when there is none (could not start, or the process died
// of a signal).
// dbPath: the local database file that holds the run, "" when there is none (bad config,
// could not start, a failed copy, no database written):
//   local          the CLI's store.db, resolved against the working directory (the GUI's
//                  current directory): --db, or what the CLI reports in its "recording run ...
//                  in <db>" line (a config may set [store] db), or runs.db
//   remote fetch   spec.localDbPath: the copy fetched after the run (also after a failed or
//                  killed run). It is written to <localDbPath>.part and renamed over the old
//                  copy only when scp succeeded, so a failed copy leaves the old one intact.
//   remote shared  spec.localDbPath (the remote database as seen on this machine); when empty,
//                  the remote path itself if it is absolute (same mount point on both sides)
//
// cancel():
//   upload  (a remote run's mkdir or scp step, before the run started) the step's process is
//           terminated (SIGKILL after the grace period); finished(-1, "killed", "").
//   local   SIGTERM to moebench (QProcess::terminate): the CLI forwards it to its ranks, each
//           finishes its step, the run is marked KILLED and it exits 130; SIGKILL after the
//           grace period if it has not ended by then.
//   remote  The run is started with `ssh -tt`, so it owns a remote terminal. cancel() writes
//           Ctrl-C (0x03) to ssh's stdin: the remote terminal turns it into SIGINT for the
//           foreground job (moebench stops gracefully as above; mpirun -> SIGTERM to its ranks,
//           which stop the same way). With an `srun` prefix a second Ctrl-C follows 300 ms
//           later (srun reports status on one and stops the job on two within a second; mpirun
//           would force-kill on a second one, so it gets only one). ssh stays connected
//           until the remote run has marked the run KILLED and exited, so the fetch-back then
//           copies a consistent database. If it has not ended after the grace period, ssh is
//           terminated: the connection closes, the remote terminal hangs up and the remote
//           foreground job gets SIGHUP, which `moebench run` treats like SIGTERM (cli/cmd_run.cpp).
//           The same hang-up stops the run when the connection drops or the GUI quits. SIGKILL
//           to ssh after a second grace period. Why not a remote `kill` over a second ssh
//           connection: it would need the remote pid (racy, and hidden behind srun/mpirun),
//           whereas the terminal reaches whatever the launcher prefix started.
//           With a terminal, remote lines end in \r\n: the \r is removed.
// Destroying a running session cancels it (waiting up to the grace period, then killing).
#include <QObject>
#include <QProcess>
#include <QString>

#include <memory>

#include "models/launchcommand.h"
#include "models/launchupload.h"

class QTemporaryDir;
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
  // Stops the run (see above); during the fetch-back, stops the copy. No-op when idle.
  void cancel();
  bool isRunning() const { return m_stage != Stage::idle; }
  bool isCancelling() const { return m_cancelRequested && isRunning(); }

  // The command of the current (or last) run; empty program before the first start. For a
  // remote run: the run on the uploaded config (uploadedRunSpec), not the upload's steps.
  Command command() const { return m_command; }
  LaunchSpec spec() const { return m_spec; }
  // A remote run's upload (run folder, files); empty runId for local runs.
  RemoteUpload upload() const { return m_upload; }
  // The remote run folder as the remote shell sees it ("" for local runs).
  QString remoteRunPath() const { return m_upload.runId.isEmpty() ? QString() : moebench::gui::remoteRunPath(m_spec, m_upload); }
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
  enum class Stage { idle, prepare, upload, run, fetch };  // prepare: mkdir of the run folder
  void failToStart(const QString& reason);
  QString checkProgram(const QString& program) const;
  void startProcess(const Command& c);
  void readOutput();
  void flushPartialLine();
  void handleLine(QByteArray line);
  void onProcessFinished(int exitCode, QProcess::ExitStatus status);
  void onProcessError(QProcess::ProcessError error);
  void escalate();
  QString stageUpload();  // "" or what failed
  void finishPrepare(int exitCode, QProcess::ExitStatus status);
  void finishUpload(int exitCode, QProcess::ExitStatus status);
  void startRun();
  void startFetch();
  void finishFetch(int exitCode, QProcess::ExitStatus status);
  QString runStatus(int exitCode, QProcess::ExitStatus status) const;
  QString localDatabasePath();  // notes in the log why there is none
  void finish(int exitCode, const QString& status, const QString& dbPath);

  LaunchSpec m_spec;
  Command m_command;
  RemoteUpload m_upload;
  std::unique_ptr<QTemporaryDir> m_staging;  // the upload's local files (the config, links to the rest)
  QString m_workDir;
  QString m_reportedDb;  // from "recording run ... in <db>, experiment ..."
  QProcess* m_process = nullptr;
  QTimer* m_escalation = nullptr;
  int m_escalationLevel = 0;
  QByteArray m_buffer;
  Stage m_stage = Stage::idle;
  bool m_cancelRequested = false;
  bool m_runOutputSeen = false;  // moebench's header or a progress line arrived
  int m_graceMs = 15000;
  int m_runExitCode = -1;
  QString m_runStatus;
  QString m_fetchTarget;
  int m_exitCode = -1;
  QString m_status;
  QString m_dbPath;
};

}  // namespace moebench::gui
