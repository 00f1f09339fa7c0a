// ctest-labels: gui slow
// The launcher's remote path for real, through the command line's `moebench launch` (the GUI
// runs the same code path): the config and the files it names are uploaded by scp into a new run
// folder on "a remote host" (the remote side never reads the local files),
// ssh -tt runs `moebench run` on the uploaded copy, and the run is imported into the local store
// the GUI shows, beside the runs already there; cancel stops the remote run (KILLED in the local
// store); a refusing host is named and nothing runs. The "host" is a real sshd
// (tests/ssh_test_host.h): a host in a network namespace with its own address, host name and sshd
// daemon, or where namespaces cannot be made, an sshd started per connection through ssh's
// ProxyCommand. Needs openssh-server and openssh-client; skipped (with the reason) where they are
// not installed.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "models/launchcommand.h"
#include "models/launchsession.h"
#include "moebench/store/run_store.h"
#include "ssh_test_host.h"

using moebench::RunStatus;
using moebench::RunStore;
using moebench::gui::LaunchSession;
using moebench::gui::LaunchSpec;

namespace {
constexpr int kRunTimeoutMs = 180000;
const QString kRemoteDir = QStringLiteral("remote dir; 'x' $(touch PWNED)");
const QString kLocalDir = QStringLiteral("local dir; \"l\" $(touch PWNED3)");  // where the configs are edited
const QString kConfig = QStringLiteral("cfg; `touch PWNED2`.toml");

QStringList strings(const QSignalSpy& spy, int arg = 0) {
  QStringList out;
  for (const auto& call : spy) out << call.at(arg).toString();
  return out;
}
}  // namespace

