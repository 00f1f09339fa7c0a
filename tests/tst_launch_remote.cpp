// ctest-labels: gui slow
// The launcher's remote path for real: the config and the files it names are uploaded by scp
// into a new run folder on "a remote host" (another directory: the remote side never reads the
// local files), ssh -tt runs `moebench run` on the uploaded copy, the run database comes back
// by scp, cancel stops the remote run (KILLED in the fetched copy), a refusing host is named
// and nothing runs. The
// "host" is an sshd started per connection through ssh's ProxyCommand (`sshd -i`): real ssh,
// scp, pty and login shell, but no daemon and no port. Needs openssh-server and
// openssh-client; skipped (with the reason) where they are not installed.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "models/launchcommand.h"
#include "models/launchsession.h"
#include "moebench/store/run_store.h"

using moebench::RunStatus;
using moebench::RunStore;
using moebench::gui::LaunchSession;
using moebench::gui::LaunchSpec;

namespace {
constexpr int kRunTimeoutMs = 180000;
const QString kRemoteDir = QStringLiteral("remote dir; 'x' $(touch PWNED)");
const QString kLocalDir = QStringLiteral("local dir; \"l\" $(touch PWNED3)");  // where the configs are edited
const QString kConfig = QStringLiteral("cfg; `touch PWNED2`.toml");

bool run(const QString& program, const QStringList& args) {
  QProcess p;
  p.start(program, args);
  return p.waitForFinished(30000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

QStringList strings(const QSignalSpy& spy, int arg = 0) {
  QStringList out;
  for (const auto& call : spy) out << call.at(arg).toString();
  return out;
}
}  // namespace

class TestLaunchRemote : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  QString m_sshOptions;

  // A remote-run spec: the local config kLocalDir/kConfig (uploaded into a run folder under
  // kRemoteDir), the database fetched back to `local`, outputs under out/<out> (each test its
  // own: a run refuses another's).
  LaunchSpec spec(const QString& local, const QString& out = QStringLiteral("probe")) const {
    LaunchSpec s;
    s.remote = true;
    s.host = QStringLiteral("localhost");
    s.sshOptions = m_sshOptions;
    s.remoteDir = m_tmp.filePath(kRemoteDir);
    s.remoteMoebench = QStringLiteral(MOEBENCH_CLI);
    s.configPath = m_tmp.filePath(kLocalDir + QLatin1Char('/') + kConfig);
    s.sets = {QStringLiteral("run.out_dir=out/") + out};
    s.localDbPath = local;
    return s;
  }

 private slots:
  void initTestCase() {
    for (const char* tool : {"/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/scp", "/usr/bin/ssh-keygen"})
      if (!QFileInfo(QString::fromUtf8(tool)).isExecutable())
        QSKIP(qPrintable(QStringLiteral("%1 is not installed (openssh-server / openssh-client): the remote "
                                        "launch path is not exercised").arg(QString::fromUtf8(tool))));
    QVERIFY(m_tmp.isValid());
    if (geteuid() == 0 && !QFileInfo::exists(QStringLiteral("/run/sshd")))
      QVERIFY(QDir().mkpath(QStringLiteral("/run/sshd")));  // sshd's privilege separation directory
    const QString hostKey = m_tmp.filePath(QStringLiteral("host_key"));
    const QString clientKey = m_tmp.filePath(QStringLiteral("client_key"));
    for (const QString& key : {hostKey, clientKey})
      QVERIFY(run(QStringLiteral("ssh-keygen"), {"-q", "-t", "ed25519", "-N", "", "-f", key}));
    QVERIFY(QFile::copy(clientKey + QStringLiteral(".pub"), m_tmp.filePath(QStringLiteral("authorized_keys"))));
    const QString config = m_tmp.filePath(QStringLiteral("sshd_config"));
    QFile f(config);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QStringLiteral("HostKey %1\nAuthorizedKeysFile %2\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
                           "KbdInteractiveAuthentication no\nPermitRootLogin yes\nPidFile none\nLogLevel ERROR\n")
                .arg(hostKey, m_tmp.filePath(QStringLiteral("authorized_keys")))
                .toUtf8());
    f.close();
    m_sshOptions = QStringLiteral("-o 'ProxyCommand=/usr/sbin/sshd -i -f %1' -o StrictHostKeyChecking=no "
                                  "-o UserKnownHostsFile=/dev/null -o IdentityFile=%2 -o LogLevel=ERROR")
                       .arg(config, clientKey);
    // The "remote" working directory, empty, and the local one with the config.
    QVERIFY(QDir().mkpath(m_tmp.filePath(kRemoteDir)));
    QVERIFY(QDir().mkpath(m_tmp.filePath(kLocalDir)));
    QVERIFY(QFile::copy(QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml"),
                        m_tmp.filePath(kLocalDir + QLatin1Char('/') + kConfig)));
    // The connection itself works (else every test below would fail for the same reason).
    LaunchSpec probe = spec({});
    QProcess ssh;
    const auto c = moebench::gui::buildRemoteCommand(probe);
    QStringList args = c.arguments;
    args.last() = QStringLiteral("echo connected");
    ssh.start(c.program, args);
    QVERIFY(ssh.waitForFinished(30000));
    QVERIFY2(ssh.readAllStandardOutput().contains("connected"), ssh.readAllStandardError().constData());
  }

