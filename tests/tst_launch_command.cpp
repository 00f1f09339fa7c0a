// ctest-labels: gui
// Launch command construction: local arguments stay single arguments (proven by running them),
// a remote run is the local `moebench launch HOST CONFIG ...` with every value one argument, the
// form's ssh options become --ssh-option values, bad hosts, options and prefixes are refused,
// displayed commands paste back exactly, progress lines parse. (The remote quoting itself is the
// core's: tst_remote_shell; the remote launch for real: tst_cli_launch and tst_launch_remote.)
#include "models/launchcommand.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <stdexcept>

using namespace moebench::gui;

namespace {
struct ShResult {
  int code = -1;
  QString out, err;
};

ShResult runSh(const QString& script, const QString& cwd = {}) {
  QProcess p;
  if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
  p.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), script});
  ShResult r;
  if (!p.waitForFinished(10000)) {
    p.kill();
    p.waitForFinished();
    r.err = QStringLiteral("timeout");
    return r;
  }
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

const QString kNastyConfig = QStringLiteral("my configs/it's \"odd\"; rm -rf x $(echo hi) `id`.toml");
}  // namespace

class TestLaunchCommand : public QObject {
  Q_OBJECT

 private slots:
  // The quoting itself is core's remote::shell_quote (tst_remote_shell round-trips it through sh);
  // the GUI's wrapper only converts.
  void shellQuoteForm() {
    QCOMPARE(moebench::gui::shellQuote(QStringLiteral("abc")), QStringLiteral("'abc'"));
    QCOMPARE(moebench::gui::shellQuote(QStringLiteral("it's")), QStringLiteral("'it'\\''s'"));
    QCOMPARE(moebench::gui::shellQuote(QString()), QStringLiteral("''"));
  }

  void localCommand() {
    LaunchSpec s;
    s.moebenchPath = QStringLiteral("/opt/moebench/bin/moebench");
    s.configPath = kNastyConfig;
    s.sets = {QStringLiteral("train.lr=3e-4"), QStringLiteral("model.name=a b;c")};
    s.steps = 300;
    s.ranks = 4;
    s.db = QStringLiteral("/data/runs db.sqlite");
    s.experiment = QStringLiteral("exp 'one'");
    s.outDir = QStringLiteral("out dir");
    s.overwrite = true;
    const Command c = buildLocalCommand(s);
    QCOMPARE(c.program, s.moebenchPath);
    const QStringList expected{QStringLiteral("run"), kNastyConfig,
                               QStringLiteral("--set"), QStringLiteral("train.lr=3e-4"),
                               QStringLiteral("--set"), QStringLiteral("model.name=a b;c"),
                               QStringLiteral("--steps"), QStringLiteral("300"),
                               QStringLiteral("--ranks"), QStringLiteral("4"),
                               QStringLiteral("--db"), s.db,
                               QStringLiteral("--experiment"), s.experiment,
                               QStringLiteral("--out"), s.outDir,
                               QStringLiteral("--overwrite")};
    QCOMPARE(c.arguments, expected);
    QCOMPARE(c.arguments.count(kNastyConfig), 1);  // config stays ONE argument

    LaunchSpec minimal;
    minimal.moebenchPath = QStringLiteral("moebench");
    minimal.configPath = QStringLiteral("c.toml");
    QCOMPARE(buildLocalCommand(minimal).arguments, (QStringList{QStringLiteral("run"), QStringLiteral("c.toml")}));
  }

