// ctest-labels: gui slow
// LaunchSession and LauncherWindow with real launches of the built CLI (MOEBENCH_CLI) on the
// 12-step tests/data/tiny.toml: a config path full of shell metacharacters runs as it is and
// injects nothing, progress rises to 12, the run lands FINISHED in the store; cancel stops a
// long run gracefully (KILLED, exit 130); a missing moebench or ssh, a bad config and a bad
// form are reported by name; a remote run (`moebench launch`, with stand-ins for ssh and scp
// first in PATH) whose config names a missing file, whose host refuses or whose upload fails is
// not started and says which, and a cancel before the run stops the launch; the window's log
// follows the output. The remote (ssh) path for real: tst_launch_remote and tst_cli_launch.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QComboBox>
#include <QTemporaryDir>
#include <QtTest>

#include "models/launchcommand.h"
#include "models/launchsession.h"
#include "moebench/store/run_store.h"
#include "widgets/launcherwindow.h"

using moebench::RunStatus;
using moebench::RunStore;
using moebench::gui::LaunchSession;
using moebench::gui::LaunchSpec;

namespace {
constexpr int kRunTimeoutMs = 180000;  // the machine is shared and loaded
const QString kNastyDir = QStringLiteral("dir; touch PWNED 'a' \"b\" $(touch PWNED2)");
const QString kNastyFile = QStringLiteral("cfg; x `touch PWNED3`.toml");

QString tinyToml() { return QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml"); }

// Copies tiny.toml (plus `extra` TOML) into <root>/<kNastyDir>/<kNastyFile>.
QString writeNastyConfig(const QString& root, const QByteArray& extra = {}) {
  const QString dir = root + QLatin1Char('/') + kNastyDir;
  if (!QDir().mkpath(dir)) return {};
  QFile in(tinyToml());
  if (!in.open(QIODevice::ReadOnly)) return {};
  const QString path = dir + QLatin1Char('/') + kNastyFile;
  QFile out(path);
  if (!out.open(QIODevice::WriteOnly)) return {};
  out.write(in.readAll() + "\n" + extra);
  return path;
}

bool pwnedAnywhere(const QString& root) {
  for (const QString& dir : {root, root + QLatin1Char('/') + kNastyDir, QDir::currentPath()})
    for (const char* name : {"PWNED", "PWNED2", "PWNED3"})
      if (QFile::exists(dir + QLatin1Char('/') + QLatin1String(name))) return true;
  return false;
}

LaunchSpec localSpec(const QTemporaryDir& tmp, const QString& config) {
  LaunchSpec s;
  s.moebenchPath = QStringLiteral(MOEBENCH_CLI);
  s.configPath = config;
  s.db = tmp.filePath(QStringLiteral("my runs; 'x'.db"));
  s.sets = {QStringLiteral("run.out_dir=") + tmp.filePath(QStringLiteral("out dir"))};
  return s;
}

QStringList strings(const QSignalSpy& spy, int arg = 0) {
  QStringList out;
  for (const auto& call : spy) out << call.at(arg).toString();
  return out;
}

std::vector<moebench::RunInfo> runsIn(const QString& db) {
  RunStore store(db.toStdString(), RunStore::Mode::read_only);
  return store.list_runs();
}

// Runs `script` (a /bin/sh script written to an executable file) as "moebench".
QString writeScript(const QTemporaryDir& tmp, const QString& name, const QByteArray& body) {
  const QString path = tmp.filePath(name);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(body);
  f.close();
  f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
  return path;
}
// Stand-ins for ssh and scp (which `moebench launch` runs), first in PATH while alive: each call is appended to a file (as
// "ssh ARGS..."); the mkdir ssh exits `sshExit` (255: as a refused connection, with ssh's
// message; < 0: hangs), scp exits `scpExit` (non-zero: with a message). The spec: a remote run of
// `config` on "somehost" in /remote.
class FakeOpenSsh {
 public:
  FakeOpenSsh(const QTemporaryDir& tmp, int sshExit, int scpExit)
      : m_bin(tmp.filePath(QStringLiteral("fake bin"))), m_log(tmp.filePath(QStringLiteral("calls.log"))), m_path(qgetenv("PATH")) {
    QDir().mkpath(m_bin);
    const QByteArray log = moebench::gui::shellQuote(m_log).toUtf8();
    writeTool(QStringLiteral("ssh"), "printf '%s\\n' \"ssh $*\" >> " + log + "\n" +
                                         (sshExit == 255 ? "echo 'ssh: connect to host somehost port 22: Connection refused' >&2\n" : "") +
                                         (sshExit < 0 ? QByteArray("exec sleep 60\n") : "exit " + QByteArray::number(sshExit) + "\n"));
    writeTool(QStringLiteral("scp"), "printf '%s\\n' \"scp $*\" >> " + log + "\n" +
                                         (scpExit != 0 ? "echo 'scp: permission denied' >&2\n" : "") +
                                         "exit " + QByteArray::number(scpExit) + "\n");
    qputenv("PATH", QFile::encodeName(m_bin) + ':' + m_path);
  }
  ~FakeOpenSsh() { qputenv("PATH", m_path); }
  LaunchSpec spec(const QString& config) const {
    LaunchSpec s;
    s.remote = true;
    s.moebenchPath = QStringLiteral(MOEBENCH_CLI);
    s.host = QStringLiteral("somehost");
    s.remoteDir = QStringLiteral("/remote");
    s.configPath = config;
    s.localDbPath = QFileInfo(m_log).dir().filePath(QStringLiteral("local.db"));
    return s;
  }
  QStringList calls() const {
    QFile f(m_log);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  }

 private:
  void writeTool(const QString& name, const QByteArray& body) const {
    QFile f(m_bin + QLatin1Char('/') + name);
    if (!f.open(QIODevice::WriteOnly)) return;
    f.write("#!/bin/sh\n" + body);
    f.close();
    f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
  }
  QString m_bin, m_log;
  QByteArray m_path;
};
}  // namespace

class TestLaunchSession : public QObject {
  Q_OBJECT

