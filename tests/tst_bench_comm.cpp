// ctest-labels: unit mpi
// `moebench bench comm` through the built CLI: nccl-tests columns, one row per size, exact
// correctness (#wrong 0) over 2 MPI ranks, JSON output, the curve --db stores for MoNTA, and
// exit code 2 on bad flags.
// (Speed itself is never judged here.)
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>

#include <QTemporaryDir>

#include <cmath>

#include "moebench/dist/mpi_communicator.h"
#include "moebench/store/comm_rate_record.h"

using namespace Qt::StringLiterals;

namespace {
struct Result {
  int code;
  QString out, err;
};

Result run(const QString& program, const QStringList& args) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(u"OMPI_ALLOW_RUN_AS_ROOT"_s, u"1"_s);
  env.insert(u"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"_s, u"1"_s);
  p.setProcessEnvironment(env);
  p.start(program, args);
  if (!p.waitForFinished(120000)) {
    p.kill();
    p.waitForFinished();
    return {-1, QString::fromUtf8(p.readAllStandardOutput()), u"timeout"_s};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2,
          QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

QStringList fields(const QString& line) { return line.split(QRegularExpression(u"\\s+"_s), Qt::SkipEmptyParts); }
}  // namespace

class TestBenchComm : public QObject {
  Q_OBJECT

 private slots:
  void allreduce_on_two_ranks_prints_nccl_tests_rows() {
    const Result r = run(QStringLiteral(MOEBENCH_MPIEXEC),
                         {u"--oversubscribe"_s, u"--bind-to"_s, u"none"_s, u"-np"_s, u"2"_s, QStringLiteral(MOEBENCH_CLI),
                          u"bench"_s, u"comm"_s, u"--op"_s, u"allreduce"_s, u"-b"_s, u"8"_s, u"-e"_s, u"1K"_s, u"-f"_s,
                          u"4"_s, u"-n"_s, u"2"_s, u"-w"_s, u"1"_s, u"-c"_s, u"1"_s});
    const QByteArray log = (r.out + u"\n--- stderr ---\n"_s + r.err).toUtf8();
    QVERIFY2(r.code == 0, log.constData());

    const QStringList lines = r.out.split(u'\n');
    const QStringList columns = {u"size"_s, u"count"_s, u"type"_s, u"redop"_s, u"root"_s,
                                 u"time"_s, u"algbw"_s, u"busbw"_s, u"#wrong"_s};
    int header = -1;
    for (int i = 0; i < lines.size(); ++i) {
      QStringList f = fields(lines[i]);
      if (!f.isEmpty() && f.front() == u"#"_s) f.removeFirst();
      if (f == columns) header = i;
    }
    QVERIFY2(header >= 0, log.constData());
    QVERIFY2(r.out.contains(u"2 ranks"_s), log.constData());

    QList<qlonglong> sizes;
    for (int i = header + 1; i < lines.size(); ++i) {
      if (lines[i].trimmed().isEmpty() || lines[i].startsWith(u'#')) continue;
      const QStringList f = fields(lines[i]);
      QVERIFY2(f.size() == 9, qPrintable(lines[i]));
      sizes.push_back(f[0].toLongLong());
      QCOMPARE(f[1].toLongLong(), f[0].toLongLong() / 4);  // float elements
      QCOMPARE(f[2], u"float"_s);
      QCOMPARE(f[3], u"sum"_s);
      QCOMPARE(f[4], u"-1"_s);
      bool ok = false;
      QVERIFY(f[5].toDouble(&ok) >= 0 && ok);
      const double algbw = f[6].toDouble(&ok);
      QVERIFY(ok);
      const double busbw = f[7].toDouble(&ok);
      QVERIFY(ok);
      // busbw = algbw x 2(n-1)/n = algbw for 2 ranks (both printed with 2 decimals).
      QVERIFY2(std::abs(busbw - algbw) <= 0.011, qPrintable(lines[i]));
      QVERIFY2(f[8] == u"0"_s, qPrintable(lines[i]));  // #wrong
    }
    QCOMPARE(sizes, (QList<qlonglong>{8, 32, 128, 512}));
    QVERIFY2(r.out.contains(u"# Avg bus bandwidth"_s), log.constData());
  }

