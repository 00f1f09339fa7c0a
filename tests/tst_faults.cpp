// ctest-labels: mpi slow
// Failure handling of a multi-rank `moebench run` (local ranks started through mpirun):
// an exception on one rank, or a rank killed with SIGKILL, ends every rank within 10 s with
// exit 1 and one line saying which rank failed and why (no mpirun banners); a stop signal or
// the launcher's own death (SIGKILL) ends mpirun and every rank within 10 s, for more ranks
// than the cores hold too; nothing hangs, nothing is left behind; the run shows FAILED.
#include <QtTest>

#include <QDir>
#include <QElapsedTimer>
#include <QProcess>

#include <QThread>

#include <csignal>

#include "moebench/store/run_store.h"
#include "test_support.h"

using namespace Qt::StringLiterals;

namespace {
QStringList run_args(const QString& out, int steps) {
  return {u"run"_s, QString::fromUtf8(moebench::test::tiny_config_path()), u"--ranks"_s, u"4"_s,
          u"--set"_s, u"cluster.nodes=2"_s, u"--set"_s, u"train.batch_size=8"_s, u"--set"_s,
          u"train.eval_every=0"_s, u"--steps"_s, QString::number(steps), u"--out"_s, out,
          u"--db"_s, out + u"/runs.db"_s};
}

QList<int> children_of(qint64 pid);

// pid and every process below it.
QList<int> tree_of(qint64 pid) {
  QList<int> out{int(pid)};
  for (int i = 0; i < out.size(); ++i) out += children_of(out[i]);
  return out;
}

// The processes of `pids` that still exist and are not zombies.
QList<int> alive(const QList<int>& pids) {
  QList<int> out;
  for (int p : pids) {
    QFile stat(u"/proc/%1/stat"_s.arg(p));
    if (!stat.open(QIODevice::ReadOnly)) continue;
    const QString s = QString::fromUtf8(stat.readAll());
    if (s.mid(s.lastIndexOf(u')') + 2, 1) != u"Z"_s) out << p;
  }
  return out;
}

// The world rank of a rank process (Open MPI puts it in the environment).
int world_rank_of(int pid) {
  QFile env(u"/proc/%1/environ"_s.arg(pid));
  if (!env.open(QIODevice::ReadOnly)) return -1;
  for (const QByteArray& kv : env.readAll().split('\0'))
    if (kv.startsWith("OMPI_COMM_WORLD_RANK=")) return kv.mid(21).toInt();
  return -1;
}

// Waits until the run prints a progress line containing `marker`.
bool wait_for_output(QProcess& p, const QString& marker, QString& out) {
  QElapsedTimer wait;
  wait.start();
  while (!out.contains(marker) && wait.elapsed() < 60000 && p.state() != QProcess::NotRunning) {
    p.waitForReadyRead(200);
    out += QString::fromUtf8(p.readAllStandardOutput());
  }
  return out.contains(marker);
}

// moebench -> guard -> mpirun -> ranks: the rank processes of a local launch.
QList<int> ranks_of(qint64 launcher) {
  const QList<int> guard = children_of(launcher);
  if (guard.size() != 1) return {};
  const QList<int> mpirun = children_of(guard[0]);
  if (mpirun.size() != 1) return {};
  return children_of(mpirun[0]);
}

// Child processes of pid.
QList<int> children_of(qint64 pid) {
  QList<int> out;
  for (const QString& entry : QDir(u"/proc"_s).entryList(QDir::Dirs)) {
    bool ok = false;
    const int p = entry.toInt(&ok);
    if (!ok) continue;
    QFile stat(u"/proc/%1/stat"_s.arg(p));
    if (!stat.open(QIODevice::ReadOnly)) continue;
    const QString s = QString::fromUtf8(stat.readAll());
    const QStringList f = s.mid(s.lastIndexOf(u')') + 2).split(u' ');
    if (f.size() > 1 && f[1].toLongLong() == pid) out << p;
  }
  return out;
}
}  // namespace

class TestFaults : public QObject {
  Q_OBJECT

