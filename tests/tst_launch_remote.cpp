// ctest-labels: gui slow
// The launcher's remote path for real: ssh -tt runs `moebench run` on "a remote host", the run
// database comes back by scp, cancel stops the remote run (KILLED in the fetched copy). The
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

  // A remote-run spec: the config in kRemoteDir (relative to it), the database fetched back
  // to `local`, outputs under out/<out> (each test its own: a run refuses another's).
  LaunchSpec spec(const QString& local, const QString& out = QStringLiteral("probe")) const {
    LaunchSpec s;
    s.remote = true;
    s.host = QStringLiteral("localhost");
    s.sshOptions = m_sshOptions;
    s.remoteDir = m_tmp.filePath(kRemoteDir);
    s.remoteMoebench = QStringLiteral(MOEBENCH_CLI);
    s.configPath = kConfig;
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
    // The "remote" working directory with the config in it.
    QVERIFY(QDir().mkpath(m_tmp.filePath(kRemoteDir)));
    QVERIFY(QFile::copy(QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml"),
                        m_tmp.filePath(kRemoteDir + QLatin1Char('/') + kConfig)));
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
    // The remote side ran in the remote directory, and nothing was injected anywhere.
    QVERIFY(QFileInfo(m_tmp.filePath(kRemoteDir + QStringLiteral("/out/fetch"))).isDir());
    for (const QString& dir : {m_tmp.path(), m_tmp.filePath(kRemoteDir), QDir::homePath()})
      for (const char* name : {"PWNED", "PWNED2"}) QVERIFY(!QFile::exists(dir + QLatin1Char('/') + QLatin1String(name)));
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
};

QTEST_GUILESS_MAIN(TestLaunchRemote)
#include "tst_launch_remote.moc"