  void json_output_on_one_local_rank() {
    const Result r = run(QStringLiteral(MOEBENCH_CLI),
                         {u"bench"_s, u"comm"_s, u"--backend"_s, u"local"_s, u"--op"_s, u"alltoall"_s, u"-b"_s,
                          u"64"_s, u"-e"_s, u"256"_s, u"-f"_s, u"2"_s, u"-n"_s, u"1"_s, u"-w"_s, u"0"_s, u"--json"_s});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QJsonParseError error;
    const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8(), &error).object();
    QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(r.out));
    QCOMPARE(j[u"op"_s].toString(), u"alltoall"_s);
    QCOMPARE(j[u"ranks"_s].toInt(), 1);
    QCOMPARE(j[u"wrong"_s].toInt(), 0);
    const QJsonArray rows = j[u"rows"_s].toArray();
    QCOMPARE(rows.size(), 3);
    const int sizes[] = {64, 128, 256};
    for (int i = 0; i < 3; ++i) {
      QCOMPARE(rows[i].toObject()[u"size"_s].toInt(), sizes[i]);
      QCOMPARE(rows[i].toObject()[u"wrong"_s].toInt(), 0);
      QCOMPARE(rows[i].toObject()[u"busbw_gbps"_s].toDouble(), 0.0);  // (n-1)/n = 0 on one rank
    }
  }

  // --db stores the measured curve; latest_comm_rate finds it for this host (MoNTA's r1 source)
  // with the rates the benchmark printed, and a record of the group's rank count wins over a
  // newer one of another count.
  void alltoall_curve_is_stored_for_monta() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    auto bench = [&](const QString& ranks) {
      return run(QStringLiteral(MOEBENCH_MPIEXEC),
                 {u"--oversubscribe"_s, u"--bind-to"_s, u"none"_s, u"-np"_s, ranks, QStringLiteral(MOEBENCH_CLI), u"bench"_s,
                  u"comm"_s, u"--op"_s, u"alltoall"_s, u"-b"_s, u"4K"_s, u"-e"_s, u"64K"_s, u"-f"_s, u"4"_s, u"-n"_s,
                  u"2"_s, u"-w"_s, u"1"_s, u"--json"_s, u"--db"_s, db});
    };
    const Result two = bench(u"2"_s);
    QVERIFY2(two.code == 0, qPrintable(two.out + two.err));
    QVERIFY2(two.err.contains(u"stored as run"_s), qPrintable(two.err));
    const QJsonArray rows = QJsonDocument::fromJson(two.out.toUtf8()).object()[u"rows"_s].toArray();
    QCOMPARE(rows.size(), 3);
    const Result three = bench(u"3"_s);  // newer, but measured with 3 ranks
    QVERIFY2(three.code == 0, qPrintable(three.out + three.err));

    moebench::RunStore store(db.toStdString());
    const auto rate = moebench::latest_comm_rate(store, moebench::MpiRuntime::hostname(), "alltoall", 2);
    QVERIFY(rate.has_value());
    QCOMPARE(rate->ranks, 2);
    QCOMPARE(rate->busbw.size(), size_t(3));
    for (int i = 0; i < 3; ++i) {
      const QJsonObject row = rows[i].toObject();
      QCOMPARE(rate->busbw[i].first, row[u"size"_s].toDouble());
      QVERIFY(std::abs(rate->busbw[i].second - row[u"busbw_gbps"_s].toDouble()) <= 1e-6 + 1e-6 * rate->busbw[i].second);
    }
    QCOMPARE(moebench::latest_comm_rate(store, moebench::MpiRuntime::hostname(), "alltoall", 3)->ranks, 3);
    QCOMPARE(moebench::latest_comm_rate(store, moebench::MpiRuntime::hostname(), "alltoall", 5)->ranks, 3);  // the newest
    QVERIFY(!moebench::latest_comm_rate(store, moebench::MpiRuntime::hostname(), "allgather", 2));
    QVERIFY(!moebench::latest_comm_rate(store, "another-host", "alltoall", 2));
  }

  void bad_flags_exit_2_data() {
    QTest::addColumn<QStringList>("args");
    QTest::newRow("unknown op") << QStringList{u"--op"_s, u"frob"_s};
    QTest::newRow("bad size suffix") << QStringList{u"-b"_s, u"12X"_s};
    QTest::newRow("min above max") << QStringList{u"-b"_s, u"1M"_s, u"-e"_s, u"1K"_s};
    QTest::newRow("check not 0 or 1") << QStringList{u"-c"_s, u"2"_s};
    QTest::newRow("unknown backend") << QStringList{u"--backend"_s, u"carrier-pigeon"_s};
    QTest::newRow("--db for an op MoNTA does not use") << QStringList{u"--op"_s, u"allreduce"_s, u"--db"_s, u"x.db"_s};
  }
  void bad_flags_exit_2() {
    QFETCH(QStringList, args);
    const Result r = run(QStringLiteral(MOEBENCH_CLI), QStringList{u"bench"_s, u"comm"_s} + args);
    QVERIFY2(r.code == 2, qPrintable(r.out + r.err));
    QVERIFY2(!r.err.isEmpty(), "a bad flag is explained on stderr");
  }
};

QTEST_GUILESS_MAIN(TestBenchComm)
#include "tst_bench_comm.moc"