  void remoteRunIsFetchedBack() {
    const QString local = m_tmp.filePath(QStringLiteral("local copy; 'x'.db"));
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy progress(&session, &LaunchSession::progress);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(spec(local, QStringLiteral("fetch"))));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    const QString log = strings(lines).join('\n');
    QVERIFY2(finished.at(0).at(1).toString() == QLatin1String("finished"), qPrintable(log));
    QCOMPARE(finished.at(0).at(0).toInt(), 0);
    QCOMPARE(finished.at(0).at(2).toString(), local);
    QVERIFY(!progress.isEmpty());
    QCOMPARE(progress.last().at(0).toInt(), 12);
    RunStore copy(local.toStdString(), RunStore::Mode::read_only);
    const auto runs = copy.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, RunStatus::finished);
    QCOMPARE(copy.metrics(runs[0].id, "loss").size(), size_t(12));
    // The config went to a run folder of its own, the run ran in the remote directory, and
    // nothing was injected anywhere.
    const QString folder = session.remoteRunPath();
    QVERIFY2(folder.startsWith(m_tmp.filePath(kRemoteDir + QStringLiteral("/moebench-runs/"))), qPrintable(folder));
    QVERIFY(QFileInfo(folder + QLatin1Char('/') + kConfig).isFile());
    QVERIFY(QFileInfo(m_tmp.filePath(kRemoteDir + QStringLiteral("/out/fetch"))).isDir());
    for (const QString& dir : {m_tmp.path(), m_tmp.filePath(kRemoteDir), m_tmp.filePath(kLocalDir), QDir::homePath()})
      for (const char* name : {"PWNED", "PWNED2", "PWNED3"})
        QVERIFY(!QFile::exists(dir + QLatin1Char('/') + QLatin1String(name)));
  }

  void cancelStopsTheRemoteRun() {
    const QString local = m_tmp.filePath(QStringLiteral("cancelled.db"));
    LaunchSpec s = spec(local, QStringLiteral("cancel"));
    s.steps = 100000;
    s.db = QStringLiteral("cancel.db");
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy progress(&session, &LaunchSession::progress);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(s));
    QTRY_VERIFY_WITH_TIMEOUT(progress.count() > 0, kRunTimeoutMs);
    session.cancel();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QVERIFY2(finished.at(0).at(1).toString() == QLatin1String("killed"), qPrintable(strings(lines).join('\n')));
    RunStore copy(local.toStdString(), RunStore::Mode::read_only);
    const auto runs = copy.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, RunStatus::killed);
    QVERIFY(copy.metrics(runs[0].id, "loss").size() < 100000);
  }

  void sharedPathNeedsNoCopy() {
    LaunchSpec s = spec({}, QStringLiteral("shared"));
    s.remoteDb = LaunchSpec::RemoteDb::shared;
    s.db = m_tmp.filePath(QStringLiteral("shared.db"));  // the same file system here
    s.steps = 2;
    LaunchSession session;
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(s));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("finished"));
    QCOMPARE(finished.at(0).at(2).toString(), s.db);
    RunStore store(s.db.toStdString(), RunStore::Mode::read_only);
    QCOMPARE(store.list_runs().size(), size_t(1));
  }

  // The edited config is what runs: a config in a folder of its own here, naming a cluster file
  // and a text corpus in other local folders by relative paths, runs on the host from the
  // uploaded copies (the run folder holds all three; the fetched run has the edited name, step
  // count, cluster and corpus, each path inside the run folder), the local files untouched.
  void uploadedConfigRunsOnTheHost() {
    const QString edited = m_tmp.filePath(QStringLiteral("edited here; 'e'"));
    QVERIFY(QDir().mkpath(edited + QStringLiteral("/configs")));
    QVERIFY(QDir().mkpath(edited + QStringLiteral("/clusters dir")));
    auto write = [](const QString& path, const QByteArray& text) {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(text);
    };
    QFile tiny(QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml"));
    QVERIFY(tiny.open(QIODevice::ReadOnly));
    QByteArray config = tiny.readAll();
    config.replace("vocab_size = 32", "vocab_size = 256");  // byte tokens of a text corpus
    config.replace("steps = 12", "steps = 5");
    config.replace("[data]\n", "[data]\nsource = \"text\"\npath = \"corpus \\\"it's\\\".txt\"\n");
    config.replace("[run]\n", "[run]\nname = \"edited 'remote' run\"\n");
    config += "[cluster]\nfile = \"../clusters dir/my cluster.toml\"\n";
    const QString configPath = edited + QStringLiteral("/configs/edited run.toml");
    write(configPath, config);
    write(edited + QStringLiteral("/clusters dir/my cluster.toml"), "[cluster]\nname = \"uploaded cluster\"\n");
    QByteArray corpus;
    for (int i = 0; i < 400; ++i) corpus += "the quick brown fox " + QByteArray::number(i) + " jumps over the lazy dog\n";
    write(edited + QStringLiteral("/configs/corpus \"it's\".txt"), corpus);

    const QString local = m_tmp.filePath(QStringLiteral("edited.db"));
    LaunchSpec s = spec(local, QStringLiteral("edited"));
    s.configPath = configPath;
    s.db = QStringLiteral("edited.db");  // (runs.db on the host holds the other tests' runs)
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(s));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    const QString log = strings(lines).join('\n');
    QVERIFY2(finished.at(0).at(1).toString() == QLatin1String("finished"), qPrintable(log));
    QVERIFY2(log.contains(QStringLiteral("moebench-gui: uploading edited run.toml, my cluster.toml (cluster.file), "
                                         "corpus \"it's\".txt (data.path): scp ")),
             qPrintable(log));

    // The run folder on the host: the three files, the config rewritten to their names.
    const QString folder = session.remoteRunPath();
    QVERIFY2(folder.startsWith(m_tmp.filePath(kRemoteDir + QStringLiteral("/moebench-runs/"))), qPrintable(folder));
    QCOMPARE(QDir(folder).entryList(QDir::Files | QDir::NoDotAndDotDot, QDir::Name),
             (QStringList{QStringLiteral("corpus \"it's\".txt"), QStringLiteral("edited run.toml"),
                          QStringLiteral("my cluster.toml")}));
    for (const QString& name : QDir(folder).entryList(QDir::Files))
      QVERIFY2(!QFileInfo(folder + QLatin1Char('/') + name).isSymLink(), qPrintable(name));  // copies, not links
    QFile uploaded(folder + QStringLiteral("/edited run.toml"));
    QVERIFY(uploaded.open(QIODevice::ReadOnly));
    const QByteArray uploadedText = uploaded.readAll();
    QVERIFY2(uploadedText.contains("file = \"my cluster.toml\"\n"), uploadedText.constData());
    QVERIFY2(uploadedText.contains("path = \"corpus \\\"it's\\\".txt\"\n"), uploadedText.constData());
    QFile cluster(folder + QStringLiteral("/my cluster.toml"));
    QVERIFY(cluster.open(QIODevice::ReadOnly));
    QCOMPARE(cluster.readAll(), QByteArray("[cluster]\nname = \"uploaded cluster\"\n"));
    QFile original(configPath);
    QVERIFY(original.open(QIODevice::ReadOnly));
    QCOMPARE(original.readAll(), config);  // the local config is not changed

    // The fetched store: the edited run, read from the uploaded copies.
    RunStore copy(local.toStdString(), RunStore::Mode::read_only);
    const auto runs = copy.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, RunStatus::finished);
    QCOMPARE(runs[0].name, std::string("edited 'remote' run"));
    QCOMPARE(copy.metrics(runs[0].id, "loss").size(), size_t(5));
    const auto json = nlohmann::json::parse(runs[0].config_json);
    QCOMPARE(json["cluster"]["name"].get<std::string>(), std::string("uploaded cluster"));
    QCOMPARE(QString::fromStdString(json["cluster"]["file"].get<std::string>()), folder + QStringLiteral("/my cluster.toml"));
    QCOMPARE(QString::fromStdString(json["data"]["path"].get<std::string>()), folder + QStringLiteral("/corpus \"it's\".txt"));
    QCOMPARE(json["train"]["steps"].get<int>(), 5);
  }

  // A host that refuses the connection: ssh's own message and one note naming the step in the
  // log, "could not start", nothing uploaded.
  void refusingHostIsNamed() {
    LaunchSpec s = spec(m_tmp.filePath(QStringLiteral("refused.db")), QStringLiteral("refused"));
    s.sshOptions = QStringLiteral("-o ProxyCommand=false -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null");
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(s));
    const QString folder = session.remoteRunPath();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    const QStringList log = strings(lines);
    QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("could not start: ssh to localhost failed (exit 255; see the log)"));
    QVERIFY2(log.size() >= 3, qPrintable(log.join('\n')));  // the step, ssh's message(s), the note
    QVERIFY2(log.last().startsWith(QStringLiteral("moebench-gui: could not create the run folder moebench-runs/")) &&
                 log.last().endsWith(QStringLiteral(" on localhost (ssh exit 255: the connection failed); the run was not started")),
             qPrintable(log.join('\n')));
    QVERIFY(!QFileInfo::exists(folder));
    QVERIFY(!QFileInfo::exists(m_tmp.filePath(QStringLiteral("refused.db"))));
  }
};

QTEST_GUILESS_MAIN(TestLaunchRemote)
#include "tst_launch_remote.moc"
