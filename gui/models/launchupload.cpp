#include "models/launchupload.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRandomGenerator>

#include <stdexcept>
#include <string>
#include <vector>

#include "moebench/config/config_files.h"

namespace moebench::gui {

namespace {
QString fromNative(const std::string& s) { return QFile::decodeName(QByteArray::fromStdString(s)); }
std::string toNative(const QString& s) { return QFile::encodeName(s).toStdString(); }

QString overrideKey(const QString& set) {
  const qsizetype eq = set.indexOf(QLatin1Char('='));
  return eq < 0 ? QString() : set.left(eq).trimmed();
}
}  // namespace

QString newRemoteRunId(const QDateTime& now) {
  return now.toString(QStringLiteral("yyyyMMdd-HHmmss-")) +
         QStringLiteral("%1").arg(QRandomGenerator::global()->bounded(0x1000000), 6, 16, QLatin1Char('0'));
}

QString remoteRunFolder(const QString& runId) { return kRemoteRunsFolder + QLatin1Char('/') + runId; }

RemoteUpload planRemoteUpload(const LaunchSpec& spec, const QString& runId, const QString& localDir) {
  const QString path = QDir(localDir).absoluteFilePath(spec.configPath);
  const QFileInfo fi(path);
  auto fail = [&](const QString& why) {
    throw std::runtime_error(QStringLiteral("config file %1: %2").arg(QDir::toNativeSeparators(path), why).toStdString());
  };
  if (!fi.exists()) fail(QStringLiteral("not found"));
  if (!fi.isFile()) fail(QStringLiteral("not a file"));
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) fail(QStringLiteral("cannot be read (%1)").arg(f.errorString()));
  const QByteArray text = f.readAll();
  std::vector<std::string> overrides;
  for (const QString& s : spec.sets) overrides.push_back(s.toStdString());
  moebench::ConfigBundle b;
  try {
    b = moebench::bundle_config(text.toStdString(), toNative(path), overrides, toNative(QDir(localDir).absolutePath()));
  } catch (const moebench::ConfigBundleError& e) {
    throw std::runtime_error(QStringLiteral("cannot upload the config %1: %2")
                                 .arg(QDir::toNativeSeparators(path), QString::fromUtf8(e.what()))
                                 .toStdString());
  } catch (const std::invalid_argument& e) {
    fail(QString::fromUtf8(e.what()));
  }
  RemoteUpload u;
  u.runId = runId;
  u.runFolder = remoteRunFolder(runId);
  u.configName = fromNative(b.config_name);
  u.configText = QByteArray::fromStdString(b.config_text);
  for (const std::string& s : b.overrides) u.sets << QString::fromStdString(s);
  for (const auto& file : b.files) {
    RemoteUpload::File out{fromNative(file.source), fromNative(file.name), {}};
    for (const std::string& k : file.keys) out.keys << QString::fromStdString(k);
    u.files << out;
  }
  for (const std::string& d : b.directories) u.directories << fromNative(d);
  return u;
}

QString remoteRunPath(const LaunchSpec& spec, const RemoteUpload& upload) {
  if (spec.remoteDir.isEmpty()) return upload.runFolder;
  QString dir = spec.remoteDir;
  while (dir.size() > 1 && dir.endsWith(QLatin1Char('/'))) dir.chop(1);
  if (dir != QLatin1String("/")) dir += QLatin1Char('/');
  return dir + upload.runFolder;
}

Command buildRemoteMkdirCommand(const LaunchSpec& spec, const RemoteUpload& upload) {
  checkHost(spec.host);
  QStringList words{QStringLiteral("mkdir"), QStringLiteral("-p"), QStringLiteral("--"), shellQuote(upload.runFolder)};
  for (const QString& d : upload.directories) words << shellQuote(upload.runFolder + QLatin1Char('/') + d);
  QString cmd = words.join(QLatin1Char(' '));
  if (!spec.remoteDir.isEmpty()) cmd = QStringLiteral("cd ") + quoteRemotePath(spec.remoteDir) + QStringLiteral(" && ") + cmd;
  QStringList args{QStringLiteral("-o"), QStringLiteral("BatchMode=yes")};
  args << sshOptionWords(spec.sshOptions) << spec.host << QStringLiteral("--") << cmd;
  return {QStringLiteral("ssh"), args};
}

QStringList stagedUploadFiles(const RemoteUpload& upload, const QString& stagingDir) {
  const QDir dir(stagingDir);
  QStringList files{dir.absoluteFilePath(upload.configName)};
  for (const auto& f : upload.files) files << dir.absoluteFilePath(f.name);
  return files;
}

Command buildUploadCommand(const LaunchSpec& spec, const RemoteUpload& upload, const QString& stagingDir) {
  checkHost(spec.host);
  QStringList args{QStringLiteral("-O"), QStringLiteral("-o"), QStringLiteral("BatchMode=yes")};
  args << sshOptionWords(spec.sshOptions) << stagedUploadFiles(upload, stagingDir)
       << spec.host + QLatin1Char(':') + quoteRemotePath(remoteRunPath(spec, upload));
  return {QStringLiteral("scp"), args};
}

LaunchSpec uploadedRunSpec(const LaunchSpec& spec, const RemoteUpload& upload) {
  LaunchSpec s = spec;
  s.configPath = upload.runFolder + QLatin1Char('/') + upload.configName;
  s.sets = upload.sets;
  return s;
}

Command previewRemoteCommand(const LaunchSpec& spec) {
  RemoteUpload u;
  u.runFolder = remoteRunFolder(QStringLiteral("<run-id>"));
  u.configName = QFileInfo(spec.configPath).fileName();
  for (const QString& s : spec.sets)
    if (!moebench::is_config_path_key(overrideKey(s).toStdString())) u.sets << s;
  return buildRemoteCommand(uploadedRunSpec(spec, u));
}

}  // namespace moebench::gui
