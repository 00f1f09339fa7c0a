#include "models/launchsession.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QPointer>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>

#include <cstdio>
#include <stdexcept>

namespace moebench::gui {

namespace {
constexpr qsizetype kMaxLineBytes = 1 << 20;  // a "line" longer than this is delivered in pieces
const QString kNote = QStringLiteral("moebench-gui: ");

bool launcherIsSrun(const QString& prefix) {
  try {
    const QStringList words = splitPrefix(prefix);
    return !words.isEmpty() && QFileInfo(words.first()).fileName() == QLatin1String("srun");
  } catch (const std::invalid_argument&) {
    return false;
  }
}
}  // namespace

LaunchSession::LaunchSession(QObject* parent) : QObject(parent), m_escalation(new QTimer(this)) {
  m_escalation->setSingleShot(true);
  connect(m_escalation, &QTimer::timeout, this, &LaunchSession::escalate);
}

LaunchSession::~LaunchSession() {
  if (!m_process || m_process->state() == QProcess::NotRunning) return;
  m_process->disconnect(this);
  if (m_stage == Stage::run && m_spec.remote) m_process->write("\x03");
  else m_process->terminate();
  if (!m_process->waitForFinished(m_graceMs)) {
    m_process->terminate();
    if (!m_process->waitForFinished(2000)) {
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
  m_buffer.clear();
  m_cancelRequested = false;
  m_escalationLevel = 0;
  m_runExitCode = -1;
  m_runStatus.clear();
  m_runOutputSeen = false;
  m_upload = {};
  m_staging.reset();
  try {
    m_command = spec.remote ? buildRemoteCommand(spec) : buildLocalCommand(spec);
  } catch (const std::invalid_argument& e) {
    failToStart(QString::fromUtf8(e.what()));
    return false;
  }
  if (spec.configPath.trimmed().isEmpty()) {
    failToStart(QStringLiteral("no config file given"));
    return false;
  }
  QString problem = checkProgram(m_command.program);
  if (!problem.isEmpty() && spec.remote) problem += QStringLiteral(" (install openssh-client)");
  if (spec.remote && problem.isEmpty()) {
    if (!checkProgram(QStringLiteral("scp")).isEmpty())
      problem = QStringLiteral("'scp' not found in PATH, needed to upload the config (install openssh-client)");
    else if (spec.remoteDb == LaunchSpec::RemoteDb::fetch && spec.localDbPath.trimmed().isEmpty())
      problem = QStringLiteral("no local file to fetch the run database to");
  }
  if (spec.remote && problem.isEmpty()) {
    try {
      m_upload = planRemoteUpload(spec, newRemoteRunId(), m_workDir);
      m_command = buildRemoteCommand(uploadedRunSpec(spec, m_upload));
    } catch (const std::exception& e) {
      problem = QString::fromUtf8(e.what());
    }
    if (problem.isEmpty()) problem = stageUpload();
  }
  if (!problem.isEmpty()) {
    m_upload = {};
    m_staging.reset();
    failToStart(problem);
    return false;
  }
  if (!spec.remote) {
    m_stage = Stage::run;
    emit started(displayCommand(m_command));
    startProcess(m_command);
    return true;
  }
  Command mkdir;
  try {
    mkdir = buildRemoteMkdirCommand(spec, m_upload);
  } catch (const std::invalid_argument& e) {  // (the run command was built from the same spec)
    m_upload = {};
    m_staging.reset();
    failToStart(QString::fromUtf8(e.what()));
    return false;
  }
  m_stage = Stage::prepare;
  emit started(displayCommand(m_command));
  emit outputLine(kNote + QStringLiteral("creating the run folder %1 on %2: %3")
                              .arg(moebench::gui::remoteRunPath(spec, m_upload), spec.host, displayCommand(mkdir)));
  startProcess(mkdir);
  return true;
}

QString LaunchSession::stageUpload() {
  m_staging = std::make_unique<QTemporaryDir>(QDir::tempPath() + QStringLiteral("/moebench-upload-XXXXXX"));
  if (!m_staging->isValid())
    return QStringLiteral("cannot create a local folder to stage the upload in: %1").arg(m_staging->errorString());
  const QDir dir(m_staging->path());
  QFile config(dir.filePath(m_upload.configName));
  if (!config.open(QIODevice::WriteOnly) || config.write(m_upload.configText) != m_upload.configText.size() ||
      !config.flush())
    return QStringLiteral("cannot write the config to upload to %1: %2").arg(config.fileName(), config.errorString());
  config.close();
  for (const auto& f : m_upload.files)
    if (!QFile::link(f.source, dir.filePath(f.name)))
      return QStringLiteral("cannot stage %1 for the upload in %2").arg(f.source, dir.path());
  return {};
}

void LaunchSession::startRun() {
  m_stage = Stage::run;
  startProcess(m_command);
}

void LaunchSession::finishPrepare(int exitCode, QProcess::ExitStatus status) {
  if (m_cancelRequested) {
    emit outputLine(kNote + QStringLiteral("cancelled before the run started"));
    finish(-1, QStringLiteral("killed"), QString());
    return;
  }
  if (status != QProcess::NormalExit || exitCode != 0) {
    const QString why =
        status != QProcess::NormalExit ? QStringLiteral("ssh stopped")
        : exitCode == 255             ? QStringLiteral("ssh exit 255: the connection failed")
                                      : QStringLiteral("remote exit %1").arg(exitCode);
    const QString where = m_spec.remoteDir.isEmpty() ? m_upload.runFolder
                                                     : QStringLiteral("%1 in %2").arg(m_upload.runFolder, m_spec.remoteDir);
    emit outputLine(kNote + QStringLiteral("could not create the run folder %1 on %2 (%3); the run was not started")
                                .arg(where, m_spec.host, why));
    finish(status == QProcess::NormalExit ? exitCode : -1,
           exitCode == 255 && status == QProcess::NormalExit
               ? QStringLiteral("could not start: ssh to %1 failed (exit 255; see the log)").arg(m_spec.host)
               : QStringLiteral("could not start: could not create the run folder on %1 (%2; see the log)").arg(m_spec.host, why),
           QString());
    return;
  }
  Command scp;
  try {
    scp = buildUploadCommand(m_spec, m_upload, m_staging->path());
  } catch (const std::invalid_argument& e) {
    finish(-1, QStringLiteral("could not start: ") + QString::fromUtf8(e.what()), QString());
    return;
  }
  QStringList names{m_upload.configName};
  for (const auto& f : m_upload.files) names << QStringLiteral("%1 (%2)").arg(f.name, f.keys.join(QStringLiteral(", ")));
  m_stage = Stage::upload;
  emit outputLine(kNote + QStringLiteral("uploading %1: %2").arg(names.join(QStringLiteral(", ")), displayCommand(scp)));
  startProcess(scp);
}

void LaunchSession::finishUpload(int exitCode, QProcess::ExitStatus status) {
  if (m_cancelRequested) {
    emit outputLine(kNote + QStringLiteral("cancelled before the run started"));
    finish(-1, QStringLiteral("killed"), QString());
    return;
  }
  if (status != QProcess::NormalExit || exitCode != 0) {
    const QString why = status == QProcess::NormalExit ? QStringLiteral("scp exit %1").arg(exitCode) : QStringLiteral("scp stopped");
    emit outputLine(kNote + QStringLiteral("uploading the config to %1:%2 failed (%3); the run was not started")
                                .arg(m_spec.host, moebench::gui::remoteRunPath(m_spec, m_upload), why));
    finish(status == QProcess::NormalExit ? exitCode : -1,
           QStringLiteral("could not start: uploading the config to %1 failed (%2; see the log)").arg(m_spec.host, why),
           QString());
    return;
  }
  m_staging.reset();
  emit outputLine(kNote + QStringLiteral("uploaded to %1:%2; starting the run")
                              .arg(m_spec.host, moebench::gui::remoteRunPath(m_spec, m_upload)));
  startRun();
}

void LaunchSession::failToStart(const QString& reason) {
  const QString status = QStringLiteral("could not start: ") + reason;
  m_exitCode = -1;
  m_status = status;
  m_dbPath.clear();
  QMetaObject::invokeMethod(this, [this, status] { emit finished(-1, status, QString()); }, Qt::QueuedConnection);
}

void LaunchSession::startProcess(const Command& c) {
  if (m_process) m_process->deleteLater();
  m_process = new QProcess(this);
  m_process->setProcessChannelMode(QProcess::MergedChannels);
  m_process->setWorkingDirectory(m_workDir);
  connect(m_process, &QProcess::readyReadStandardOutput, this, &LaunchSession::readOutput);
  connect(m_process, &QProcess::finished, this, &LaunchSession::onProcessFinished);
  connect(m_process, &QProcess::errorOccurred, this, &LaunchSession::onProcessError);
  m_buffer.clear();
  m_process->start(c.program, c.arguments);
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
  // The remote terminal echoes the Ctrl-C of cancel() as "^C" in front of the next line.
  if (m_stage == Stage::run && m_spec.remote && m_cancelRequested)
    while (bytes.startsWith("^C")) bytes.remove(0, 2);
  const QString line = QString::fromUtf8(bytes);
  emit outputLine(line);
  if (m_stage != Stage::run) return;
  if (const auto p = parseProgressLine(line)) {
    m_runOutputSeen = true;
    emit progress(int(p->step), int(p->total), p->loss);
    return;
  }
  if (line.startsWith(QLatin1String("moebench run: "))) m_runOutputSeen = true;
  // "recording run 1a2b3c4d (name) in <db>, experiment <experiment>" (cli/cmd_run.cpp)
  static const QRegularExpression recording(QStringLiteral(R"(^recording run \S+ \(.*?\) in (.+), experiment )"));
  if (const auto m = recording.match(line); m.hasMatch()) m_reportedDb = m.captured(1);
}

void LaunchSession::onProcessError(QProcess::ProcessError error) {
  if (error != QProcess::FailedToStart) return;  // the others end in finished()
  const QString why = m_process->errorString();
  if (m_stage == Stage::fetch) {
    emit outputLine(kNote + QStringLiteral("could not start scp (%1): the run database was not fetched").arg(why));
    finish(m_runExitCode, m_runStatus, QString());
    return;
  }
  finish(-1, QStringLiteral("could not start: '%1' (%2)").arg(m_process->program(), why), QString());
}

QString LaunchSession::runStatus(int exitCode, QProcess::ExitStatus status) const {
  if (status == QProcess::CrashExit) return m_cancelRequested ? QStringLiteral("killed") : QStringLiteral("failed");
  if (exitCode == 0) return QStringLiteral("finished");
  if (exitCode == 2) return QStringLiteral("bad config");
  if (exitCode == 130 || m_cancelRequested) return QStringLiteral("killed");
  if (m_spec.remote) {
    const QString moebench = m_spec.remoteMoebench.isEmpty() ? QStringLiteral("moebench") : m_spec.remoteMoebench;
    if (exitCode == 127)
      return QStringLiteral("could not start: '%1' not found on %2 (remote exit 127)").arg(moebench, m_spec.host);
    if (exitCode == 126)
      return QStringLiteral("could not start: '%1' is not executable on %2 (remote exit 126)").arg(moebench, m_spec.host);
    if (exitCode == 255 && !m_runOutputSeen)
      return QStringLiteral("could not start: ssh to %1 failed (exit 255; see the log)").arg(m_spec.host);
  }
  return QStringLiteral("failed");
}

void LaunchSession::onProcessFinished(int exitCode, QProcess::ExitStatus status) {
  flushPartialLine();
  m_escalation->stop();
  if (m_stage == Stage::fetch) {
    finishFetch(exitCode, status);
    return;
  }
  if (m_stage == Stage::prepare) {
    finishPrepare(exitCode, status);
    return;
  }
  if (m_stage == Stage::upload) {
    finishUpload(exitCode, status);
    return;
  }
  m_runExitCode = status == QProcess::CrashExit ? -1 : exitCode;
  m_runStatus = runStatus(exitCode, status);
  if (m_spec.remote && exitCode == 255 && m_runOutputSeen && !m_cancelRequested)
    emit outputLine(kNote + QStringLiteral("the ssh connection to %1 was lost (exit 255): the remote run stops on "
                                           "the hang-up and is marked KILLED").arg(m_spec.host));
  const bool hasRun = m_runStatus == QLatin1String("finished") || m_runStatus == QLatin1String("failed") ||
                      m_runStatus == QLatin1String("killed");
  if (!hasRun) {
    finish(m_runExitCode, m_runStatus, QString());
    return;
  }
  if (m_spec.remote && m_spec.remoteDb == LaunchSpec::RemoteDb::fetch) {
    startFetch();
    return;
  }
  finish(m_runExitCode, m_runStatus, localDatabasePath());
}

QString LaunchSession::localDatabasePath() {
  QString path;
  if (!m_spec.remote) {
    const QString db = !m_reportedDb.isEmpty() ? m_reportedDb : !m_spec.db.isEmpty() ? m_spec.db : QStringLiteral("runs.db");
    path = QDir(m_workDir).absoluteFilePath(db);
  } else {
    path = m_spec.localDbPath;
    if (path.isEmpty()) {
      LaunchSpec s = m_spec;
      if (!m_reportedDb.isEmpty()) s.db = m_reportedDb;
      path = remoteDbPath(s);
      if (!QDir::isAbsolutePath(path)) {
        emit outputLine(
            kNote + QStringLiteral("the run database %1 on %2 is not an absolute path: give its local path "
                                   "(shared path) to open it here").arg(path, m_spec.host));
        return {};
      }
    }
    path = QDir(m_workDir).absoluteFilePath(path);
  }
  if (!QFileInfo::exists(path)) {
    emit outputLine(
        kNote + QStringLiteral("no run database at %1").arg(QDir::toNativeSeparators(path)));
    return {};
  }
  return path;
}

void LaunchSession::startFetch() {
  LaunchSpec s = m_spec;
  if (!m_reportedDb.isEmpty()) s.db = m_reportedDb;  // a config's [store] db
  m_fetchTarget = QDir(m_workDir).absoluteFilePath(m_spec.localDbPath);
  m_cancelRequested = false;  // a cancel during the copy is a cancel of the copy
  m_escalation->stop();
  const QString part = m_fetchTarget + QStringLiteral(".part");
  QFile::remove(part);
  Command c;
  try {
    c = buildFetchDbCommand(s, part);
  } catch (const std::invalid_argument& e) {
    emit outputLine(kNote + QString::fromUtf8(e.what()));
    finish(m_runExitCode, m_runStatus, QString());
    return;
  }
  m_stage = Stage::fetch;
  m_escalationLevel = 0;
  emit outputLine(kNote + QStringLiteral("fetching the run database: ") + displayCommand(c));
  startProcess(c);
}

void LaunchSession::finishFetch(int exitCode, QProcess::ExitStatus status) {
  const QString part = m_fetchTarget + QStringLiteral(".part");
  if (status != QProcess::NormalExit || exitCode != 0 || !QFileInfo::exists(part)) {
    QFile::remove(part);
    emit outputLine(kNote + QStringLiteral("fetching the run database %1 from %2 failed (scp %3)")
                                .arg(remoteDbPath(m_spec), m_spec.host,
                                     status == QProcess::NormalExit ? QStringLiteral("exit %1").arg(exitCode)
                                                                    : QStringLiteral("stopped")));
    finish(m_runExitCode, m_runStatus, QString());
    return;
  }
  // A previous copy's WAL and shared-memory files belong to the old database: remove them so
  // SQLite never replays them onto the new copy. rename(2) replaces the old copy atomically.
  QFile::remove(m_fetchTarget + QStringLiteral("-wal"));
  QFile::remove(m_fetchTarget + QStringLiteral("-shm"));
  if (std::rename(QFile::encodeName(part).constData(), QFile::encodeName(m_fetchTarget).constData()) != 0) {
    emit outputLine(kNote + QStringLiteral("could not move the fetched database to %1").arg(m_fetchTarget));
    QFile::remove(part);
    finish(m_runExitCode, m_runStatus, QString());
    return;
  }
  emit outputLine(kNote + QStringLiteral("run database copied to %1").arg(QDir::toNativeSeparators(m_fetchTarget)));
  finish(m_runExitCode, m_runStatus, m_fetchTarget);
}

void LaunchSession::cancel() {
  if (!isRunning() || !m_process) return;
  if (m_cancelRequested) {  // a second cancel: go straight to the next step
    escalate();
    return;
  }
  m_cancelRequested = true;
  m_escalationLevel = 0;
  if (m_stage == Stage::run && m_spec.remote) {
    emit outputLine(kNote + QStringLiteral("cancelling: Ctrl-C to the remote run"));
    m_process->write("\x03");
    if (launcherIsSrun(m_spec.launcherPrefix)) {  // srun: one Ctrl-C reports status, two stop the job
      QPointer<QProcess> p = m_process;
      QTimer::singleShot(300, this, [p] {
        if (p && p->state() == QProcess::Running) p->write("\x03");
      });
    }
  } else {
    emit outputLine(kNote + (m_stage == Stage::fetch  ? QStringLiteral("cancelling the database copy")
                             : m_stage == Stage::run ? QStringLiteral("cancelling: SIGTERM to moebench")
                                                     : QStringLiteral("cancelling the upload (the run has not started)")));
    m_process->terminate();
    m_escalationLevel = 1;
  }
  m_escalation->start(m_graceMs);
}

void LaunchSession::escalate() {
  if (!m_process || m_process->state() == QProcess::NotRunning) return;
  if (m_escalationLevel == 0) {
    emit outputLine(kNote + QStringLiteral("the remote run has not stopped: closing the ssh connection (SIGHUP)"));
    m_process->terminate();
    m_escalationLevel = 1;
    m_escalation->start(m_graceMs);
  } else {
    emit outputLine(kNote + QStringLiteral("'%1' has not stopped: killing it").arg(m_process->program()));
    m_process->kill();
    m_escalationLevel = 2;
  }
}

void LaunchSession::finish(int exitCode, const QString& status, const QString& dbPath) {
  m_escalation->stop();
  m_staging.reset();
  m_stage = Stage::idle;
  m_exitCode = exitCode;
  m_status = status;
  m_dbPath = dbPath;
  emit finished(exitCode, status, dbPath);
}

}  // namespace moebench::gui
