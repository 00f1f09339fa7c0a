#pragma once
// Running the moebench executable from tests: its exit code and both outputs, and writing a
// small input file into a temporary folder.
#include <QFile>
#include <QProcess>
#include <QStringList>
#include <QTemporaryDir>

namespace moebench::test {

struct CliResult {
  int code;  // -1: it did not end within the time given
  QString out, err;
};

inline CliResult run_cli(const QStringList& args, const QString& cwd = {}, int timeout_ms = 180000) {
  QProcess p;
  if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
  p.start(QStringLiteral(MOEBENCH_CLI), args);
  if (!p.waitForFinished(timeout_ms)) return {-1, {}, QStringLiteral("timeout")};
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

inline QString write_file(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
  QFile f(dir.filePath(name));
  f.open(QIODevice::WriteOnly);
  f.write(text);
  return f.fileName();
}

}  // namespace moebench::test
