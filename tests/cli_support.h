#pragma once
// Running the moebench executable from tests: its exit code and both outputs, and writing a
// small input file into a temporary folder.
#include <QDebug>
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

// run_cli under an address-space limit (`ulimit -v`, KiB) and a time limit: a regression that
// allocates without bound fails fast (std::bad_alloc, exit 1) instead of eating the machine's
// memory, one that hangs ends as code -1 (the process is killed).
inline CliResult run_cli_capped(const QStringList& args, int timeout_ms, long memory_kib = 4L << 20,
                                const QString& cwd = {}) {
  QProcess p;
  if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
  p.start(QStringLiteral("/bin/sh"), QStringList{QStringLiteral("-c"),
                                                 QStringLiteral("ulimit -v %1; exec \"$0\" \"$@\"").arg(memory_kib),
                                                 QStringLiteral(MOEBENCH_CLI)} +
                                         args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished(5000);
    return {-1, {}, QStringLiteral("timeout")};
  }
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

// run_cli of `args --db db` in `cwd`: its exit code, its stderr logged when it is not 0.
inline int run_cli_into_db(const QStringList& args, const QString& db, const QString& cwd) {
  const CliResult r = run_cli(args + QStringList{QStringLiteral("--db"), db}, cwd);
  if (r.code != 0) qWarning().noquote() << args.join(' ') << "->" << r.code << r.err;
  return r.code;
}

inline QString write_file(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
  QFile f(dir.filePath(name));
  f.open(QIODevice::WriteOnly);
  f.write(text);
  return f.fileName();
}

}  // namespace moebench::test
