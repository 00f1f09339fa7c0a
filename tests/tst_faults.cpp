// ctest-labels: mpi slow
// Failure handling of a multi-rank `moebench run` (4 local ranks started through mpirun):
// an exception on one rank, or a rank killed with SIGKILL, ends every rank within 10 s with
// a non-zero exit and the failing rank's message; nothing hangs; the run shows FAILED.
#include <QtTest>

#include <QDir>
#include <QElapsedTimer>
#include <QProcess>

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
  void exception_on_one_rank_ends_the_job() {
    QTemporaryDir dir;
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(u"MOEBENCH_FAULT"_s, u"1:2"_s);
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(MOEBENCH_CLI), run_args(dir.path(), 200));
    // The clock starts when the failing rank reports (start-up time is not part of the claim).
    const QString failed = u"rank 1 of 4 failed: fault injected by MOEBENCH_FAULT at step 2"_s;
    QString err;
    QElapsedTimer wait;
    wait.start();
    while (!err.contains(failed) && wait.elapsed() < 60000 && p.state() != QProcess::NotRunning) {
      p.waitForReadyRead(100);
      err += QString::fromUtf8(p.readAllStandardError());
    }
    QElapsedTimer timer;
    timer.start();
    QVERIFY2(p.waitForFinished(30000) || p.state() == QProcess::NotRunning, "the job hung after a rank failed");
    err += QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(timer.elapsed() < 10000, qPrintable(u"the job ended %1 ms after the failure"_s.arg(timer.elapsed())));
    QVERIFY(p.exitCode() != 0 || p.exitStatus() != QProcess::NormalExit);
    QVERIFY2(err.contains(failed), qPrintable(err));
    // The run's process is gone (reaped, or a zombie where init does not reap): FAILED at once,
    // ended at its last recorded step.
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
    QElapsedTimer wait;
    wait.start();
    while (!out.contains(u"3/1000000 |"_s) && wait.elapsed() < 60000) {
      p.waitForReadyRead(1000);
      out += QString::fromUtf8(p.readAllStandardOutput());
    }
    QVERIFY2(out.contains(u"3/1000000 |"_s), qPrintable(out + QString::fromUtf8(p.readAllStandardError())));
    // moebench -> mpirun -> the 4 ranks
    const QList<int> launcher = children_of(p.processId());
    QVERIFY2(launcher.size() == 1, qPrintable(u"found %1 launcher processes"_s.arg(launcher.size())));
    const QList<int> ranks = children_of(launcher[0]);
    QVERIFY2(ranks.size() == 4, qPrintable(u"found %1 rank processes"_s.arg(ranks.size())));
    QElapsedTimer timer;
    timer.start();
    ::kill(ranks[2], SIGKILL);
    if (!p.waitForFinished(30000)) {
      p.kill();
      QFAIL("the job hung after a rank was killed");
    }
    QVERIFY2(timer.elapsed() < 10000, qPrintable(u"took %1 ms"_s.arg(timer.elapsed())));
    QVERIFY(p.exitCode() != 0 || p.exitStatus() != QProcess::NormalExit);
  }
};

QTEST_APPLESS_MAIN(TestFaults)
#include "tst_faults.moc"
