// ctest-labels: unit
// The remote launch's quoting (moebench/remote/remote_shell.h), proven by running the quoted
// strings through /bin/sh as the remote login shell would: every word comes back exactly, nothing
// injected runs, ~ expands; launcher prefixes split into words or are refused; hosts, ssh options
// and run ids are checked.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <stdexcept>

#include "moebench/remote/remote_shell.h"

using namespace moebench::remote;

namespace {
struct ShResult {
  int code = -1;
  QString out, err;
};

ShResult runSh(const std::string& script, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), QString::fromStdString(script)});
  ShResult r;
  if (!p.waitForFinished(10000)) {
    p.kill();
    p.waitForFinished();
    return r;
  }
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

std::vector<std::string> words(std::initializer_list<const char*> w) { return {w.begin(), w.end()}; }
}  // namespace

class TestRemoteShell : public QObject {
  Q_OBJECT

 private slots:
  void shellQuoteRoundTrips_data() {
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
    QTest::newRow("utf-8") << QStringLiteral("données ✓");
    QTest::newRow("empty") << QString();
  }
  void shellQuoteRoundTrips() {
    QFETCH(QString, input);
    const std::string quoted = shell_quote(input.toStdString());
    const ShResult r = runSh("printf '%s\\n' " + quoted);
    QCOMPARE(r.code, 0);
    QCOMPARE(r.err, QString());
    QCOMPARE(r.out, input + QLatin1Char('\n'));
  }

  void shellQuoteForm() {
    QCOMPARE(shell_quote("abc"), std::string("'abc'"));
    QCOMPARE(shell_quote("it's"), std::string("'it'\\''s'"));
    QCOMPARE(shell_quote(""), std::string("''"));
  }