  void localCommandRoundTrip() {
    // Run the local command for real with a script standing in for moebench.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString script = dir.filePath(QStringLiteral("fake-moebench"));
    QFile f(script);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("#!/bin/sh\nprintf '%s\\n' \"$@\"\n");
    f.close();
    QVERIFY(f.setPermissions(f.permissions() | QFileDevice::ExeOwner));
    LaunchSpec s;
    s.moebenchPath = script;
    s.configPath = kNastyConfig;
    s.sets = {QStringLiteral("a=b c")};
    const Command c = buildLocalCommand(s);
    QProcess p;
    p.start(c.program, c.arguments);
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitCode(), 0);
    QCOMPARE(QString::fromUtf8(p.readAllStandardOutput()), c.arguments.join(QLatin1Char('\n')) + QLatin1Char('\n'));
  }

  // A remote run is `moebench launch` here: options first, then "--", the host and the config.
  void remoteCommandIsMoebenchLaunch() {
    LaunchSpec s;
    s.remote = true;
    s.moebenchPath = QStringLiteral("/opt/mb/moebench");
    s.host = QStringLiteral("user@cluster");
    s.sshOptions = QStringLiteral("-o Port=2222 -oProxyJump=gw -o 'ProxyCommand=nc %h 22'");
    s.remoteDir = QStringLiteral("/scratch/my runs");
    s.launcherPrefix = QStringLiteral("srun -N2 --job-name='a b'");
    s.remoteMoebench = QStringLiteral("/opt/moebench/bin/moebench");
    s.configPath = kNastyConfig;
    s.sets = {QStringLiteral("train.lr=3e-4"), QStringLiteral("model.name=a b;c")};
    s.steps = 10;
    s.ranks = 4;
    s.db = QStringLiteral("ignored.db");  // a remote run's store is its run folder's, imported into localDbPath
    s.experiment = QStringLiteral("exp 'one'");
    s.outDir = QStringLiteral("out dir");
    s.overwrite = true;
    s.localDbPath = QStringLiteral("/home/me/runs db.sqlite");
    const Command c = buildRemoteCommand(s);
    QCOMPARE(c.program, s.moebenchPath);
    QCOMPARE(c.arguments, (QStringList{"launch", "--dir", "/scratch/my runs", "--prefix", "srun -N2 --job-name='a b'",
                                       "--remote-moebench", "/opt/moebench/bin/moebench",
                                       "--ssh-option", "Port=2222", "--ssh-option", "ProxyJump=gw",
                                       "--ssh-option", "ProxyCommand=nc %h 22",
                                       "--set", "train.lr=3e-4", "--set", "model.name=a b;c", "--steps", "10", "--ranks", "4",
                                       "--experiment", "exp 'one'", "--out", "out dir", "--overwrite",
                                       "--db", "/home/me/runs db.sqlite", "--", "user@cluster", kNastyConfig}));

    LaunchSpec minimal;
    minimal.remote = true;
    minimal.moebenchPath = QStringLiteral("moebench");
    minimal.host = QStringLiteral("h");
    minimal.configPath = QStringLiteral("-c.toml");  // after "--": never an option
    minimal.remoteMoebench.clear();
    QCOMPARE(buildRemoteCommand(minimal).arguments, (QStringList{"launch", "--", "h", "-c.toml"}));

    for (const char* host : {"", "-oProxyCommand=evil", "a b"}) {
      LaunchSpec bad = s;
      bad.host = QString::fromUtf8(host);
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildRemoteCommand(bad));
    }
    LaunchSpec badPrefix = s;
    badPrefix.launcherPrefix = QStringLiteral("srun; rm -rf ~");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildRemoteCommand(badPrefix));
    LaunchSpec badOption = s;
    badOption.sshOptions = QStringLiteral("-p 2222");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildRemoteCommand(badOption));
  }

  // The remote command's arguments reach the program one by one (a script stands in for moebench).
  void remoteCommandRoundTrip() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString script = dir.filePath(QStringLiteral("fake-moebench"));
    QFile f(script);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("#!/bin/sh\nprintf '%s\\n' \"$@\"\n");
    f.close();
    QVERIFY(f.setPermissions(f.permissions() | QFileDevice::ExeOwner));
    LaunchSpec s;
    s.remote = true;
    s.moebenchPath = script;
    s.host = QStringLiteral("h");
    s.remoteDir = QStringLiteral("$(touch pwned) 'x'");
    s.configPath = kNastyConfig;
    s.sets = {QStringLiteral("a=b c")};
    s.localDbPath = QStringLiteral("l.db");
    const Command c = buildRemoteCommand(s);
    QProcess p;
    p.setWorkingDirectory(dir.path());
    p.start(c.program, c.arguments);
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitCode(), 0);
    QCOMPARE(QString::fromUtf8(p.readAllStandardOutput()), c.arguments.join(QLatin1Char('\n')) + QLatin1Char('\n'));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("pwned"))));
  }

  // The form's ssh options: only -o Key=Value (ssh and scp share them), given to launch as values.
  void sshOptions() {
    QCOMPARE(sshOptionValues(QStringLiteral("-o Port=2222 -oProxyJump=gw -o 'ProxyCommand=nc %h 22'")),
             (QStringList{QStringLiteral("Port=2222"), QStringLiteral("ProxyJump=gw"), QStringLiteral("ProxyCommand=nc %h 22")}));
    QCOMPARE(sshOptionValues(QString()), QStringList());
    for (const char* bad : {"-p 2222", "-o", "-o Port", "-oPort", "-o =x", "host", "-o Port=1; rm x"})
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sshOptionValues(QString::fromUtf8(bad)));
  }

  // A config path starting with '-' is passed as ./-name, never as an option.
  void configPathStartingWithDash() {
    LaunchSpec s;
    s.configPath = QStringLiteral("-h.toml");
    QCOMPARE(runArguments(s).at(1), QStringLiteral("./-h.toml"));
  }

  void displayCommandQuotesWhatNeedsIt() {
    const Command c{QStringLiteral("/opt/mb bin/moebench"),
                    {QStringLiteral("run"), kNastyConfig, QStringLiteral("--set"), QStringLiteral("train.lr=3e-4"),
                     QStringLiteral("--db"), QStringLiteral("/tmp/x,y@z:%+.db"), QString()}};
    const QString shown = displayCommand(c);
    QCOMPARE(shown, QStringLiteral("'/opt/mb bin/moebench' run ") + moebench::gui::shellQuote(kNastyConfig) +
                        QStringLiteral(" --set train.lr=3e-4 --db /tmp/x,y@z:%+.db ''"));
    // Pasted into a shell it gives back exactly the words.
    const ShResult r = runSh(QStringLiteral("printf '%s\\n' ") + shown);
    QCOMPARE(r.code, 0);
    QCOMPARE(r.out, (QStringList{c.program} + c.arguments).join(QLatin1Char('\n')) + QLatin1Char('\n'));
  }

  void splitPrefix_data() {
    QTest::addColumn<QString>("prefix");
    QTest::addColumn<QStringList>("words");
    QTest::newRow("empty") << QString() << QStringList{};
    QTest::newRow("blank") << QStringLiteral("   ") << QStringList{};
    QTest::newRow("srun") << QStringLiteral("srun -N2") << QStringList{QStringLiteral("srun"), QStringLiteral("-N2")};
    QTest::newRow("mpirun") << QStringLiteral("mpirun -np 16")
                            << QStringList{QStringLiteral("mpirun"), QStringLiteral("-np"), QStringLiteral("16")};
    QTest::newRow("extra spaces") << QStringLiteral("  srun   -N2\t--exclusive ")
                                  << QStringList{QStringLiteral("srun"), QStringLiteral("-N2"), QStringLiteral("--exclusive")};
    QTest::newRow("single quotes") << QStringLiteral("srun --job-name='my job'")
                                   << QStringList{QStringLiteral("srun"), QStringLiteral("--job-name=my job")};
    QTest::newRow("double quotes") << QStringLiteral("srun \"--comment=it's\" ''")
                                   << QStringList{QStringLiteral("srun"), QStringLiteral("--comment=it's"), QString()};
  }
  void splitPrefix() {
    QFETCH(QString, prefix);
    QFETCH(QStringList, words);
    QCOMPARE(moebench::gui::splitPrefix(prefix), words);
    QCOMPARE(validatePrefix(prefix), QString());
  }

  void splitPrefixRejects_data() {
    QTest::addColumn<QString>("prefix");
    QTest::newRow("semicolon") << QStringLiteral("srun; rm -rf ~");
    QTest::newRow("pipe") << QStringLiteral("srun | tee x");
    QTest::newRow("and") << QStringLiteral("srun && rm x");
    QTest::newRow("background") << QStringLiteral("srun &");
    QTest::newRow("backtick") << QStringLiteral("srun `id`");
    QTest::newRow("dollar") << QStringLiteral("srun -N$N");
    QTest::newRow("subshell") << QStringLiteral("(srun)");
    QTest::newRow("redirect in") << QStringLiteral("srun < x");
    QTest::newRow("redirect out") << QStringLiteral("srun > x");
    QTest::newRow("newline") << QStringLiteral("srun\nrm x");
    QTest::newRow("quoted semicolon") << QStringLiteral("srun ';'");
    QTest::newRow("unterminated") << QStringLiteral("srun 'abc");
  }
  void splitPrefixRejects() {
    QFETCH(QString, prefix);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, moebench::gui::splitPrefix(prefix));
    QVERIFY(!validatePrefix(prefix).isEmpty());
  }

  void progress_data() {
    QTest::addColumn<QString>("line");
    QTest::addColumn<bool>("valid");
    QTest::addColumn<long>("step");
    QTest::addColumn<long>("total");
    QTest::addColumn<double>("loss");
    QTest::addColumn<bool>("done");
    QTest::newRow("padded step")
        << QStringLiteral("step  12/300 | loss 3.1234 | aux 0.0100 | lr 3.00e-04 | grad 1.234 |    12.3 ms |    12345 tok/s")
        << true << 12L << 300L << 3.1234 << false;
    QTest::newRow("last step") << QStringLiteral("step 300/300 | loss 2.5000 | aux 0.0100") << true << 300L << 300L << 2.5 << false;
    QTest::newRow("distributed") << QStringLiteral("step 1/3 | loss 10.5 | aux 0.01 | comm  12% | sent intra 1.00 MB inter 0.00 MB")
                                 << true << 1L << 3L << 10.5 << false;
    QTest::newRow("trailing CR") << QStringLiteral("step 7/9 | loss 1.0000\r") << true << 7L << 9L << 1.0 << false;
    QTest::newRow("done")
        << QStringLiteral("done: 300 steps in 12.5 s | 4000 tok/s | final train loss 2.4321 | val loss 2.5000 | checkpoint out/ckpt")
        << true << 300L << 300L << 2.4321 << true;
    QTest::newRow("done minimal") << QStringLiteral("done: 3 steps in 0.1 s") << true << 3L << 3L << 0.0 << true;
    QTest::newRow("eval line") << QStringLiteral("eval after step 100 | val loss 2.9") << false << -1L << -1L << 0.0 << false;
    QTest::newRow("resumed") << QStringLiteral("resumed at step 2") << false << -1L << -1L << 0.0 << false;
    QTest::newRow("empty") << QString() << false << -1L << -1L << 0.0 << false;
    QTest::newRow("garbage") << QStringLiteral("step x/y | loss z") << false << -1L << -1L << 0.0 << false;
  }
  void progress() {
    QFETCH(QString, line);
    QFETCH(bool, valid);
    QFETCH(long, step);
    QFETCH(long, total);
    QFETCH(double, loss);
    QFETCH(bool, done);
    const auto p = parseProgressLine(line);
    QCOMPARE(p.has_value(), valid);
    if (!p) return;
    QCOMPARE(p->step, step);
    QCOMPARE(p->total, total);
    QCOMPARE(p->loss, loss);
    QCOMPARE(p->done, done);
  }

  void progressNan() {
    const auto p = parseProgressLine(QStringLiteral("step 5/10 | loss nan | aux 0.0"));
    QVERIFY(p.has_value());
    QVERIFY(std::isnan(p->loss));
  }
};

QTEST_APPLESS_MAIN(TestLaunchCommand)
#include "tst_launch_command.moc"
