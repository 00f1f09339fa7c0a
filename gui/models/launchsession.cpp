#include "models/launchsession.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTimer>

#include <stdexcept>

namespace moebench::gui {

namespace {
constexpr qsizetype kMaxLineBytes = 1 << 20;  // a "line" longer than this is delivered in pieces
const QString kNote = QStringLiteral("moebench-gui: ");
const QString kLaunchNote = QStringLiteral("moebench launch: ");
}  // namespace

LaunchSession::LaunchSession(QObject* parent) : QObject(parent), m_escalation(new QTimer(this)) {
  m_escalation->setSingleShot(true);
  connect(m_escalation, &QTimer::timeout, this, &LaunchSession::escalate);
}

LaunchSession::~LaunchSession() {
  if (!m_process || m_process->state() == QProcess::NotRunning) return;
  m_process->disconnect(this);
  m_process->terminate();
  if (!m_process->waitForFinished(m_graceMs)) {
    m_process->terminate();  // a remote launch: a second stop request
    if (!m_process->waitForFinished(m_spec.remote ? m_graceMs : 2000)) {
      m_process->kill();
      m_process->waitForFinished(2000);
    }
  }
}

QString LaunchSession::checkProgram(const QString& program) const {
  if (program.trimmed().isEmpty()) return QStringLiteral("no moebench executable given");
  if (!program.contains(QLatin1Char('/'))) {
    if (QStandardPaths::findExecutable(program).isEmpty())
      return QStringLiteral("'%1' not found in PATH").arg(program);
    return {};
  }
  const QFileInfo fi(QDir(m_workDir).absoluteFilePath(program));
  if (!fi.exists()) return QStringLiteral("'%1' does not exist").arg(program);
  if (fi.isDir() || !fi.isExecutable()) return QStringLiteral("'%1' is not an executable file").arg(program);
  return {};
}

bool LaunchSession::start(const LaunchSpec& spec) {
  if (isRunning()) return false;
  m_spec = spec;
  m_command = {};
  m_workDir = QDir::currentPath();
  m_reportedDb.clear();
  m_remoteRunPath.clear();
  m_lastLaunchNote.clear();
  m_launchRefusal.clear();
  m_imported = false;
  m_buffer.clear();
  m_cancelRequested = false;
  m_escalationLevel = 0;
  m_runOutputSeen = false;
  if (spec.configPath.trimmed().isEmpty()) {
    failToStart(QStringLiteral("no config file given"));
    return false;
  }
  if (spec.remote && spec.localDbPath.trimmed().isEmpty()) {
    failToStart(QStringLiteral("no local run store to import the remote run into"));
    return false;
  }
  if (spec.remote) m_spec.localDbPath = QDir(m_workDir).absoluteFilePath(spec.localDbPath.trimmed());
  try {
    m_command = m_spec.remote ? buildRemoteCommand(m_spec) : buildLocalCommand(m_spec);
  } catch (const std::invalid_argument& e) {
    failToStart(QString::fromUtf8(e.what()));
    return false;
  }
  if (const QString problem = checkProgram(m_command.program); !problem.isEmpty()) {
    failToStart(problem);
    return false;
  }
  m_running = true;
  emit started(displayCommand(m_command));
  if (m_process) m_process->deleteLater();
  m_process = new QProcess(this);
  m_process->setProcessChannelMode(QProcess::MergedChannels);
  m_process->setWorkingDirectory(m_workDir);
  connect(m_process, &QProcess::readyReadStandardOutput, this, &LaunchSession::readOutput);
  connect(m_process, &QProcess::finished, this, &LaunchSession::onProcessFinished);
  connect(m_process, &QProcess::errorOccurred, this, &LaunchSession::onProcessError);
  m_process->start(m_command.program, m_command.arguments);
  return true;
}

void LaunchSession::failToStart(const QString& reason) {
  const QString status = QStringLiteral("could not start: ") + reason;
  m_exitCode = -1;
  m_status = status;
  m_dbPath.clear();
  QMetaObject::invokeMethod(this, [this, status] { emit finished(-1, status, QString()); }, Qt::QueuedConnection);
}

void LaunchSession::readOutput() {
  m_buffer += m_process->readAllStandardOutput();
  qsizetype from = 0;
  for (;;) {
    const qsizetype nl = m_buffer.indexOf('\n', from);
    if (nl < 0) break;
    handleLine(m_buffer.mid(from, nl - from));
    from = nl + 1;
  }
  m_buffer.remove(0, from);
  if (m_buffer.size() > kMaxLineBytes) flushPartialLine();
}

void LaunchSession::flushPartialLine() {
  if (m_buffer.isEmpty()) return;
  QByteArray rest;
  rest.swap(m_buffer);
  handleLine(rest);
}

void LaunchSession::handleLine(QByteArray bytes) {
  while (bytes.endsWith('\r')) bytes.chop(1);
  // The remote terminal echoes the Ctrl-C that a cancel became as "^C" in front of the next line.
  if (m_spec.remote && m_cancelRequested)
    while (bytes.startsWith("^C")) bytes.remove(0, 2);
  const QString line = QString::fromUtf8(bytes);
  emit outputLine(line);
  if (const auto p = parseProgressLine(line)) {
    m_runOutputSeen = true;
    emit progress(int(p->step), int(p->total), p->loss);
    return;
  }
  if (line.startsWith(QLatin1String("moebench run: "))) m_runOutputSeen = true;
  if (!m_spec.remote) {
    // "recording run 1a2b3c4d (name) in <db>, experiment <experiment>" (cli/cmd_run.cpp)
    static const QRegularExpression recording(QStringLiteral(R"(^recording run \S+ \(.*?\) in (.+), experiment )"));
    if (const auto m = recording.match(line); m.hasMatch()) m_reportedDb = m.captured(1);
    return;
  }
  // `moebench launch` refusing its input before connecting: "moebench: launch: <what is wrong>".
  if (line.startsWith(QLatin1String("moebench: launch: "))) m_launchRefusal = line.mid(18);
  if (line.startsWith(kLaunchNote)) {
    m_lastLaunchNote = line.mid(kLaunchNote.size());
    // "creating the run folder HOST:PATH: ssh ..." (cli/cmd_launch.cpp)
    static const QString creating = QStringLiteral("creating the run folder ");
    if (m_lastLaunchNote.startsWith(creating)) {
      const QString rest = m_lastLaunchNote.mid(creating.size());
      const qsizetype end = rest.lastIndexOf(QStringLiteral(": ssh "));
      const QString where = end < 0 ? rest : rest.left(end);
      m_remoteRunPath = where.mid(where.indexOf(QLatin1Char(':')) + 1);
    }
    return;
  }
  // "added run 7 (1a2b3c4d 'name') into DB: ...", "replaced run ... in DB: ...", "kept run ... in DB: ..."
  static const QRegularExpression imported(QStringLiteral(R"(^(added|replaced|kept) run \d+ \(.*\) (into|in) .+: )"));
  if (imported.match(line).hasMatch()) m_imported = true;
}

void LaunchSession::onProcessError(QProcess::ProcessError error) {
  if (error != QProcess::FailedToStart) return;  // the others end in finished()
  finish(-1, QStringLiteral("could not start: '%1' (%2)").arg(m_process->program(), m_process->errorString()), QString());
}

QString LaunchSession::runStatus(int exitCode, QProcess::ExitStatus status) const {
  if (status == QProcess::CrashExit) return m_cancelRequested ? QStringLiteral("killed") : QStringLiteral("failed");
  if (exitCode == 0) return QStringLiteral("finished");
  if (exitCode == 2 && m_spec.remote && !m_launchRefusal.isEmpty() && !m_runOutputSeen)
    return QStringLiteral("could not start: ") + m_launchRefusal;
  if (exitCode == 2) return QStringLiteral("bad config");
  if (exitCode == 130 || m_cancelRequested) return QStringLiteral("killed");
  // `moebench launch`: 3 is a failed step of the launch itself (ssh, scp), its message the last note.
  if (m_spec.remote && exitCode == 3 && !m_runOutputSeen)
    return QStringLiteral("could not start: ") +
           (m_lastLaunchNote.isEmpty() ? QStringLiteral("the remote launch failed (exit 3; see the log)") : m_lastLaunchNote);
  return QStringLiteral("failed");
}

void LaunchSession::onProcessFinished(int exitCode, QProcess::ExitStatus status) {
  flushPartialLine();
  m_escalation->stop();
  const int code = status == QProcess::CrashExit ? -1 : exitCode;
  const QString st = runStatus(exitCode, status);
  if (st.startsWith(QLatin1String("could not start")) || st == QLatin1String("bad config")) {
    finish(code, st, QString());
    return;
  }
  if (m_spec.remote) {
    if (!m_imported) emit outputLine(kNote + QStringLiteral("nothing was imported into %1").arg(QDir::toNativeSeparators(m_spec.localDbPath)));
    finish(code, st, m_imported ? m_spec.localDbPath : QString());
    return;
  }
  finish(code, st, localDatabasePath());
}

QString LaunchSession::localDatabasePath() {
  const QString db = !m_reportedDb.isEmpty() ? m_reportedDb : !m_spec.db.isEmpty() ? m_spec.db : QStringLiteral("runs.db");
  const QString path = QDir(m_workDir).absoluteFilePath(db);
  if (!QFileInfo::exists(path)) {
    emit outputLine(kNote + QStringLiteral("no run database at %1").arg(QDir::toNativeSeparators(path)));
    return {};
  }
  return path;
}

void LaunchSession::cancel() {
  if (!isRunning() || !m_process) return;
  if (m_cancelRequested) {  // a second cancel: go straight to the next step
    escalate();
    return;
  }
  m_cancelRequested = true;
  m_escalationLevel = 0;
  emit outputLine(kNote + (m_spec.remote ? QStringLiteral("cancelling: SIGTERM to moebench launch (Ctrl-C to the remote run)")
                                         : QStringLiteral("cancelling: SIGTERM to moebench")));
  m_process->terminate();
  m_escalation->start(m_graceMs);
}

void LaunchSession::escalate() {
  if (!m_process || m_process->state() == QProcess::NotRunning) return;
  if (m_spec.remote && m_escalationLevel == 0) {
    emit outputLine(kNote + QStringLiteral("the remote run has not stopped: a second stop request (it stops at once)"));
    m_process->terminate();
    m_escalationLevel = 1;
    m_escalation->start(m_graceMs);
    return;
  }
  emit outputLine(kNote + QStringLiteral("'%1' has not stopped: killing it").arg(m_process->program()));
  m_process->kill();
  m_escalationLevel = 2;
}

void LaunchSession::finish(int exitCode, const QString& status, const QString& dbPath) {
  m_escalation->stop();
  m_running = false;
  m_exitCode = exitCode;
  m_status = status;
  m_dbPath = dbPath;
  emit finished(exitCode, status, dbPath);
}

}  // namespace moebench::gui