  QTemporaryDir m_cwd;
  QString m_oldCwd;

 private slots:
  void initTestCase() {
    QVERIFY(QFileInfo(QStringLiteral(MOEBENCH_CLI)).isExecutable());
    QVERIFY(m_cwd.isValid());
    // Relative paths (and any injected `touch PWNED`) land in a directory of our own.
    m_oldCwd = QDir::currentPath();
    QVERIFY(QDir::setCurrent(m_cwd.path()));
  }
  void cleanupTestCase() { QDir::setCurrent(m_oldCwd); }

  void localRunWithNastyConfigPath() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString config = writeNastyConfig(tmp.path());
    QVERIFY(!config.isEmpty());
    LaunchSession session;
    QSignalSpy started(&session, &LaunchSession::started);
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy progress(&session, &LaunchSession::progress);
    QSignalSpy finished(&session, &LaunchSession::finished);
    const LaunchSpec spec = localSpec(tmp, config);
    QVERIFY(session.start(spec));
    QVERIFY(session.isRunning());
    QCOMPARE(started.count(), 1);
    QVERIFY(started.at(0).at(0).toString().contains(moebench::gui::shellQuote(config)));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    QVERIFY2(finished.at(0).at(1).toString() == QLatin1String("finished"), qPrintable(strings(lines).join('\n')));
    QCOMPARE(finished.at(0).at(0).toInt(), 0);
    QCOMPARE(finished.at(0).at(2).toString(), spec.db);
    QVERIFY(!session.isRunning());
    QCOMPARE(session.lastStatus(), QStringLiteral("finished"));

