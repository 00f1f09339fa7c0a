// ctest-labels: unit slow
// `moebench launch HOST CONFIG` against a real sshd (tests/ssh_test_host.h): the config and the
// files it names go to a new run folder on the host (the remote side reads only the copies), the
// run's output streams back, the run folder's store is imported into the local store (every row
// of the run as the host recorded it); Ctrl-C reaches the remote run (KILLED, exit 130, imported);
// bad input is refused before any connection with one message and exit 2 (1 for a damaged local
// store); a failed ssh step is exit 3 naming the step and the host, the local store unchanged.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "moebench/store/run_store.h"
#include "ssh_test_host.h"
#include "store_support.h"

using moebench::RunInfo;
using moebench::RunStatus;
using moebench::RunStore;
using moebench::test::CliResult;
using moebench::test::read_bytes;
using moebench::test::run_cli;

namespace {
const QString kRemoteDir = QStringLiteral("remote dir; 'x' $(touch PWNED)");
const QString kLocalDir = QStringLiteral("local dir; \"l\" $(touch PWNED3)");
const QString kConfig = QStringLiteral("cfg; `touch PWNED2`.toml");

void write(const QString& path, const QByteArray& text) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(text);
}

QStringList runFolders(const QString& remote) {
  return QDir(remote + QStringLiteral("/moebench-runs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
}
}  // namespace

class TestCliLaunch : public QObject {
  Q_OBJECT
  QTemporaryDir m_tmp;
  moebench::test::SshTestHost m_host;

  QString remote() const { return m_tmp.filePath(kRemoteDir); }
  QString local() const { return m_tmp.filePath(kLocalDir); }

  // moebench launch HOST CONFIG --dir <remote> --remote-moebench <this build> [ssh options] extra...
  QStringList launchArgs(const QString& config, const QStringList& extra) const {
    return QStringList{"launch", m_host.host, config, "--dir", remote(), "--remote-moebench", QStringLiteral(MOEBENCH_CLI)} +
           m_host.launchOptions() + extra;
  }
  CliResult launch(const QString& config, const QStringList& extra) const {
    return run_cli(launchArgs(config, extra), local());
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    QString skip;
    const QString problem = m_host.setUp(m_tmp.path(), &skip, QStringLiteral("lcli"));
    qInfo().noquote() << "the host:" << m_host.kind;
    if (!skip.isEmpty()) QSKIP(qPrintable(skip));
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    QVERIFY(QDir().mkpath(remote()));
    QVERIFY(QDir().mkpath(local()));
    QVERIFY(QFile::copy(QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml"), local() + QLatin1Char('/') + kConfig));
  }

  // A config naming a cluster file and a text corpus in other local folders runs on the host from
  // the uploaded copies; the run comes back into the local store with every row the host wrote.
  void runsOnTheHostAndComesBack() {
    QVERIFY(QDir().mkpath(local() + QStringLiteral("/configs")));
    QVERIFY(QDir().mkpath(local() + QStringLiteral("/clusters dir")));
    QFile tiny(QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml"));
    QVERIFY(tiny.open(QIODevice::ReadOnly));
    QByteArray config = tiny.readAll();
    config.replace("vocab_size = 32", "vocab_size = 256");
    config.replace("[data]\n", "[data]\nsource = \"text\"\npath = \"corpus \\\"it's\\\".txt\"\n");
    config.replace("[run]\n", "[run]\nname = \"edited 'remote' run\"\n");
    config += "[cluster]\nfile = \"../clusters dir/my cluster.toml\"\n";
    write(local() + QStringLiteral("/configs/edited run.toml"), config);
    write(local() + QStringLiteral("/clusters dir/my cluster.toml"), "[cluster]\nname = \"uploaded cluster\"\n");
    QByteArray corpus;
    for (int i = 0; i < 400; ++i) corpus += "the quick brown fox " + QByteArray::number(i) + " jumps over the lazy dog\n";
    write(local() + QStringLiteral("/configs/corpus \"it's\".txt"), corpus);

    const CliResult r = launch(QStringLiteral("configs/edited run.toml"), {"--steps", "5", "--db", "local store.db"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    // The output streamed back (without the remote terminal's \r), then the import.
    QVERIFY2(r.out.contains("step 5/5 | loss ") && !r.out.contains('\r'), qPrintable(r.out));
    QVERIFY2(r.out.contains(QRegularExpression(
                 "\nadded run 1 \\([0-9a-f]{8} 'edited 'remote' run'\\) into local store.db: FINISHED at step 5\n$")),
             qPrintable(r.out));
    QVERIFY2(r.err.contains("moebench launch: uploading edited run.toml, my cluster.toml (cluster.file), "
                            "corpus \"it's\".txt (data.path): scp "),
             qPrintable(r.err));

    // The run folder: the three files (copies), the config rewritten to their names, the store.
    const QStringList folders = runFolders(remote());
    QCOMPARE(folders.size(), 1);
    QVERIFY2(QRegularExpression("^\\d{8}-\\d{6}-[0-9a-f]{6}$").match(folders[0]).hasMatch(), qPrintable(folders[0]));
    const QString folder = remote() + QStringLiteral("/moebench-runs/") + folders[0];
    QVERIFY2(r.err.contains("moebench launch: the run folder stays on the host: " + m_host.host + ":" + folder + "\n"), qPrintable(r.err));
    QCOMPARE(QDir(folder).entryList(QDir::Files, QDir::Name),
             (QStringList{"corpus \"it's\".txt", "edited run.toml", "my cluster.toml", "runs.db"}));
    for (const QString& name : QDir(folder).entryList(QDir::Files)) QVERIFY2(!QFileInfo(folder + "/" + name).isSymLink(), qPrintable(name));
    QVERIFY(QFileInfo(folder + QStringLiteral("/out/checkpoints/step_000005")).isDir());
    QFile uploaded(folder + QStringLiteral("/edited run.toml"));
    QVERIFY(uploaded.open(QIODevice::ReadOnly));
    const QByteArray uploadedText = uploaded.readAll();
    QVERIFY2(uploadedText.contains("file = \"my cluster.toml\"\n"), uploadedText.constData());

    // The local store holds the run as the host recorded it: the same uuid, metrics and config.
    const std::string localDb = (local() + QStringLiteral("/local store.db")).toStdString();
    RunStore here(localDb, RunStore::Mode::read_only);
    RunStore there((folder + QStringLiteral("/runs.db")).toStdString(), RunStore::Mode::read_only);
    const auto runs = here.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    const RunInfo theirs = there.list_runs().at(0);
    QCOMPARE(runs[0].uuid, theirs.uuid);
    QCOMPARE(runs[0].status, RunStatus::finished);
    QCOMPARE(QString::fromStdString(runs[0].host), m_host.hostname);  // recorded on the host, not here
    QCOMPARE(runs[0].config_json, theirs.config_json);
    QCOMPARE(here.metrics(runs[0].id).size(), there.metrics(theirs.id).size());
    QCOMPARE(here.spans(runs[0].id).size(), there.spans(theirs.id).size());
    QCOMPARE(here.routing(runs[0].id).size(), there.routing(theirs.id).size());
    QCOMPARE(here.metrics(runs[0].id, "loss").size(), size_t(5));
    const auto json = nlohmann::json::parse(runs[0].config_json);
    QCOMPARE(json["cluster"]["name"].get<std::string>(), std::string("uploaded cluster"));
    QCOMPARE(QString::fromStdString(json["data"]["path"].get<std::string>()), folder + QStringLiteral("/corpus \"it's\".txt"));

    // A second launch: a run folder of its own, its run added beside the first.
    const CliResult again = launch(kConfig, {"--steps", "3", "--db", "local store.db"});
    QVERIFY2(again.code == 0, qPrintable(again.out + again.err));
    QVERIFY2(again.out.contains(QRegularExpression("\nadded run 2 \\([0-9a-f]{8} 'run'\\) into local store.db: FINISHED at step 3\n$")),
             qPrintable(again.out));
    QCOMPARE(runFolders(remote()).size(), 2);
    QCOMPARE(RunStore(localDb, RunStore::Mode::read_only).list_runs().size(), size_t(2));
    for (const QString& dir : {m_tmp.path(), remote(), local(), QDir::homePath()})
      for (const char* name : {"PWNED", "PWNED2", "PWNED3"}) QVERIFY(!QFile::exists(dir + QLatin1Char('/') + QLatin1String(name)));
  }

  // Ctrl-C to `moebench launch` reaches the remote run through its terminal: it finishes its step,
  // checkpoints, is marked KILLED; the launch fetches it and exits 130. SIGTERM does the same. A
  // second request (the GUI's escalation) ends the remote run at once: still KILLED, fetched and
  // imported (the fetch ends only on a request made while it runs).
  void stopReachesTheRemoteRun() {
    for (const QList<int>& sigs : {QList<int>{SIGINT}, QList<int>{SIGTERM}, QList<int>{SIGTERM, SIGTERM}}) {
      const bool twice = sigs.size() == 2;
      const QString db = QStringLiteral("stopped %1x%2.db").arg(sigs.front()).arg(sigs.size());
      // Twice: steps of seconds (2.7 s here), so the second request comes while the run finishes its step.
      const QStringList slow{"--set", "model.hidden=768", "--set", "model.seq_len=128", "--set", "train.batch_size=64"};
      const int after = twice ? 2 : 20;
      QProcess p;
      p.setWorkingDirectory(local());
      p.start(QStringLiteral(MOEBENCH_CLI), launchArgs(kConfig, QStringList{"--steps", "100000", "--db", db} + (twice ? slow : QStringList{})));
      QByteArray out;
      QTRY_VERIFY_WITH_TIMEOUT(QString::fromUtf8(out += p.readAllStandardOutput())
                                   .contains(QRegularExpression(QStringLiteral("step +%1/100000").arg(after))),
                               120000);
      for (int i = 0; i < sigs.size(); ++i) {
        if (i) QTest::qWait(700);  // a separate request, not one that arrives with the first
        QVERIFY2(p.state() == QProcess::Running, "the run ended before the second stop request");
        ::kill(pid_t(p.processId()), sigs[i]);
      }
      QVERIFY(p.waitForFinished(60000));
      out += p.readAllStandardOutput();
      const QString err = QString::fromUtf8(p.readAllStandardError());
      QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 130,
               qPrintable(QStringLiteral("exit %1 (%2)\n").arg(p.exitCode()).arg(int(p.exitStatus())) + QString::fromUtf8(out) + err));
      if (!twice) QVERIFY2(out.contains("stopped by signal after "), out.constData());
      QVERIFY2(out.contains("KILLED at step "), qPrintable(QString::fromUtf8(out) + err));
      RunStore store((local() + QLatin1Char('/') + db).toStdString(), RunStore::Mode::read_only);
      const auto runs = store.list_runs();
      QCOMPARE(runs.size(), size_t(1));
      QCOMPARE(runs[0].status, RunStatus::killed);
      const size_t steps = store.metrics(runs[0].id, "loss").size();
      QVERIFY(steps >= size_t(after) && steps < 100000);
    }
  }

  // Every bad input: one message naming it, exit 2 (a damaged local store: 1), before any
  // connection: no run folder, no local store created.
  void badInputIsRefusedBeforeConnecting() {
    write(local() + QStringLiteral("/missing cluster.toml"), "[cluster]\nfile = \"nowhere.toml\"\n");
    write(local() + QStringLiteral("/damaged.db"), "not a database at all");
    const QString damaged = local() + QStringLiteral("/damaged.db");
    const QByteArray damagedBytes = QByteArray::fromStdString(read_bytes(damaged.toStdString()));
    const int before = runFolders(remote()).size();
    const struct {
      QStringList args;
      int code;
      QString message;
    } cases[] = {
        {{"launch", "--db", "fresh.db", "--", "-oProxyCommand=touch PWNED", kConfig}, 2, "moebench: launch: remote host must not start with '-': '-oProxyCommand=touch PWNED'\n"},
        {launchArgs(kConfig, {"--ssh-option", "Port"}), 2, "moebench: launch: ssh option 'Port' is not Key=Value (one ssh -o option, e.g. Port=2222 or ProxyJump=gw)\n"},
        {launchArgs(kConfig, {"--prefix", "mpirun -np 2; touch PWNED"}), 2,
         "moebench: launch: launcher prefix contains the shell metacharacter ';'; only plain words and simple '...' or \"...\" quoting are allowed\n"},
        {launchArgs("nope.toml", {}), 2, "moebench: launch: config file nope.toml: not found\n"},
        {launchArgs("missing cluster.toml", {}), 2,
         "moebench: launch: cannot upload the config missing cluster.toml: cluster.file: file not found: " + local() + "/nowhere.toml (missing cluster.toml)\n"},
        {launchArgs(kConfig, {"--db", "no such folder/x.db"}), 2, "moebench: the local store (--db) "},
        {launchArgs(kConfig, {"--db", "damaged.db"}), 1, "moebench: damaged.db is not a moebench run database (file is not a database)\n"},
    };
    for (const auto& c : cases) {
      const CliResult r = run_cli(c.args + QStringList{"--db", "fresh.db"}.mid(c.args.contains("--db") ? 2 : 0), local());
      QVERIFY2(r.code == c.code, qPrintable(c.args.join(' ') + " -> " + QString::number(r.code) + ": " + r.err));
      QVERIFY2(r.err.startsWith(c.message) && r.err.count('\n') <= 2, qPrintable(r.err));
      QVERIFY2(!r.err.contains("moebench launch: creating"), qPrintable(r.err));
    }
    QCOMPARE(runFolders(remote()).size(), before);
    QVERIFY(!QFile::exists(local() + QStringLiteral("/fresh.db")));
    QCOMPARE(QByteArray::fromStdString(read_bytes(damaged.toStdString())), damagedBytes);
  }

  // A failed step of the launch itself: exit 3, the step and the host named, the local store
  // not created; a config the remote run refuses: its exit 2, nothing imported.
  void failedStepsAreNamed() {
    const QString db = local() + QStringLiteral("/untouched.db");
    {
      const CliResult r = run_cli({"launch", "localhost", kConfig, "--ssh-option", "ProxyCommand=false", "--ssh-option",
                                   "StrictHostKeyChecking=no", "--db", "untouched.db"},
                                  local());
      QVERIFY2(r.code == 3, qPrintable(r.err));
      QVERIFY2(r.err.contains(QRegularExpression("moebench launch: could not create the run folder localhost:moebench-runs/"
                                                 "\\d{8}-\\d{6}-[0-9a-f]{6} \\(ssh exit 255: the connection to localhost "
                                                 "failed\\); nothing ran\n$")),
               qPrintable(r.err));
    }
    {
      QStringList args = launchArgs(kConfig, {"--db", "untouched.db"});
      args[args.indexOf("--remote-moebench") + 1] = QStringLiteral("/no/such/moebench");
      const CliResult r = run_cli(args, local());
      QVERIFY2(r.code == 3, qPrintable(r.err));
      QVERIFY2(r.err.endsWith("moebench launch: '/no/such/moebench' not found on " + m_host.host +
                              " (remote exit 127); give its path with --remote-moebench\n"),
               qPrintable(r.err));
    }
    {
      const CliResult r = launch(kConfig, {"--set", "train.lr=-1", "--db", "untouched.db"});
      QVERIFY2(r.code == 2, qPrintable(r.out + r.err));
      QVERIFY2(r.out.contains("train.lr"), qPrintable(r.out));  // the remote run's message, streamed
      QVERIFY2(r.err.endsWith("moebench launch: the run refused its config or options on " + m_host.host +
                              " (exit 2, above); nothing was recorded\n"),
               qPrintable(r.err));
    }
    {
      // The run records nothing (store.enabled = false): the fetch finds no store.
      const CliResult r = launch(kConfig, {"--steps", "2", "--set", "store.enabled=false", "--db", "untouched.db"});
      QVERIFY2(r.code == 3, qPrintable(r.out + r.err));
      QVERIFY2(r.err.contains(QRegularExpression("moebench launch: fetching the run store " + m_host.host + ":.*/runs.db failed "
                                                 "\\(scp exit 1\\); untouched.db is unchanged, the store stays on the host")),
               qPrintable(r.err));
    }
    QVERIFY(!QFile::exists(db));
  }
};

QTEST_GUILESS_MAIN(TestCliLaunch)
#include "tst_cli_launch.moc"