  // The whole remote command run by /bin/sh -c: it changes into the directory (odd characters),
  // runs the prefix's words and the program, every argument exactly, nothing injected.
  void remoteCommandExecutes() {
    QTemporaryDir dir(QDir::tempPath() + QStringLiteral("/mb remote 'dir' $(touch pwned) XXXXXX"));
    QVERIFY(dir.isValid());
    QFile f(dir.filePath(QStringLiteral("fake moebench;'x'")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("#!/bin/sh\npwd -P\nprintf '%s\\n' \"$MB_PREFIX_VAR\" \"$MB_OTHER\"\nprintf '%s\\n' \"$@\"\n");
    f.close();
    QVERIFY(f.setPermissions(f.permissions() | QFileDevice::ExeOwner));
    const std::vector<std::string> args =
        words({"run", "moebench-runs/x/it's \"odd\"; rm -rf x $(echo hi) `id`.toml", "--set", "x=$(touch pwned)",
               "--experiment", "e\nnewline", "--db", ""});
    const std::string cmd = remote_shell_command(dir.path().toStdString(), "env 'MB_PREFIX_VAR=a b' \"MB_OTHER=c'd\"",
                                                 "./fake moebench;'x'", args);
    const ShResult r = runSh(cmd);
    QCOMPARE(r.err, QString());
    QCOMPARE(r.code, 0);
    QStringList expected{QFileInfo(dir.path()).canonicalFilePath(), QStringLiteral("a b"), QStringLiteral("c'd")};
    for (const std::string& a : args) expected << QString::fromStdString(a);
    QCOMPARE(r.out, expected.join(QLatin1Char('\n')) + QLatin1Char('\n'));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("pwned"))));
    QVERIFY(!QFile::exists(QStringLiteral("pwned")));
    QCOMPARE(remote_shell_command("", "", "moebench", words({"run", "a b.toml"})), std::string("'moebench' 'run' 'a b.toml'"));
  }

  // A directory under ~ is expanded by the remote shell (the rest stays quoted).
  void homeDirectoryExpands() {
    QTemporaryDir home(QDir::tempPath() + QStringLiteral("/mb home XXXXXX"));
    QVERIFY(home.isValid());
    QVERIFY(QDir(home.path()).mkpath(QStringLiteral("my runs; 'x'")));
    QCOMPARE(quote_remote_path("~/my runs"), std::string("~/'my runs'"));
    QCOMPARE(quote_remote_path("~"), std::string("~"));
    QCOMPARE(quote_remote_path("~user/x"), std::string("'~user/x'"));
    QCOMPARE(quote_remote_path("/a b"), std::string("'/a b'"));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("HOME"), home.path());
    const ShResult r = runSh(remote_shell_command("~/my runs; 'x'", "", "pwd", {"-P"}), env);
    QCOMPARE(r.code, 0);
    QCOMPARE(r.out.trimmed(), QFileInfo(home.filePath(QStringLiteral("my runs; 'x'"))).canonicalFilePath());
    // The program too (--remote-moebench ~/bin/moebench).
    QFile tool(home.filePath(QStringLiteral("my tool")));
    QVERIFY(tool.open(QIODevice::WriteOnly));
    tool.write("#!/bin/sh\necho \"tool $1\"\n");
    tool.close();
    QVERIFY(tool.setPermissions(tool.permissions() | QFileDevice::ExeOwner));
    const ShResult t = runSh(remote_shell_command("", "", "~/my tool", {"it's"}), env);
    QCOMPARE(t.out, QStringLiteral("tool it's\n"));
  }

  void splitPrefix_data() {
    QTest::addColumn<QString>("prefix");
    QTest::addColumn<QStringList>("words");
    QTest::newRow("empty") << QString() << QStringList{};
    QTest::newRow("blank") << QStringLiteral("   ") << QStringList{};
    QTest::newRow("srun") << QStringLiteral("srun -N2") << QStringList{"srun", "-N2"};
    QTest::newRow("mpirun") << QStringLiteral("mpirun -np 16") << QStringList{"mpirun", "-np", "16"};
    QTest::newRow("extra spaces") << QStringLiteral("  srun   -N2\t--exclusive ") << QStringList{"srun", "-N2", "--exclusive"};
    QTest::newRow("single quotes") << QStringLiteral("srun --job-name='my job'") << QStringList{"srun", "--job-name=my job"};
    QTest::newRow("double quotes") << QStringLiteral("srun \"--comment=it's\" ''") << QStringList{"srun", "--comment=it's", ""};
  }
  void splitPrefix() {
    QFETCH(QString, prefix);
    QFETCH(QStringList, words);
    QStringList got;
    for (const std::string& w : split_launcher_prefix(prefix.toStdString())) got << QString::fromStdString(w);
    QCOMPARE(got, words);
  }

  void splitPrefixRejects_data() {
    QTest::addColumn<QString>("prefix");
    QTest::addColumn<QString>("message");
    const QString meta = QStringLiteral("launcher prefix contains the shell metacharacter '%1'; only plain words and simple "
                                        "'...' or \"...\" quoting are allowed");
    QTest::newRow("semicolon") << QStringLiteral("srun; rm -rf ~") << meta.arg(';');
    QTest::newRow("pipe") << QStringLiteral("srun | tee x") << meta.arg('|');
    QTest::newRow("and") << QStringLiteral("srun && rm x") << meta.arg('&');
    QTest::newRow("backtick") << QStringLiteral("srun `id`") << meta.arg('`');
    QTest::newRow("dollar") << QStringLiteral("srun -N$N") << meta.arg('$');
    QTest::newRow("subshell") << QStringLiteral("(srun)") << meta.arg('(');
    QTest::newRow("redirect in") << QStringLiteral("srun < x") << meta.arg('<');
    QTest::newRow("redirect out") << QStringLiteral("srun > x") << meta.arg('>');
    QTest::newRow("newline") << QStringLiteral("srun\nrm x") << meta.arg(QStringLiteral("\\n"));
    QTest::newRow("quoted semicolon") << QStringLiteral("srun ';'") << meta.arg(';');
    QTest::newRow("unterminated") << QStringLiteral("srun 'abc") << QStringLiteral("launcher prefix has an unterminated ' quote");
  }
  void splitPrefixRejects() {
    QFETCH(QString, prefix);
    QFETCH(QString, message);
    try {
      split_launcher_prefix(prefix.toStdString());
      QFAIL("accepted");
    } catch (const std::invalid_argument& e) {
      QCOMPARE(QString::fromUtf8(e.what()), message);
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, remote_shell_command("", prefix.toStdString(), "moebench", {}));
  }

  void hostsAndOptions() {
    for (const char* ok : {"login1", "user@cluster.example.org", "10.0.0.5", "h-1"}) check_ssh_host(ok);
    for (const char* bad : {"", "  ", "-oProxyCommand=evil", "a b", "a\nb"})
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, check_ssh_host(bad));
    for (const char* ok : {"Port=2222", "ProxyJump=gw", "ProxyCommand=nc %h 22", "Port 2222"}) check_ssh_option(ok);
    for (const char* bad : {"", "Port", "Port=", "=x", "-oPort=1", "-p 2222"})
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, check_ssh_option(bad));
  }

  void runIdAndPaths() {
    const std::string id = new_run_id();
    QVERIFY2(QRegularExpression(QStringLiteral("^\\d{8}-\\d{6}-[0-9a-f]{6}$")).match(QString::fromStdString(id)).hasMatch(), id.c_str());
    QVERIFY(new_run_id() != new_run_id() || new_run_id() != new_run_id());
    QCOMPARE(join_remote_path("", "moebench-runs/x"), std::string("moebench-runs/x"));
    QCOMPARE(join_remote_path("~", "moebench-runs/x"), std::string("~/moebench-runs/x"));
    QCOMPARE(join_remote_path("/", "moebench-runs/x"), std::string("/moebench-runs/x"));
    QCOMPARE(join_remote_path("runs dir//", "moebench-runs/x"), std::string("runs dir/moebench-runs/x"));
    QCOMPARE(quote_remote_path(join_remote_path("~", "moebench-runs/x")), std::string("~/'moebench-runs/x'"));
  }
};

QTEST_APPLESS_MAIN(TestRemoteShell)
#include "tst_remote_shell.moc"
