// ctest-labels: unit mpi
// `moebench bench overlap` through the built CLI on 4 MPI ranks: with parallel.tp = 2 it runs
// monta's levels on TP groups of 2 (the same tokens) and EP groups across them, one row each,
// with the overlap and of_bound columns, under [emulate] too. (Speed itself is never judged here: the rows only have to be there.)
#include <QtTest>

#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>

using namespace Qt::StringLiterals;

class TestBenchOverlap : public QObject {
  Q_OBJECT

  static QString run(const QStringList& sets) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(u"OMPI_ALLOW_RUN_AS_ROOT"_s, u"1"_s);
    env.insert(u"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"_s, u"1"_s);
    p.setProcessEnvironment(env);
    QStringList args{u"--oversubscribe"_s, u"--bind-to"_s, u"none"_s, u"-np"_s, u"4"_s, QStringLiteral(MOEBENCH_CLI),
                     u"bench"_s, u"overlap"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml"), u"-n"_s,
                     u"1"_s, u"-w"_s, u"0"_s};
    for (const QString& s : sets) args << u"--set"_s << s;
    p.start(QStringLiteral(MOEBENCH_MPIEXEC), args);
    if (!p.waitForFinished(240000)) {
      p.kill();
      p.waitForFinished();
      return u"timeout"_s;
    }
    const QString out = QString::fromUtf8(p.readAllStandardOutput()) + QString::fromUtf8(p.readAllStandardError());
    return p.exitCode() == 0 ? out : u"exit "_s + QString::number(p.exitCode()) + u"\n"_s + out;
  }

 private slots:
  void monta_levels_on_tp_groups() {
    const QStringList sets{u"run.ranks=4"_s, u"parallel.tp=2"_s, u"cluster.nodes=2"_s, u"strategy.name=monta"_s,
                           u"strategy.monta.chunks=2"_s, u"train.batch_size=4"_s};
    for (const QStringList& more : {QStringList{}, QStringList{u"emulate.cluster=" MOEBENCH_SOURCE_DIR
                                                               "/experiments/monta/monta_2x2.toml"_s,
                                                               u"emulate.time_scale=20"_s}}) {
      const QString out = run(sets + more);
      QVERIFY2(out.contains(u"tp = 2: EP groups of 2 ranks"_s), qPrintable(out));
      for (const QString& row : {u"monta baseline"_s, u"monta O1"_s, u"monta O2 N=2"_s, u"monta O3 N=2"_s}) {
        const QRegularExpression re(QRegularExpression::escape(row) + uR"(\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+\S+\s+\S+\n)"_s);
        QVERIFY2(re.match(out).hasMatch(), qPrintable(row + u"\n"_s + out));
      }
      QCOMPARE(out.contains(u"emulated cluster monta_2x2"_s), !more.isEmpty());
    }
  }
};

QTEST_GUILESS_MAIN(TestBenchOverlap)
#include "tst_bench_overlap.moc"
