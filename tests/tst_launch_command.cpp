// ctest-labels: gui
// Launch command construction: quoting proven by running the quoted strings through /bin/sh,
// local arguments stay single arguments, the remote ssh string round-trips exactly, launcher
// prefixes are split safely, progress lines parse, and a remote run's upload (the run folder,
// the files a config names, the rewritten config, the mkdir and scp steps) is built and quoted
// exactly.
#include "models/launchcommand.h"
#include "models/launchupload.h"

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
  void shellQuote_data() {
    QTest::addColumn<QString>("input");
    QTest::newRow("plain") << QStringLiteral("abc");
    QTest::newRow("spaces") << QStringLiteral("a b  c");
    QTest::newRow("single quote") << QStringLiteral("it's");
    QTest::newRow("only quotes") << QStringLiteral("''");
    QTest::newRow("double quote") << QStringLiteral("say \"hi\"");
    QTest::newRow("semicolon") << QStringLiteral("a; echo INJECTED");
    QTest::newRow("command substitution") << QStringLiteral("$(rm -rf /)");
    QTest::newRow("variable") << QStringLiteral("$HOME ${PATH}");
    QTest::newRow("backticks") << QStringLiteral("`echo INJECTED`");
    QTest::newRow("newline") << QStringLiteral("line1\nline2");
    QTest::newRow("glob and escapes") << QStringLiteral("* ? \\n \\ ~ | & > <");
    QTest::newRow("empty") << QString();
  }
  void shellQuote() {
    QFETCH(QString, input);
    const QString quoted = moebench::gui::shellQuote(input);
    QVERIFY(quoted.startsWith(QLatin1Char('\'')) && quoted.endsWith(QLatin1Char('\'')));
    const ShResult r = runSh(QStringLiteral("printf '%s\\n' ") + quoted);
    QCOMPARE(r.code, 0);
    QCOMPARE(r.err, QString());
    QCOMPARE(r.out, input + QLatin1Char('\n'));
  }

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

  void remoteCommandStructure() {
    LaunchSpec s;
    s.remote = true;
    s.host = QStringLiteral("user@cluster");
    s.remoteDir = QStringLiteral("/scratch/my runs");
    s.launcherPrefix = QStringLiteral("srun -N2");
    s.configPath = QStringLiteral("configs/a b.toml");
    s.steps = 10;
    const Command c = buildRemoteCommand(s);
    QCOMPARE(c.program, QStringLiteral("ssh"));
    QCOMPARE(c.arguments.size(), 6);
    QCOMPARE(c.arguments.mid(0, 5), (QStringList{QStringLiteral("-tt"), QStringLiteral("-o"),
                                                 QStringLiteral("BatchMode=yes"), QStringLiteral("user@cluster"),
                                                 QStringLiteral("--")}));
    QCOMPARE(c.arguments.at(5),
             QStringLiteral("cd '/scratch/my runs' && 'srun' '-N2' 'moebench' 'run' 'configs/a b.toml' "
                            "'--steps' '10'"));

    LaunchSpec noDir = s;
    noDir.remoteDir.clear();
    noDir.launcherPrefix.clear();
    QCOMPARE(remoteShellCommand(noDir), QStringLiteral("'moebench' 'run' 'configs/a b.toml' '--steps' '10'"));

    LaunchSpec noHost = s;
    noHost.host.clear();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildRemoteCommand(noHost));
    LaunchSpec optionHost = s;
    optionHost.host = QStringLiteral("-oProxyCommand=evil");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildRemoteCommand(optionHost));
    LaunchSpec badPrefix = s;
    badPrefix.launcherPrefix = QStringLiteral("srun; rm -rf ~");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildRemoteCommand(badPrefix));
  }

  void remoteCommandExecutes() {
    // Execute the remote string with /bin/sh -c, as the remote login shell would: a temp dir
    // (with awkward characters) stands in for remoteDir, a script for the remote moebench.
    QTemporaryDir dir(QDir::tempPath() + QStringLiteral("/mb remote 'dir' XXXXXX"));
    QVERIFY(dir.isValid());
    const QString script = dir.filePath(QStringLiteral("fake moebench;'x'"));
    QFile f(script);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("#!/bin/sh\npwd -P\nprintf '%s\\n' \"$MB_PREFIX_VAR\"\nprintf '%s\\n' \"$@\"\n");
    f.close();
    QVERIFY(f.setPermissions(f.permissions() | QFileDevice::ExeOwner));

    LaunchSpec s;
    s.remote = true;
    s.host = QStringLiteral("somehost");
    s.remoteDir = dir.path();
    s.remoteMoebench = QStringLiteral("./fake moebench;'x'");
    s.launcherPrefix = QStringLiteral("env 'MB_PREFIX_VAR=a b' \"MB_OTHER=c'd\"");
    s.configPath = kNastyConfig;
    s.sets = {QStringLiteral("train.lr=1e-3"), QStringLiteral("x=$(touch pwned)")};
    s.steps = 5;
    s.ranks = 2;
    s.db = QStringLiteral("runs `x`.db");
    s.experiment = QStringLiteral("e\nnewline");
    const Command c = buildRemoteCommand(s);
    const ShResult r = runSh(c.arguments.last());
    QCOMPARE(r.err, QString());
    QCOMPARE(r.code, 0);
    QStringList expected{QFileInfo(dir.path()).canonicalFilePath(), QStringLiteral("a b")};
    expected << runArguments(s);
    QCOMPARE(r.out, expected.join(QLatin1Char('\n')) + QLatin1Char('\n'));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("pwned"))));
    QVERIFY(!QFile::exists(QStringLiteral("pwned")));
  }

  // A remote directory under ~ is expanded by the remote shell (the rest stays quoted).
  void remoteHomeDirectoryExpands() {
    QTemporaryDir home(QDir::tempPath() + QStringLiteral("/mb home XXXXXX"));
    QVERIFY(home.isValid());
    QVERIFY(QDir(home.path()).mkpath(QStringLiteral("my runs; 'x'")));
    QCOMPARE(quoteRemotePath(QStringLiteral("~/my runs")), QStringLiteral("~/'my runs'"));
    QCOMPARE(quoteRemotePath(QStringLiteral("~")), QStringLiteral("~"));
    QCOMPARE(quoteRemotePath(QStringLiteral("~user/x")), QStringLiteral("'~user/x'"));
    QCOMPARE(quoteRemotePath(QStringLiteral("/a b")), QStringLiteral("'/a b'"));
    LaunchSpec s;
    s.remote = true;
    s.host = QStringLiteral("somehost");
    s.remoteDir = QStringLiteral("~/my runs; 'x'");
    s.remoteMoebench = QStringLiteral("pwd");
    s.configPath = QStringLiteral("c.toml");
    const QString quotedDir = QStringLiteral(R"(~/'my runs; '\''x'\''')");
    const QString cmd = remoteShellCommand(s);
    QVERIFY2(cmd.startsWith(QStringLiteral("cd ") + quotedDir + QStringLiteral(" && ")), qPrintable(cmd));
    QProcess sh;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("HOME"), home.path());
    sh.setProcessEnvironment(env);
    sh.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), QStringLiteral("cd ") + quotedDir + QStringLiteral(" && pwd -P")});
    QVERIFY(sh.waitForFinished(10000));
    QCOMPARE(QString::fromUtf8(sh.readAllStandardOutput()).trimmed(),
             QFileInfo(home.filePath(QStringLiteral("my runs; 'x'"))).canonicalFilePath());
    QCOMPARE(buildFetchDbCommand(s, QStringLiteral("x.db")).arguments.at(4),
             QStringLiteral(R"(somehost:~/'my runs; '\''x'\''/runs.db')"));
  }

  // ssh options: only -o Key=Value (ssh and scp share them), placed before the host in both.
  void sshOptions() {
    QCOMPARE(sshOptionWords(QStringLiteral("-o Port=2222 -oProxyJump=gw -o 'ProxyCommand=nc %h 22'")),
             (QStringList{QStringLiteral("-o"), QStringLiteral("Port=2222"), QStringLiteral("-oProxyJump=gw"),
                          QStringLiteral("-o"), QStringLiteral("ProxyCommand=nc %h 22")}));
    QCOMPARE(sshOptionWords(QString()), QStringList());
    for (const char* bad : {"-p 2222", "-o", "-o Port", "-oPort", "-o =x", "host", "-o Port=1; rm x"})
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sshOptionWords(QString::fromUtf8(bad)));
    LaunchSpec s;
    s.remote = true;
    s.host = QStringLiteral("user@cluster");
    s.configPath = QStringLiteral("c.toml");
    s.sshOptions = QStringLiteral("-o Port=2222");
    const QStringList ssh = buildRemoteCommand(s).arguments;
    QCOMPARE(ssh.mid(0, 6), (QStringList{QStringLiteral("-tt"), QStringLiteral("-o"), QStringLiteral("BatchMode=yes"),
                                         QStringLiteral("-o"), QStringLiteral("Port=2222"), QStringLiteral("user@cluster")}));
    const QStringList scp = buildFetchDbCommand(s, QStringLiteral("x.db")).arguments;
    QCOMPARE(scp.mid(4, 3), (QStringList{QStringLiteral("-o"), QStringLiteral("Port=2222"),
                                         QStringLiteral("user@cluster:'runs.db'")}));
    s.sshOptions = QStringLiteral("-p 2222");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildRemoteCommand(s));
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

  void fetchDbCommand() {
    LaunchSpec s;
    s.host = QStringLiteral("user@cluster");
    s.remoteDir = QStringLiteral("/scratch/my runs");
    Command c = buildFetchDbCommand(s, QStringLiteral("/tmp/local copy.db"));
    QCOMPARE(c.program, QStringLiteral("scp"));
    QCOMPARE(c.arguments, (QStringList{QStringLiteral("-O"), QStringLiteral("-T"), QStringLiteral("-o"),
                                       QStringLiteral("BatchMode=yes"),
                                       QStringLiteral("user@cluster:'/scratch/my runs/runs.db'"),
                                       QStringLiteral("/tmp/local copy.db")}));
    s.db = QStringLiteral("/abs/it's.db");
    QCOMPARE(remoteDbPath(s), QStringLiteral("/abs/it's.db"));
    c = buildFetchDbCommand(s, QStringLiteral("x.db"));
    QCOMPARE(c.arguments.at(4), QStringLiteral("user@cluster:'/abs/it'\\''s.db'"));
    s.db = QStringLiteral("sub/r.db");
    QCOMPARE(remoteDbPath(s), QStringLiteral("/scratch/my runs/sub/r.db"));
    s.remoteDir.clear();
    QCOMPARE(remoteDbPath(s), QStringLiteral("sub/r.db"));
    s.host.clear();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildFetchDbCommand(s, QStringLiteral("x.db")));
  }

  // --- Remote launch uploads the config (launchupload.h) ---

  // The plan: the config and every file it names, with their names in the run folder, the
  // config's path keys rewritten to those names, path overrides folded into the config.
  void uploadPlan() {
    QTemporaryDir tmp(QDir::tempPath() + QStringLiteral("/mb upload 'plan' XXXXXX"));
    QVERIFY(tmp.isValid());
    const QString configDir = tmp.filePath(QStringLiteral("my configs/it's \"odd\"; $(x)"));
    QVERIFY(QDir().mkpath(configDir));
    QVERIFY(QDir().mkpath(tmp.filePath(QStringLiteral("data dir"))));
    auto write = [](const QString& path, const QByteArray& text) {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(text);
    };
    write(configDir + QStringLiteral("/cluster `x`.toml"), "[cluster]\nname = \"c\"\n");
    write(tmp.filePath(QStringLiteral("data dir/train's.bin")), QByteArray(64, '\0'));
    write(tmp.filePath(QStringLiteral("emulated.toml")), "[cluster]\n");
    const QByteArray config =
        "# kept\n[run]\nname = \"edited\"\n[cluster]\nfile = \"cluster `x`.toml\"\n"
        "[data]\nsource = \"bin\"\npath = \"../../data dir/train's.bin\"\n";
    const QString configPath = configDir + QStringLiteral("/run; it's.toml");
    write(configPath, config);

    LaunchSpec s;
    s.remote = true;
    s.host = QStringLiteral("user@cluster");
    s.remoteDir = QStringLiteral("/scratch/my runs");
    s.configPath = QDir(tmp.path()).relativeFilePath(configPath);  // relative to the local directory
    s.sets = {QStringLiteral("train.steps=7"), QStringLiteral("emulate.cluster=emulated.toml")};
    const RemoteUpload u = planRemoteUpload(s, QStringLiteral("20250101-120000-00abcd"), tmp.path());
    QCOMPARE(u.runId, QStringLiteral("20250101-120000-00abcd"));
    QCOMPARE(u.runFolder, QStringLiteral("moebench-runs/20250101-120000-00abcd"));
    QCOMPARE(u.configName, QStringLiteral("run; it's.toml"));
    QCOMPARE(u.sets, QStringList{QStringLiteral("train.steps=7")});
    QCOMPARE(u.files.size(), 3);
    QCOMPARE(u.files[0].name, QStringLiteral("cluster `x`.toml"));
    QCOMPARE(u.files[0].source, configDir + QStringLiteral("/cluster `x`.toml"));
    QCOMPARE(u.files[0].keys, QStringList{QStringLiteral("cluster.file")});
    QCOMPARE(u.files[1].name, QStringLiteral("train's.bin"));
    QCOMPARE(u.files[1].source, tmp.filePath(QStringLiteral("data dir/train's.bin")));
    QCOMPARE(u.files[2].name, QStringLiteral("emulated.toml"));  // by --set, relative to the local directory
    QCOMPARE(u.files[2].source, tmp.filePath(QStringLiteral("emulated.toml")));
    QVERIFY(u.directories.isEmpty());
    const QString text = QString::fromUtf8(u.configText);
    QVERIFY(text.startsWith(QStringLiteral("# kept\n[run]\nname = \"edited\"\n")));
    QVERIFY2(text.contains(QStringLiteral("file = \"cluster `x`.toml\"\n")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("path = \"train's.bin\"\n")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("[emulate]\ncluster = \"emulated.toml\"")), qPrintable(text));

    // The run runs the copy, from remoteDir, with the overrides left.
    const LaunchSpec run = uploadedRunSpec(s, u);
    QCOMPARE(run.configPath, QStringLiteral("moebench-runs/20250101-120000-00abcd/run; it's.toml"));
    QCOMPARE(run.sets, QStringList{QStringLiteral("train.steps=7")});
    QCOMPARE(buildRemoteCommand(run).arguments.last(),
             QStringLiteral("cd '/scratch/my runs' && 'moebench' 'run' 'moebench-runs/20250101-120000-00abcd/run; "
                            "it'\\''s.toml' '--set' 'train.steps=7'"));
    QCOMPARE(remoteRunPath(s, u), QStringLiteral("/scratch/my runs/moebench-runs/20250101-120000-00abcd"));
  }

  // A file the config names that is not there: one message naming the key and the file.
  void uploadPlanFailures() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    LaunchSpec s;
    s.remote = true;
    s.host = QStringLiteral("h");
    s.configPath = tmp.filePath(QStringLiteral("gone.toml"));
    try {
      planRemoteUpload(s, QStringLiteral("id"), tmp.path());
      QFAIL("no exception");
    } catch (const std::runtime_error& e) {
      QCOMPARE(QString::fromUtf8(e.what()), QStringLiteral("config file %1: not found").arg(s.configPath));
    }
    QFile f(tmp.filePath(QStringLiteral("c.toml")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("[cluster]\nfile = \"no such cluster.toml\"\n");
    f.close();
    s.configPath = f.fileName();
    try {
      planRemoteUpload(s, QStringLiteral("id"), tmp.path());
      QFAIL("no exception");
    } catch (const std::runtime_error& e) {
      QCOMPARE(QString::fromUtf8(e.what()),
               QStringLiteral("cannot upload the config %1: cluster.file: file not found: %2 (c.toml)")
                   .arg(f.fileName(), tmp.filePath(QStringLiteral("no such cluster.toml"))));
    }
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("[cluster\n");
    f.close();
    try {
      planRemoteUpload(s, QStringLiteral("id"), tmp.path());
      QFAIL("no exception");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString::fromUtf8(e.what()).startsWith(QStringLiteral("config file %1: the config is not valid TOML")
                                                          .arg(f.fileName())),
               e.what());
    }
  }

  void runIdAndFolder() {
    const QString id = newRemoteRunId(QDateTime(QDate(2025, 3, 4), QTime(5, 6, 7)));
    QVERIFY2(QRegularExpression(QStringLiteral("^20250304-050607-[0-9a-f]{6}$")).match(id).hasMatch(), qPrintable(id));
    QVERIFY(newRemoteRunId() != newRemoteRunId() || newRemoteRunId() != newRemoteRunId());
    RemoteUpload u;
    u.runFolder = remoteRunFolder(QStringLiteral("x"));
    QCOMPARE(u.runFolder, QStringLiteral("moebench-runs/x"));
    LaunchSpec s;
    QCOMPARE(remoteRunPath(s, u), QStringLiteral("moebench-runs/x"));  // the login directory
    s.remoteDir = QStringLiteral("~");
    QCOMPARE(remoteRunPath(s, u), QStringLiteral("~/moebench-runs/x"));
    QCOMPARE(quoteRemotePath(remoteRunPath(s, u)), QStringLiteral("~/'moebench-runs/x'"));
    s.remoteDir = QStringLiteral("/");
    QCOMPARE(remoteRunPath(s, u), QStringLiteral("/moebench-runs/x"));
    s.remoteDir = QStringLiteral("runs dir//");
    QCOMPARE(remoteRunPath(s, u), QStringLiteral("runs dir/moebench-runs/x"));
  }

  // The mkdir step: ssh without a terminal, every word quoted; run through /bin/sh it creates
  // exactly the run folder (and a state folder) in an awkward directory, injecting nothing.
  void mkdirCommand() {
    QTemporaryDir dir(QDir::tempPath() + QStringLiteral("/mb remote 'dir' $(touch pwned) XXXXXX"));
    QVERIFY(dir.isValid());
    LaunchSpec s;
    s.remote = true;
    s.host = QStringLiteral("user@cluster");
    s.sshOptions = QStringLiteral("-o Port=2222");
    s.remoteDir = dir.path();
    RemoteUpload u;
    u.runFolder = remoteRunFolder(QStringLiteral("id 'x' `touch pwned2`"));
    u.directories = {QStringLiteral("ssd; states")};
    const Command c = buildRemoteMkdirCommand(s, u);
    QCOMPARE(c.program, QStringLiteral("ssh"));
    QCOMPARE(c.arguments.mid(0, 6), (QStringList{QStringLiteral("-o"), QStringLiteral("BatchMode=yes"), QStringLiteral("-o"),
                                                 QStringLiteral("Port=2222"), QStringLiteral("user@cluster"),
                                                 QStringLiteral("--")}));
    QCOMPARE(c.arguments.size(), 7);
    QCOMPARE(c.arguments.last(), QStringLiteral("cd ") + moebench::gui::shellQuote(dir.path()) +
                                     QStringLiteral(" && mkdir -p -- 'moebench-runs/id '\\''x'\\'' `touch pwned2`' "
                                                    "'moebench-runs/id '\\''x'\\'' `touch pwned2`/ssd; states'"));
    const ShResult r = runSh(c.arguments.last());
    QCOMPARE(r.err, QString());
    QCOMPARE(r.code, 0);
    QVERIFY(QFileInfo(dir.filePath(u.runFolder + QStringLiteral("/ssd; states"))).isDir());
    for (const char* name : {"pwned", "pwned2"}) QVERIFY(!QFile::exists(dir.filePath(QLatin1String(name))));
    s.remoteDir.clear();
    QCOMPARE(buildRemoteMkdirCommand(s, u).arguments.last().left(15), QStringLiteral("mkdir -p -- 'mo"));
    s.host.clear();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildRemoteMkdirCommand(s, u));
  }

  // The scp step: the staged files (the config first), then host:<the quoted run folder>,
  // with the legacy protocol so that the remote shell reads the quoting.
  void uploadCommand() {
    LaunchSpec s;
    s.remote = true;
    s.host = QStringLiteral("user@cluster");
    s.sshOptions = QStringLiteral("-o 'ProxyJump=gw one'");
    s.remoteDir = QStringLiteral("/scratch/it's \"my\" runs");
    RemoteUpload u;
    u.runFolder = remoteRunFolder(QStringLiteral("20250101-000000-abcdef"));
    u.configName = QStringLiteral("run $(x).toml");
    u.files = {{QStringLiteral("/data/a b/c.toml"), QStringLiteral("c.toml"), {QStringLiteral("cluster.file")}},
               {QStringLiteral("/d/x.bin"), QStringLiteral("x 'y'.bin"), {QStringLiteral("data.path")}}};
    QCOMPARE(stagedUploadFiles(u, QStringLiteral("/tmp/stage dir")),
             (QStringList{QStringLiteral("/tmp/stage dir/run $(x).toml"), QStringLiteral("/tmp/stage dir/c.toml"),
                          QStringLiteral("/tmp/stage dir/x 'y'.bin")}));
    const Command c = buildUploadCommand(s, u, QStringLiteral("/tmp/stage dir"));
    QCOMPARE(c.program, QStringLiteral("scp"));
    const QString target = QStringLiteral("user@cluster:'/scratch/it'\\''s \"my\" runs/moebench-runs/20250101-000000-abcdef'");
    QCOMPARE(c.arguments, (QStringList{QStringLiteral("-O"), QStringLiteral("-o"), QStringLiteral("BatchMode=yes"),
                                       QStringLiteral("-o"), QStringLiteral("ProxyJump=gw one")} +
                           stagedUploadFiles(u, QStringLiteral("/tmp/stage dir")) + QStringList{target}));
    // The remote shell reads the target back exactly.
    const ShResult r = runSh(QStringLiteral("printf '%s' ") + target.mid(target.indexOf(QLatin1Char(':')) + 1));
    QCOMPARE(r.out, remoteRunPath(s, u));
    s.remoteDir = QStringLiteral("~/runs");
    QCOMPARE(buildUploadCommand(s, u, QStringLiteral("/s")).arguments.last(),
             QStringLiteral("user@cluster:~/'runs/moebench-runs/20250101-000000-abcdef'"));
    s.host = QStringLiteral("-oProxyCommand=x");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildUploadCommand(s, u, QStringLiteral("/s")));
  }

  // Before a start the launcher shows the run with "<run-id>" for the folder, the config's name
  // and the overrides that stay --set.
  void previewCommand() {
    LaunchSpec s;
    s.remote = true;
    s.host = QStringLiteral("h");
    s.remoteDir = QStringLiteral("/r");
    s.configPath = QStringLiteral("/local/my cfg.toml");
    s.sets = {QStringLiteral("cluster.file=/x/c.toml"), QStringLiteral("train.lr=1e-3"), QStringLiteral(" data.path = y")};
    QCOMPARE(previewRemoteCommand(s).arguments.last(),
             QStringLiteral("cd '/r' && 'moebench' 'run' 'moebench-runs/<run-id>/my cfg.toml' '--set' 'train.lr=1e-3'"));
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