 private slots:
  // data_centric: the failing rank holds one-sided windows, whose clean-up is collective (before:
  // it waited in the window's barrier while the others waited in the step's all-reduce, a hang).
  void exception_on_one_rank_ends_the_job_data() {
    QTest::addColumn<QString>("strategy");
    QTest::newRow("expert_centric") << u"expert_centric"_s;
    QTest::newRow("data_centric") << u"data_centric"_s;
  }
  void exception_on_one_rank_ends_the_job() {
    QFETCH(QString, strategy);
    QTemporaryDir dir;
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(u"MOEBENCH_FAULT"_s, u"1:3"_s);
    p.setProcessEnvironment(env);
    QString out;
    p.start(QStringLiteral(MOEBENCH_CLI),
            run_args(dir.path(), 200) + QStringList{u"--set"_s, u"strategy.name="_s + strategy});
    // The clock starts when the failing step is reached (start-up time is not part of the claim).
    QVERIFY2(wait_for_output(p, u" 2/200 |"_s, out), qPrintable(out + p.readAllStandardError()));
    QElapsedTimer timer;
    timer.start();
    QVERIFY2(p.waitForFinished(30000) || p.state() == QProcess::NotRunning, "the job hung after a rank failed");
    QVERIFY2(timer.elapsed() < 10000, qPrintable(u"the job ended %1 ms after the failure"_s.arg(timer.elapsed())));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 1);
    // One line, from the launcher; no rank's own copy, no mpirun banner.
    QCOMPARE(err, u"moebench: rank 1 of 4 failed: fault injected by MOEBENCH_FAULT at step 3\n"_s);
    // FAILED at once, ended at its last recorded step.
    moebench::RunStore store((dir.path() + u"/runs.db"_s).toStdString(), moebench::RunStore::Mode::read_only);
    const moebench::RunInfo run = store.list_runs().at(0);
    QCOMPARE(run.status, moebench::RunStatus::failed);
    const auto loss = store.metrics(run.id, "loss");
    QVERIFY(!loss.empty());
    QCOMPARE(run.end_time, loss.back().timestamp);
  }

  void killed_rank_ends_the_job() {
    QTemporaryDir dir;
    QProcess p;
    p.start(QStringLiteral(MOEBENCH_CLI), run_args(dir.path(), 1000000));  // runs until killed
    QString out;
    QVERIFY2(wait_for_output(p, u"3/1000000 |"_s, out), qPrintable(out + p.readAllStandardError()));
    const QList<int> ranks = ranks_of(p.processId());
    QVERIFY2(ranks.size() == 4, qPrintable(u"found %1 rank processes"_s.arg(ranks.size())));
    const QList<int> tree = tree_of(p.processId());
    const int victim = world_rank_of(ranks[2]);
    QVERIFY(victim >= 0);
    QElapsedTimer timer;
    timer.start();
    ::kill(ranks[2], SIGKILL);
    if (!p.waitForFinished(30000)) {
      p.kill();
      QFAIL("the job hung after a rank was killed");
    }
    QVERIFY2(timer.elapsed() < 10000, qPrintable(u"took %1 ms"_s.arg(timer.elapsed())));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 1);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(err, u"moebench: rank %1 of 4 died (signal 9, Killed)\n"_s.arg(victim));
    QVERIFY2(alive(tree).isEmpty(), "processes of the job outlived it");
    moebench::RunStore store((dir.path() + u"/runs.db"_s).toStdString(), moebench::RunStore::Mode::read_only);
    QCOMPARE(store.list_runs().at(0).status, moebench::RunStatus::failed);
  }

  // kill -9 of the launcher: its guard stops the ranks, and kills what is left after
  // run.stop_grace_s; nothing of the job survives 10 s.
  void launcher_death_ends_every_rank() {
    QTemporaryDir dir;
    QProcess p;
    p.start(QStringLiteral(MOEBENCH_CLI), run_args(dir.path(), 1000000));
    QString out;
    QVERIFY2(wait_for_output(p, u"3/1000000 |"_s, out), qPrintable(out + p.readAllStandardError()));
    const QList<int> tree = tree_of(p.processId());
    QVERIFY2(tree.size() == 7, qPrintable(u"expected launcher, guard, mpirun and 4 ranks, found %1"_s.arg(tree.size())));
    QElapsedTimer timer;
    timer.start();
    ::kill(int(p.processId()), SIGKILL);
    p.waitForFinished(5000);
    while (!alive(tree).isEmpty() && timer.elapsed() < 20000) QThread::msleep(100);
    QVERIFY2(alive(tree).isEmpty(), qPrintable(u"%1 processes still alive after 20 s"_s.arg(alive(tree).size())));
    QVERIFY2(timer.elapsed() < 10000, qPrintable(u"the job outlived its launcher by %1 ms"_s.arg(timer.elapsed())));
  }

  // More ranks than 8 per core (allowed with --oversubscribe-ok), stopped while they start:
  // every process is gone within 10 s of the signal, exit 130.
  void stop_during_a_large_launch() {
    QTemporaryDir dir;
    const int n = 8 * QThread::idealThreadCount() + 4;
    QStringList args = {u"run"_s, QString::fromUtf8(moebench::test::tiny_config_path()), u"--ranks"_s,
                        QString::number(n), u"--oversubscribe-ok"_s, u"--set"_s, u"cluster.nodes=1"_s,
                        u"--set"_s, u"moe.experts="_s + QString::number(n), u"--set"_s,
                        u"train.batch_size="_s + QString::number(n), u"--steps"_s, u"1000000"_s,
                        u"--out"_s, dir.path(), u"--db"_s, dir.path() + u"/runs.db"_s};
    QProcess p;
    p.start(QStringLiteral(MOEBENCH_CLI), args);
    QVERIFY(p.waitForStarted());
    QList<int> tree;
    QElapsedTimer wait;
    wait.start();
    while (wait.elapsed() < 3000) {  // collect the processes as mpirun starts them
      for (int pid : tree_of(p.processId()))
        if (!tree.contains(pid)) tree << pid;
      QThread::msleep(50);
    }
    QVERIFY2(tree.size() > 3, qPrintable(u"only %1 processes started"_s.arg(tree.size())));
    QElapsedTimer timer;
    timer.start();
    ::kill(int(p.processId()), SIGTERM);
    QVERIFY2(p.waitForFinished(20000), "the launcher did not end");
    while (!alive(tree).isEmpty() && timer.elapsed() < 20000) QThread::msleep(100);
    QVERIFY2(alive(tree).isEmpty(), qPrintable(u"%1 processes still alive"_s.arg(alive(tree).size())));
    QVERIFY2(timer.elapsed() < 10000, qPrintable(u"took %1 ms"_s.arg(timer.elapsed())));
    QCOMPARE(p.exitCode(), 130);
  }
};

QTEST_APPLESS_MAIN(TestFaults)
#include "tst_faults.moc"