    // Progress: steps 1..12 of 12, strictly increasing, ending at 12.
    QVERIFY(progress.count() >= 12);
    int last = 0;
    for (const auto& call : progress) {
      QCOMPARE(call.at(1).toInt(), 12);
      QVERIFY(call.at(0).toInt() >= last);
      last = call.at(0).toInt();
    }
    QCOMPARE(last, 12);
    QCOMPARE(progress.at(0).at(0).toInt(), 1);
    QVERIFY(strings(lines).filter(QStringLiteral("done: 12 steps")).size() == 1);
    QVERIFY(!strings(lines).join('\n').contains(QLatin1Char('\r')));

    const auto runs = runsIn(spec.db);
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, RunStatus::finished);
    QVERIFY(QFileInfo(tmp.filePath(QStringLiteral("out dir"))).isDir());
    QVERIFY(!pwnedAnywhere(tmp.path()));
  }

  void databaseNamedByTheConfig() {
    // No --db: the session reports the database the CLI says it records into ([store] db),
    // resolved against the working directory.
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString config = writeNastyConfig(tmp.path(), "[store]\ndb = \"from config, experiment x.db\"\n");
    QVERIFY(!config.isEmpty());
    LaunchSpec spec = localSpec(tmp, config);
    spec.db.clear();
    spec.steps = 2;
    LaunchSession session;
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(spec));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("finished"));
    const QString expected = QDir::current().absoluteFilePath(QStringLiteral("from config, experiment x.db"));
    QCOMPARE(finished.at(0).at(2).toString(), expected);
    QCOMPARE(runsIn(expected).size(), size_t(1));
  }

  void cancelStopsALongRun() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString config = writeNastyConfig(tmp.path());
    LaunchSpec spec = localSpec(tmp, config);
    spec.steps = 100000;
    LaunchSession session;
    session.setGracePeriod(60000);  // a SIGKILL escalation must not be what ends it
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy progress(&session, &LaunchSession::progress);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(spec));
    QTRY_VERIFY_WITH_TIMEOUT(progress.count() > 0, kRunTimeoutMs);
    QVERIFY(finished.isEmpty());
    QElapsedTimer clock;
    clock.start();
    session.cancel();
    QVERIFY(session.isCancelling());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 15000);
    qInfo("cancel took %lld ms", (long long)clock.elapsed());
    QVERIFY2(finished.at(0).at(1).toString() == QLatin1String("killed"), qPrintable(strings(lines).join('\n')));
    QCOMPARE(finished.at(0).at(0).toInt(), 130);  // moebench's own graceful exit, not a signal
    QCOMPARE(finished.at(0).at(2).toString(), spec.db);
    QVERIFY(strings(lines).filter(QStringLiteral("run marked KILLED")).size() == 1);
    QVERIFY(progress.last().at(0).toInt() < 100000);
    const auto runs = runsIn(spec.db);
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, RunStatus::killed);
  }

  void missingMoebench() {
    QTemporaryDir tmp;
    LaunchSpec spec = localSpec(tmp, tinyToml());
    spec.moebenchPath = tmp.filePath(QStringLiteral("no such/moebench"));
    LaunchSession session;
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(!session.start(spec));
    QVERIFY(!session.isRunning());
    QTRY_COMPARE(finished.count(), 1);
    const QString status = finished.at(0).at(1).toString();
    QVERIFY2(status.startsWith(QLatin1String("could not start: ")), qPrintable(status));
    QVERIFY2(status.contains(spec.moebenchPath), qPrintable(status));
    QCOMPARE(finished.at(0).at(0).toInt(), -1);
    QCOMPARE(finished.at(0).at(2).toString(), QString());

    spec.moebenchPath = QStringLiteral("moebench-not-in-path-xyz");
    QVERIFY(!session.start(spec));
    QTRY_COMPARE(finished.count(), 2);
    QVERIFY(finished.at(1).at(1).toString().contains(QLatin1String("'moebench-not-in-path-xyz' not found in PATH")));
  }

  void programThatFailsToExec() {
    // Executable, but execve fails (no such interpreter): QProcess reports FailedToStart.
    QTemporaryDir tmp;
    const QString path = writeScript(tmp, QStringLiteral("broken moebench"), "#!/nonexistent/interpreter\n");
    LaunchSpec spec = localSpec(tmp, tinyToml());
    spec.moebenchPath = path;
    LaunchSession session;
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(spec));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    const QString status = finished.at(0).at(1).toString();
    QVERIFY2(status.startsWith(QLatin1String("could not start: '") + path + QLatin1Char('\'')), qPrintable(status));
    QVERIFY(!session.isRunning());
  }

  // No ssh here: `moebench launch` says so (exit 3), nothing is imported; no host: refused at once.
  void missingSsh() {
    QTemporaryDir emptyBin;
    const QByteArray oldPath = qgetenv("PATH");
    qputenv("PATH", emptyBin.path().toLocal8Bit());
    LaunchSpec spec;
    spec.remote = true;
    spec.moebenchPath = QStringLiteral(MOEBENCH_CLI);
    spec.host = QStringLiteral("somehost");
    spec.configPath = tinyToml();
    spec.localDbPath = emptyBin.filePath(QStringLiteral("local.db"));
    LaunchSession session;
    QSignalSpy finished(&session, &LaunchSession::finished);
    const bool ok = session.start(spec);
    qputenv("PATH", oldPath);
    QVERIFY(ok);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    QCOMPARE(finished.at(0).at(0).toInt(), 3);
    QCOMPARE(finished.at(0).at(1).toString(),
             QStringLiteral("could not start: cannot start ssh (No such file or directory): install openssh-client"));
    QCOMPARE(finished.at(0).at(2).toString(), QString());
    QVERIFY(!QFile::exists(spec.localDbPath));

    LaunchSpec noHost = spec;
    noHost.host.clear();
    QVERIFY(!session.start(noHost));
    QTRY_COMPARE(finished.count(), 2);
    QCOMPARE(finished.at(1).at(1).toString(), QStringLiteral("could not start: remote launch needs a host"));
  }

  void badConfig() {
    QTemporaryDir tmp;
    const QString config = tmp.filePath(QStringLiteral("bad config.toml"));
    QFile f(config);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("[model]\nhiden = 32\n");
    f.close();
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(localSpec(tmp, config)));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    QCOMPARE(finished.at(0).at(0).toInt(), 2);
    QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("bad config"));
    QCOMPARE(finished.at(0).at(2).toString(), QString());
    const QString log = strings(lines).join('\n');
    QVERIFY2(log.contains(QLatin1String("bad config.toml:2: model.hiden: unknown key in [model]; did you mean `hidden`?")),
             qPrintable(log));
  }

  void linesAreSplitAndFlushed() {
    // Output split across writes, CRLF endings and a last line without a newline.
    QTemporaryDir tmp;
    const QString path = writeScript(
        tmp, QStringLiteral("fake"),
        "#!/bin/sh\nprintf 'step 1/3 | lo'\nsleep 0.2\nprintf 'ss 2.5\\r\\nstep 2/3 | loss 2.0\\n'\n"
        "printf 'to stderr\\n' >&2\nprintf 'no newline at the end'\nexit 1\n");
    LaunchSpec spec = localSpec(tmp, QStringLiteral("x.toml"));
    spec.moebenchPath = path;
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy progress(&session, &LaunchSession::progress);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(spec));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    QCOMPARE(strings(lines), (QStringList{QStringLiteral("step 1/3 | loss 2.5"), QStringLiteral("step 2/3 | loss 2.0"),
                                          QStringLiteral("to stderr"), QStringLiteral("no newline at the end"),
                                          QStringLiteral("moebench-gui: no run database at ") + spec.db}));
    QCOMPARE(progress.count(), 2);
    QCOMPARE(progress.at(0).at(2).toDouble(), 2.5);
    QCOMPARE(finished.at(0).at(0).toInt(), 1);
    QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("failed"));
    QCOMPARE(finished.at(0).at(2).toString(), QString());
  }

  // --- Remote start failures: `moebench launch` with stand-ins for ssh and scp (the real ones:
  //     tst_launch_remote, tst_cli_launch) ---

  // A config naming a file that is not there: `moebench launch` refuses it before connecting,
  // the message names the key and the file.
  void remoteRefusesMissingReferencedFile() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const FakeOpenSsh fake(tmp, 0, 0);
    const QString config = writeNastyConfig(tmp.path(), "[cluster]\nfile = \"no such cluster.toml\"\n");
    LaunchSession session;
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(fake.spec(config)));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    QCOMPARE(finished.at(0).at(0).toInt(), 2);
    QCOMPARE(finished.at(0).at(1).toString(),
             QStringLiteral("could not start: cannot upload the config %1: cluster.file: file not found: %2 (%3)")
                 .arg(config, QFileInfo(config).dir().filePath(QStringLiteral("no such cluster.toml")), kNastyFile));
    QCOMPARE(finished.at(0).at(2).toString(), QString());
    QCOMPARE(fake.calls(), QStringList());  // neither ssh nor scp ran
  }

  // The host refuses (ssh exit 255 while creating the run folder): ssh's error and the launch's
  // note naming the step and the host in the log, "could not start", no upload and no run.
  void remoteHostRefuses() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const FakeOpenSsh fake(tmp, 255, 0);
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(fake.spec(writeNastyConfig(tmp.path()))));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    const QString folder = session.remoteRunPath();
    QVERIFY2(folder.startsWith(QStringLiteral("/remote/moebench-runs/")), qPrintable(folder));
    QCOMPARE(finished.at(0).at(0).toInt(), 3);
    QCOMPARE(finished.at(0).at(1).toString(),
             QStringLiteral("could not start: could not create the run folder somehost:%1 (ssh exit 255: the connection "
                            "to somehost failed); nothing ran").arg(folder));
    QCOMPARE(finished.at(0).at(2).toString(), QString());
    const QStringList log = strings(lines);
    QVERIFY2(log.contains(QStringLiteral("ssh: connect to host somehost port 22: Connection refused")), qPrintable(log.join('\n')));
    QCOMPARE(fake.calls().size(), 1);
    QVERIFY(fake.calls().at(0).startsWith(QStringLiteral("ssh ")));
    QVERIFY(fake.calls().at(0).contains(QStringLiteral("mkdir -p -- '/remote/moebench-runs/")));
    QVERIFY(!QFile::exists(fake.spec({}).localDbPath));
  }

  // Cancel while the run folder is being created: the launch stops its ssh at once and exits 130
  // ("killed"), nothing ran, nothing imported.
  void remoteCancelBeforeTheRun() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const FakeOpenSsh fake(tmp, -1, 0);
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(fake.spec(writeNastyConfig(tmp.path()))));
    QTRY_COMPARE_WITH_TIMEOUT(fake.calls().size(), 1, 30000);
    session.cancel();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    QCOMPARE(finished.at(0).at(0).toInt(), 130);
    QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("killed"));
    QCOMPARE(finished.at(0).at(2).toString(), QString());
    QVERIFY2(strings(lines).contains(QStringLiteral("moebench launch: stopped before the run started; nothing ran")),
             qPrintable(strings(lines).join('\n')));
    QCOMPARE(fake.calls().size(), 1);
  }

  // The upload fails: scp's error and the launch's note in the log, "could not start", no run.
  void remoteUploadFails() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const FakeOpenSsh fake(tmp, 0, 1);
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy finished(&session, &LaunchSession::finished);
    const QString config = writeNastyConfig(tmp.path());
    QVERIFY(session.start(fake.spec(config)));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    const QString folder = session.remoteRunPath();
    QVERIFY2(folder.startsWith(QStringLiteral("/remote/moebench-runs/")), qPrintable(folder));
    QCOMPARE(finished.at(0).at(1).toString(),
             QStringLiteral("could not start: uploading the config to somehost:%1 failed (scp exit 1); nothing ran").arg(folder));
    const QStringList log = strings(lines);
    QVERIFY2(log.contains(QStringLiteral("scp: permission denied")), qPrintable(log.join('\n')));
    QCOMPARE(fake.calls().size(), 2);  // mkdir, upload; no run
    QVERIFY(fake.calls().at(1).startsWith(QStringLiteral("scp -O -o BatchMode=yes ")));
    QVERIFY(fake.calls().at(1).endsWith(QStringLiteral("/") + kNastyFile + QStringLiteral(" somehost:'") + folder + QLatin1Char('\'')));
  }

  // --- LauncherWindow ---

  void windowRendersWithDefaults() {
    LauncherWindow w;
    w.resize(1100, 750);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QImage img = w.grab().toImage();
    QVERIFY(!img.isNull());
    const QRgb first = img.pixel(0, 0);
    bool varied = false;
    for (int y = 0; y < img.height() && !varied; y += 7)
      for (int x = 0; x < img.width() && !varied; x += 7) varied = img.pixel(x, y) != first;
    QVERIFY(varied);
    // The build tree's moebench (tests/ -> ../cli/moebench).
    QCOMPARE(QFileInfo(LauncherWindow::defaultMoebenchPath()).canonicalFilePath(),
             QFileInfo(QStringLiteral(MOEBENCH_CLI)).canonicalFilePath());
    QCOMPARE(w.spec().moebenchPath, LauncherWindow::defaultMoebenchPath());
    QVERIFY(!w.spec().remote);
  }

  void windowSpecReflectsForm() {
    LauncherWindow w;
    auto edit = [&](const char* name) { return w.findChild<QLineEdit*>(QLatin1String(name)); };
    for (const char* n : {"moebench", "config", "db", "experiment", "host", "remoteDir", "prefix", "remoteMoebench", "localDb"})
      QVERIFY2(edit(n), n);
    edit("config")->setText(QStringLiteral("/a b/c'd.toml"));
    // (the form checks that the config is there: a remote run uploads it)
    const QString config = writeNastyConfig(m_cwd.path());
    edit("config")->setText(config);
    w.findChild<QSpinBox*>(QStringLiteral("steps"))->setValue(40);
    w.findChild<QSpinBox*>(QStringLiteral("ranks"))->setValue(4);
    w.findChild<QPlainTextEdit*>(QStringLiteral("sets"))->setPlainText(QStringLiteral("train.lr=1e-3\n\n  moe.top_k=1 \n"));
    edit("db")->setText(QStringLiteral("r.db"));
    edit("experiment")->setText(QStringLiteral("exp 1"));
    w.findChild<QComboBox*>(QStringLiteral("mode"))->setCurrentIndex(1);
    edit("host")->setText(QStringLiteral("me@cluster"));
    edit("remoteDir")->setText(QStringLiteral("/scratch/x"));
    edit("prefix")->setText(QStringLiteral("srun -N2"));
    edit("remoteMoebench")->setText(QStringLiteral("bin/moebench"));
    edit("localDb")->setText(QStringLiteral("/mnt/x/r.db"));
    const LaunchSpec s = w.spec();
    QCOMPARE(s.configPath, config);
    QCOMPARE(s.steps, 40);
    QCOMPARE(s.ranks, 4);
    QCOMPARE(s.sets, (QStringList{QStringLiteral("train.lr=1e-3"), QStringLiteral("moe.top_k=1")}));
    QCOMPARE(s.db, QStringLiteral("r.db"));
    QCOMPARE(s.experiment, QStringLiteral("exp 1"));
    QVERIFY(s.remote);
    QCOMPARE(s.host, QStringLiteral("me@cluster"));
    QCOMPARE(s.remoteDir, QStringLiteral("/scratch/x"));
    QCOMPARE(s.launcherPrefix, QStringLiteral("srun -N2"));
    QCOMPARE(s.remoteMoebench, QStringLiteral("bin/moebench"));
    QCOMPARE(s.localDbPath, QStringLiteral("/mnt/x/r.db"));
    QCOMPARE(w.validationError(), QString());
    // The command shown is the local `moebench launch` of the remote run, quoted as a shell line;
    // the (local) Database field is off in remote mode: the run goes to the local store.
    QCOMPARE(w.commandText(), moebench::gui::displayCommand(moebench::gui::buildRemoteCommand(s)));
    QVERIFY2(w.commandText().contains(QStringLiteral(" launch --dir /scratch/x --prefix 'srun -N2' --remote-moebench "
                                                     "bin/moebench ")),
             qPrintable(w.commandText()));
    QVERIFY2(w.commandText().endsWith(QStringLiteral(" --db /mnt/x/r.db -- me@cluster ") + moebench::gui::shellQuote(config)),
             qPrintable(w.commandText()));
    QVERIFY(!edit("db")->isEnabled());
    QVERIFY(edit("moebench")->isEnabled());
    // A store opened in the window is the default local store, never over one entered.
    w.setLocalStore(QStringLiteral("/open/store.db"));
    QCOMPARE(w.spec().localDbPath, QStringLiteral("/mnt/x/r.db"));
    edit("localDb")->clear();
    w.setLocalStore(QStringLiteral("/open/store.db"));
    QCOMPARE(w.spec().localDbPath, QStringLiteral("/open/store.db"));
    edit("localDb")->setText(QStringLiteral("/mnt/x/r.db"));

    // setSpec round-trips, local mode too.
    LauncherWindow other;
    other.setSpec(s);
    const LaunchSpec t = other.spec();
    QCOMPARE(t.configPath, s.configPath);
    QCOMPARE(t.sets, s.sets);
    QCOMPARE(t.host, s.host);
    QCOMPARE(t.launcherPrefix, s.launcherPrefix);
    QCOMPARE(t.localDbPath, s.localDbPath);
    QVERIFY(t.remote);
    LaunchSpec local = s;
    local.remote = false;
    other.setSpec(local);
    QVERIFY(!other.spec().remote);
    QCOMPARE(other.commandText(), moebench::gui::displayCommand(moebench::gui::buildLocalCommand(other.spec())));
    other.setConfigPath(QStringLiteral("/saved/by editor.toml"));
    QCOMPARE(other.spec().configPath, QStringLiteral("/saved/by editor.toml"));
  }

  void windowRejectsInvalidForms_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("message");
    QTest::newRow("no config") << "config" << "" << "No config file";
    QTest::newRow("missing config") << "config" << "gone.toml" << "Config file gone.toml does not exist";
    QTest::newRow("empty host") << "host" << "" << "No remote host";
    QTest::newRow("option host") << "host" << "-oProxyCommand=x" << "must not start with '-'";
    QTest::newRow("bad prefix") << "prefix" << "srun; rm -rf ~" << "Bad launcher prefix";
    QTest::newRow("unterminated prefix") << "prefix" << "srun 'x" << "unterminated";
    QTest::newRow("no local db") << "localDb" << "" << "No local store to import the run into";
    QTest::newRow("bad ssh option") << "sshOptions" << "-p 2222" << "Bad ssh options";
    QTest::newRow("bad override") << "sets" << "train.lr=1\njust words" << "Override line 2";
  }
  void windowRejectsInvalidForms() {
    QFETCH(QString, field);
    QFETCH(QString, value);
    QFETCH(QString, message);
    LauncherWindow w;
    LaunchSpec s;
    s.moebenchPath = QStringLiteral(MOEBENCH_CLI);
    s.configPath = tinyToml();  // a local file: a remote run uploads it
    s.remote = true;
    s.host = QStringLiteral("me@cluster");
    s.localDbPath = QStringLiteral("copy.db");
    w.setSpec(s);
    QCOMPARE(w.validationError(), QString());
    if (field == QLatin1String("sets"))
      w.findChild<QPlainTextEdit*>(field)->setPlainText(value);
    else
      w.findChild<QLineEdit*>(field)->setText(value);
    QSignalSpy started(w.session(), &LaunchSession::started);
    QSignalSpy updated(&w, &LauncherWindow::runStoreUpdated);
    QVERIFY(!w.start());
    QVERIFY2(w.errorText().contains(message), qPrintable(w.errorText()));
    QVERIFY(!w.session()->isRunning());
    QCOMPARE(started.count(), 0);
    QVERIFY(w.logView()->toPlainText().isEmpty());
    if (field == QLatin1String("prefix")) {  // also shown live under the field
      auto* live = w.findChild<QLabel*>(QStringLiteral("prefixError"));
      QVERIFY(live);
      QVERIFY(!live->isHidden());
      QCOMPARE(live->text(), moebench::gui::validatePrefix(value));
    }
    QTest::qWait(50);
    QCOMPARE(updated.count(), 0);
  }

  void windowRunsLocally() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString config = writeNastyConfig(tmp.path());
    LauncherWindow w;
    w.setSpec(localSpec(tmp, config));
    w.show();
    QSignalSpy updated(&w, &LauncherWindow::runStoreUpdated);
    QVERIFY(w.start());
    QVERIFY(w.logView()->toPlainText().startsWith(QStringLiteral("$ ") + w.commandText()));
    QVERIFY(w.commandText().contains(moebench::gui::shellQuote(config)));
    QVERIFY(!w.start());  // one run at a time
    QTRY_COMPARE_WITH_TIMEOUT(updated.count(), 1, kRunTimeoutMs);
    QCOMPARE(updated.at(0).at(0).toString(), localSpec(tmp, config).db);
    QCOMPARE(w.statusText(), QStringLiteral("finished (exit 0)"));
    QCOMPARE(w.progressBar()->maximum(), 12);
    QCOMPARE(w.progressBar()->value(), 12);
    QVERIFY(w.logView()->toPlainText().contains(QLatin1String("done: 12 steps")));
    QVERIFY(!pwnedAnywhere(tmp.path()));
  }

  // The log follows the newest line while scrolled to its end (also when the page is hidden),
  // stays where the user scrolled up to, and follows again once scrolled back down.
  void windowLogFollowsOutput() {
    for (const bool shown : {true, false}) {
      LauncherWindow w;
      w.resize(900, 600);
      if (shown) {
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
      }
      QScrollBar* bar = w.logView()->verticalScrollBar();
      int next = 0;
      auto emitLines = [&](int n) {
        for (int i = 0; i < n; ++i) emit w.session()->outputLine(QStringLiteral("line %1").arg(next++));
        const QString last = QStringLiteral("line %1").arg(next - 1);
        QTRY_VERIFY(w.logView()->toPlainText().endsWith(last));
      };
      emitLines(300);
      QVERIFY(bar->maximum() > 0);
      QCOMPARE(bar->value(), bar->maximum());
      bar->setValue(bar->maximum() / 2);  // the user scrolls up
      const int kept = bar->value();
      emitLines(300);
      QCOMPARE(bar->value(), kept);
      QVERIFY(bar->maximum() > kept);
      bar->setValue(bar->maximum());  // and back down
      emitLines(50);
      QCOMPARE(bar->value(), bar->maximum());
    }
  }

  void windowShowsStartFailure() {
    QTemporaryDir tmp;
    LauncherWindow w;
    LaunchSpec s = localSpec(tmp, tinyToml());
    s.moebenchPath = tmp.filePath(QStringLiteral("gone/moebench"));
    w.setSpec(s);
    QSignalSpy finished(w.session(), &LaunchSession::finished);
    QVERIFY(!w.start());
    QTRY_COMPARE(finished.count(), 1);
    QVERIFY2(w.errorText().startsWith(QLatin1String("could not start: ")), qPrintable(w.errorText()));
    QVERIFY(w.errorText().contains(s.moebenchPath));
  }
};

QTEST_MAIN(TestLaunchSession)
#include "tst_launch_session.moc"