class TestLaunchRemote : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  moebench::test::SshTestHost m_host;

  // A remote-run spec: the local config kLocalDir/kConfig (uploaded into a run folder under
  // kRemoteDir), the run imported into the local store `local`.
  LaunchSpec spec(const QString& local) const {
    LaunchSpec s;
    s.remote = true;
    s.moebenchPath = QStringLiteral(MOEBENCH_CLI);
    s.host = m_host.host;
    for (const QString& o : m_host.options) s.sshOptions += QStringLiteral("-o ") + moebench::gui::shellQuote(o) + QLatin1Char(' ');
    s.remoteDir = m_tmp.filePath(kRemoteDir);
    s.remoteMoebench = QStringLiteral(MOEBENCH_CLI);
    s.configPath = m_tmp.filePath(kLocalDir + QLatin1Char('/') + kConfig);
    s.localDbPath = local;
    return s;
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    QString skip;
    const QString problem = m_host.setUp(m_tmp.path(), &skip, QStringLiteral("lgui"));
    qInfo().noquote() << "the host:" << m_host.kind;
    if (!skip.isEmpty()) QSKIP(qPrintable(skip));
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    // The "remote" working directory, empty, and the local one with the config.
    QVERIFY(QDir().mkpath(m_tmp.filePath(kRemoteDir)));
    QVERIFY(QDir().mkpath(m_tmp.filePath(kLocalDir)));
    QVERIFY(QFile::copy(QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml"),
                        m_tmp.filePath(kLocalDir + QLatin1Char('/') + kConfig)));
  }

  // The run lands in the local store the GUI shows, beside the run already there.
  void remoteRunIsImported() {
    const QString local = m_tmp.filePath(QStringLiteral("local store; 'x'.db"));
    QCOMPARE(moebench::test::run_cli_into_db({"run", QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml"), "--steps", "2",
                                              "--out", "here", "--set", "run.name=here"},
                                             local, m_tmp.path()),
             0);
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy progress(&session, &LaunchSession::progress);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(spec(local)));
    QVERIFY2(session.command().arguments.first() == QLatin1String("launch"), qPrintable(session.command().arguments.join(' ')));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    const QString log = strings(lines).join('\n');
    QVERIFY2(finished.at(0).at(1).toString() == QLatin1String("finished"), qPrintable(log));
    QCOMPARE(finished.at(0).at(0).toInt(), 0);
    QCOMPARE(finished.at(0).at(2).toString(), local);
    QVERIFY(!progress.isEmpty());
    QCOMPARE(progress.last().at(0).toInt(), 12);
    QVERIFY2(!log.contains(QLatin1Char('\r')), qPrintable(log));
    RunStore store(local.toStdString(), RunStore::Mode::read_only);
    const auto runs = store.list_runs();
    QCOMPARE(runs.size(), size_t(2));
    QCOMPARE(runs[0].name, std::string("here"));
    QCOMPARE(runs[1].status, RunStatus::finished);
    QCOMPARE(QString::fromStdString(runs[1].host), m_host.hostname);  // recorded on the host
    QCOMPARE(store.metrics(runs[1].id, "loss").size(), size_t(12));
    QVERIFY2(log.contains(QStringLiteral("added run 2 (%1 'run') into %2: FINISHED at step 12")
                              .arg(QString::fromStdString(runs[1].uuid.substr(0, 8)), local)),
             qPrintable(log));
    // The config went to a run folder of its own, holding the run's own store, which is the
    // same run; nothing was injected anywhere.
    const QString folder = session.remoteRunPath();
    QVERIFY2(folder.startsWith(m_tmp.filePath(kRemoteDir + QStringLiteral("/moebench-runs/"))), qPrintable(folder));
    QVERIFY(QFileInfo(folder + QLatin1Char('/') + kConfig).isFile());
    QVERIFY(QFileInfo(folder + QStringLiteral("/out/checkpoints/step_000012")).isDir());
    RunStore there((folder + QStringLiteral("/runs.db")).toStdString(), RunStore::Mode::read_only);
    QCOMPARE(there.list_runs().at(0).uuid, runs[1].uuid);
    for (const QString& dir : {m_tmp.path(), m_tmp.filePath(kRemoteDir), m_tmp.filePath(kLocalDir), QDir::homePath()})
      for (const char* name : {"PWNED", "PWNED2", "PWNED3"})
        QVERIFY(!QFile::exists(dir + QLatin1Char('/') + QLatin1String(name)));
  }

  void cancelStopsTheRemoteRun() {
    const QString local = m_tmp.filePath(QStringLiteral("cancelled.db"));
    LaunchSpec s = spec(local);
    s.steps = 100000;
    LaunchSession session;
    session.setGracePeriod(60000);  // one stop request: the step and the checkpoint on a loaded machine
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy progress(&session, &LaunchSession::progress);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(s));
    QTRY_VERIFY_WITH_TIMEOUT(progress.count() > 0, kRunTimeoutMs);
    session.cancel();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QVERIFY2(finished.at(0).at(1).toString() == QLatin1String("killed"), qPrintable(strings(lines).join('\n')));
    QCOMPARE(finished.at(0).at(0).toInt(), 130);
    QCOMPARE(finished.at(0).at(2).toString(), local);
    RunStore copy(local.toStdString(), RunStore::Mode::read_only);
    const auto runs = copy.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, RunStatus::killed);
    QVERIFY(copy.metrics(runs[0].id, "loss").size() < 100000);
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
    LaunchSpec s = spec(local);
    s.configPath = configPath;
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(s));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    const QString log = strings(lines).join('\n');
    QVERIFY2(finished.at(0).at(1).toString() == QLatin1String("finished"), qPrintable(log));
    QVERIFY2(log.contains(QStringLiteral("moebench launch: uploading edited run.toml, my cluster.toml (cluster.file), "
                                         "corpus \"it's\".txt (data.path): scp ")),
             qPrintable(log));

    // The run folder on the host: the three files and the run's store, the config rewritten to
    // the files' names.
    const QString folder = session.remoteRunPath();
    QVERIFY2(folder.startsWith(m_tmp.filePath(kRemoteDir + QStringLiteral("/moebench-runs/"))), qPrintable(folder));
    QCOMPARE(QDir(folder).entryList(QDir::Files | QDir::NoDotAndDotDot, QDir::Name),
             (QStringList{QStringLiteral("corpus \"it's\".txt"), QStringLiteral("edited run.toml"),
                          QStringLiteral("my cluster.toml"), QStringLiteral("runs.db")}));
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

    // The local store: the edited run, read from the uploaded copies.
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

  // A host that refuses the connection: ssh's own message and the launch's note naming the step
  // and the host in the log, "could not start", nothing uploaded, the local store not created.
  void refusingHostIsNamed() {
    LaunchSpec s = spec(m_tmp.filePath(QStringLiteral("refused.db")));
    s.sshOptions = QStringLiteral("-o ProxyCommand=false -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null");
    LaunchSession session;
    QSignalSpy lines(&session, &LaunchSession::outputLine);
    QSignalSpy finished(&session, &LaunchSession::finished);
    QVERIFY(session.start(s));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    const QString folder = session.remoteRunPath();
    QVERIFY2(folder.startsWith(m_tmp.filePath(kRemoteDir + QStringLiteral("/moebench-runs/"))), qPrintable(folder));
    const QStringList log = strings(lines);
    QCOMPARE(finished.at(0).at(0).toInt(), 3);
    QCOMPARE(finished.at(0).at(1).toString(),
             QStringLiteral("could not start: could not create the run folder %1:%2 (ssh exit 255: the connection "
                            "to %1 failed); nothing ran").arg(m_host.host, folder));
    QVERIFY2(log.size() >= 3, qPrintable(log.join('\n')));  // the step, ssh's message(s), the note
    QVERIFY(!QFileInfo::exists(folder));
    QVERIFY(!QFileInfo::exists(m_tmp.filePath(QStringLiteral("refused.db"))));
  }
};

QTEST_GUILESS_MAIN(TestLaunchRemote)
#include "tst_launch_remote.moc"
