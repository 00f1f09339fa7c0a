#pragma once
// Uploading a remote run's config (issue 35): the launcher never hands the host a local path.
// Each remote run gets a fresh run folder on the host,
//
//   <remoteDir>/moebench-runs/<YYYYMMDD-HHMMSS>-<6 hex digits>/
//       <the config's file name>     the config as saved, its path keys rewritten to the names below
//       <each file the config names> cluster.file, emulate.cluster, data.path, data.val_path (when read)
//       <ssd folder>                 an empty folder for a relative storage.ssd_dir (storage.sparse = "ssd")
//
// (remoteDir empty: under the login directory). The files and the rewritten text come from the
// core's bundle_config (moebench/config/config_files.h): relative names, which the loader
// resolves against the config's folder, so the run reads the uploaded copies. `--set` overrides
// of path keys are written into the uploaded config; the others stay --set. The run itself
// still runs in remoteDir (`moebench run moebench-runs/<id>/<config>`), so the store and the
// output folder are where they were without the upload, and the store is fetched back as before.
//
// The steps, each a Command run without a local shell (LaunchSession):
//   1. buildRemoteMkdirCommand: ssh ... host -- cd DIR && mkdir -p -- moebench-runs/<id> ...
//   2. buildUploadCommand:      scp -O ... <staged files> host:DIR/moebench-runs/<id>
//   3. buildRemoteCommand(uploadedRunSpec(spec, upload)): the run, as before.
// Everything here is pure except planRemoteUpload, which reads the config file.
#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>

#include "models/launchcommand.h"

namespace moebench::gui {

// The folder under remoteDir that holds one folder per uploaded run.
inline const QString kRemoteRunsFolder = QStringLiteral("moebench-runs");

struct RemoteUpload {
  QString runId;       // "20250114-153012-1a2b3c"
  QString runFolder;   // relative to remoteDir: "moebench-runs/<runId>"
  QString configName;  // the config's name in the run folder
  QByteArray configText;  // the config as uploaded
  QStringList sets;       // the overrides left for --set (those of non-path keys)
  struct File {
    QString source;    // the local file
    QString name;      // its name in the run folder
    QStringList keys;  // the config keys that name it
  };
  QList<File> files;
  QStringList directories;  // empty folders created in the run folder
};

// A new run id: local time to the second, then 6 random hex digits ("20250114-153012-1a2b3c").
QString newRemoteRunId(const QDateTime& now = QDateTime::currentDateTime());

// "moebench-runs/<runId>"
QString remoteRunFolder(const QString& runId);

// Reads the local config spec.configPath (relative: to localDir) and plans its upload into the
// run folder of `runId`; spec.sets are the overrides (their relative paths: to localDir too).
// Throws std::runtime_error with one message naming what failed: the config file ("config file
// /x/run.toml: not found"), each file it names that is missing or unreadable ("cannot upload
// the config /x/run.toml: cluster.file: file not found: /x/c.toml (run.toml)"), or TOML it
// cannot read.
RemoteUpload planRemoteUpload(const LaunchSpec& spec, const QString& runId, const QString& localDir);

// The run folder as the remote shell sees it: <remoteDir>/moebench-runs/<id>, or
// moebench-runs/<id> (the login directory) when remoteDir is empty.
QString remoteRunPath(const LaunchSpec& spec, const RemoteUpload& upload);

// ssh -o BatchMode=yes [ssh options] host -- 'cd DIR && mkdir -p -- FOLDER [FOLDER/dir]...'
// (every word quoted; no "cd" when remoteDir is empty). No terminal: it ends by itself.
// Throws std::invalid_argument on an empty host or bad ssh options.
Command buildRemoteMkdirCommand(const LaunchSpec& spec, const RemoteUpload& upload);

// The local files of the upload when staged in `stagingDir`: stagingDir/<configName> (the
// rewritten config) and stagingDir/<file name> for each file (a link to its source), in that
// order. scp names each copy after its local name, so staging gives every file its run-folder name.
QStringList stagedUploadFiles(const RemoteUpload& upload, const QString& stagingDir);

// scp -O -o BatchMode=yes [ssh options] <stagedUploadFiles> host:<quoted remoteRunPath>
// -O: the legacy protocol, where the remote path is read by the remote shell, so the quoting
// is exact (as in buildFetchDbCommand). Throws std::invalid_argument on an empty host or bad
// ssh options.
Command buildUploadCommand(const LaunchSpec& spec, const RemoteUpload& upload, const QString& stagingDir);

// The spec of the run itself: configPath = <runFolder>/<configName> (relative to remoteDir,
// where the run starts), sets = upload.sets; everything else as in spec.
LaunchSpec uploadedRunSpec(const LaunchSpec& spec, const RemoteUpload& upload);

// The run command as the launcher shows it before a start, when the run id is not known yet:
// that of uploadedRunSpec for the run id "<run-id>", the config's file name and the overrides
// of non-path keys. Throws like buildRemoteCommand.
Command previewRemoteCommand(const LaunchSpec& spec);

}  // namespace moebench::gui
