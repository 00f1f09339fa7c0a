// ctest-labels: unit
// MPI one-sided windows are opened only when a strategy pulls (dist/mpi_communicator.h,
// Communicator::enable_windows). The failure is forced with Open MPI's
// btl_vader_single_copy_mechanism = none, which leaves osc/rdma nothing to serve a window with
// between local processes: the same MPI_ERR_WIN that Open MPI 4.1 gave on a 1-GPU VM and in a
// singleton. Then every strategy that does not pull still trains; a pulling one stops before
// its first step with one message naming the block, the strategy and the setting to try
// (exit 2); that setting (osc/ucx) trains it. The benches that measure between ranks start
// their ranks themselves outside mpirun, as `run` does.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include "test_support.h"

using namespace Qt::StringLiterals;

namespace {

struct Result {
  int code;
  QString out, err;
};

Result run_with(const QStringList& args, const QStringList& env, int timeout_ms = 180000) {
  QProcess p;
  QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
  for (const QString& kv : env) e.insert(kv.section('=', 0, 0), kv.section('=', 1));
  p.setProcessEnvironment(e);
  p.start(QStringLiteral(MOEBENCH_CLI), args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    return {-1, {}, u"timeout"_s};
  }
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

const QString kNoSingleCopy = u"OMPI_MCA_btl_vader_single_copy_mechanism=none"_s;

QStringList tiny_run(const QTemporaryDir& dir, const QString& strategy) {
  return {u"run"_s, QString::fromUtf8(moebench::test::tiny_config_path()), u"--ranks"_s, u"2"_s, u"--set"_s,
          u"cluster.nodes=1"_s, u"--set"_s, u"cluster.devices_per_node=0"_s, u"--set"_s, u"train.steps=2"_s,
          u"--set"_s, u"train.eval_every=0"_s, u"--set"_s, u"store.enabled=false"_s, u"--set"_s,
          "strategy.name=" + strategy, u"--out"_s, dir.filePath(strategy)};
}

}  // namespace

class TestOneSidedWindows : public QObject {
  Q_OBJECT

 private slots:
  // Before: every process opened the window at start-up, so no strategy could train here.
  void strategies_that_do_not_pull_need_no_window_data() {
    QTest::addColumn<QString>("strategy");
    QTest::newRow("expert_centric") << u"expert_centric"_s;
    QTest::newRow("hier_a2a") << u"hier_a2a"_s;
  }
  void strategies_that_do_not_pull_need_no_window() {
    QFETCH(QString, strategy);
    QTemporaryDir dir;
    QStringList args = tiny_run(dir, strategy);
    if (strategy == u"hier_a2a"_s)  // two nodes of one rank
      args += QStringList{u"--set"_s, u"cluster.nodes=2"_s, u"--set"_s, u"cluster.devices_per_node=1"_s};
    const Result r = run_with(args, {kNoSingleCopy});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(!r.err.contains(u"MPI_Win"_s), qPrintable(r.err));
  }

  void a_pulling_strategy_says_what_to_try_once() {
    QTemporaryDir dir;
    const Result r = run_with(tiny_run(dir, u"data_centric"_s), {kNoSingleCopy});
    QVERIFY2(r.code == 2, qPrintable(r.out + r.err));
    const QString what = u"MoE block 1 runs data_centric, which needs one-sided windows: MPI one-sided windows are "
                         u"not available (MPI_Win_create_dynamic failed: MPI_ERR_WIN"_s;
    QVERIFY2(r.err.count(what) == 1, qPrintable(r.err));
    QVERIFY2(r.err.contains(u"export OMPI_MCA_osc=sm,ucx (mpirun --mca osc sm,ucx), and where UCX's shared memory fails "
                            u"too, UCX_TLS=self,tcp"_s),
             qPrintable(r.err));
    QVERIFY2(!r.out.contains(u"step 1"_s), qPrintable(r.out));  // stopped before training
  }

  // ... to the losses of the default one-sided component (where that one works).
  void the_setting_it_names_trains_it() {
    QTemporaryDir dir;
    const Result r = run_with(tiny_run(dir, u"data_centric"_s),
                              {kNoSingleCopy, u"OMPI_MCA_osc=sm,ucx"_s, u"UCX_TLS=self,tcp"_s});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QTemporaryDir dir2;
    const Result reference = run_with(tiny_run(dir2, u"data_centric"_s), {});
    QVERIFY2(reference.code == 0, qPrintable(reference.out + reference.err));
    const QString last = r.out.section(u"final train loss"_s, 1).section(u'|', 0, 0);
    QVERIFY2(!last.isEmpty() && last == reference.out.section(u"final train loss"_s, 1).section(u'|', 0, 0),
             qPrintable(r.out + reference.out));
  }

  // Outside mpirun, bench comm starts its ranks as run does (before: a 1-rank singleton that
  // could not even initialise).
  void bench_comm_starts_its_ranks() {
    const Result r = run_with({u"bench"_s, u"comm"_s, u"--ranks"_s, u"2"_s, u"--op"_s, u"alltoall"_s, u"-b"_s,
                               u"1K"_s, u"-e"_s, u"4K"_s, u"-f"_s, u"2"_s, u"-n"_s, u"2"_s, u"-w"_s, u"1"_s},
                              {});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains(u"# moebench bench comm: alltoall, backend mpi, 2 ranks"_s), qPrintable(r.out));
    QVERIFY2(r.out.contains(u"#  Rank  0 "_s) && r.out.contains(u"#  Rank  1 "_s), qPrintable(r.out));
    QVERIFY2(r.out.contains(u"# Out of bounds values : 0 OK"_s), qPrintable(r.out));  // every element checked
  }

  // bench overlap's data_centric case pulls: it enables the window itself, on every rank.
  void bench_overlap_starts_its_ranks_and_pulls() {
    const Result r = run_with({u"bench"_s, u"overlap"_s,
                               QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml"), u"--ranks"_s,
                               u"2"_s, u"--set"_s, u"cluster.nodes=1"_s, u"--set"_s, u"cluster.devices_per_node=0"_s,
                               u"--set"_s, u"model.hidden=32"_s, u"--set"_s, u"train.batch_size=4"_s, u"-n"_s,
                               u"1"_s, u"-w"_s, u"0"_s},
                              {});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains(u"2 rank(s)"_s) && r.out.contains(u"data_centric"_s), qPrintable(r.out));
  }

  void bench_ranks_must_match_the_launched_world() {
    const Result r = run_with({u"bench"_s, u"comm"_s, u"--ranks"_s, u"3"_s, u"-b"_s, u"1K"_s, u"-e"_s, u"1K"_s},
                              {u"OMPI_COMM_WORLD_SIZE=2"_s, u"OMPI_COMM_WORLD_RANK=0"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"bench comm --ranks 3: the launcher started 2 ranks"_s), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestOneSidedWindows)
#include "tst_one_sided_windows.moc"
