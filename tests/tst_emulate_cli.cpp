// ctest-labels: unit
// `moebench run` with [emulate] (the link emulator, perf/link_emulator.h) through the CLI: a
// 4-rank quickstart run says it is emulated in its header and on every step line, records the
// emulated tags, and `runs show` / `runs list` say EMULATED; time_scale "auto" prints the
// measured rate it came from; bad [emulate] input exits 2 with one message naming the key,
// before any rank starts.
#include <QtTest>

#include "moebench/store/run_store.h"
#include "cli_support.h"

using namespace Qt::StringLiterals;

namespace {
using Result = moebench::test::CliResult;
using moebench::test::run_cli;
using moebench::test::write_file;

const QString kQuickstart = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml");

// A 2 x 2 cluster naming every link (NIC 1 GB/s, so 3 quickstart steps stay short at x20).
const QByteArray kCluster2x2 =
    "[cluster]\nname = \"tiny2x2\"\nnodes = 2\ndevices_per_node = 2\ndevice_tflops = 0.05\n"
    "intra_bw_gbs = 20.0\nintra_latency_us = 1.0\ninter_bw_gbs = 1.0\ninter_latency_us = 5.0\n";

QStringList run_args(const QTemporaryDir& dir, const QStringList& sets) {
  QStringList a = {u"run"_s, kQuickstart, u"--steps"_s, u"3"_s, u"--out"_s, dir.filePath(u"out"_s),
                   u"--db"_s, dir.filePath(u"runs.db"_s), u"--set"_s, u"train.eval_every=0"_s};
  for (const QString& s : sets) a += QStringList{u"--set"_s, s};
  return a;
}

std::map<std::string, std::string> tags_of_only_run(const QString& db) {
  moebench::RunStore store(db.toStdString(), moebench::RunStore::Mode::read_only);
  const auto runs = store.list_runs("default");
  std::map<std::string, std::string> out;
  if (runs.size() != 1) return out;
  for (const auto& [k, v] : store.tags(runs[0].id)) out[k] = v;
  return out;
}

}  // namespace

class TestEmulateCli : public QObject {
  Q_OBJECT

 private slots:
  void emulated_run_records_and_says_so() {
    QTemporaryDir dir;
    const QString cluster = write_file(dir, u"tiny2x2.toml"_s, kCluster2x2);
    Result r = run_cli(run_args(dir, {"emulate.cluster=" + cluster, u"emulate.time_scale=20"_s}));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains(u"emulated cluster tiny2x2 ("_s + cluster + u") | time scale x20 (emulate.time_scale)"_s),
             qPrintable(r.out));
    QCOMPARE(r.out.count(u"| emulated tiny2x2 x20\n"_s), 3);  // every step line
    const auto tags = tags_of_only_run(dir.filePath(u"runs.db"_s));
    QCOMPARE(QString::fromStdString(tags.count("emulated") ? tags.at("emulated") : ""), u"1"_s);
    QCOMPARE(QString::fromStdString(tags.at("emulated.cluster")), u"tiny2x2"_s);
    QCOMPARE(QString::fromStdString(tags.at("emulated.cluster_file")), cluster);
    QCOMPARE(QString::fromStdString(tags.at("emulated.time_scale")), u"20"_s);
    QCOMPARE(QString::fromStdString(tags.at("emulated.time_scale_source")), u"config"_s);
    r = run_cli({u"runs"_s, u"show"_s, u"quickstart"_s, u"--db"_s, dir.filePath(u"runs.db"_s)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(u"EMULATED     on tiny2x2 (time scale x20): every message paced over its links"_s),
             qPrintable(r.out));
    r = run_cli({u"runs"_s, u"list"_s, u"--db"_s, dir.filePath(u"runs.db"_s)});
    QVERIFY2(r.code == 0 && r.out.contains(u"quickstart (emulated)"_s), qPrintable(r.out + r.err));
    r = run_cli({u"runs"_s, u"compare"_s, u"1"_s, u"1"_s, u"--db"_s, dir.filePath(u"runs.db"_s), u"--json"_s});
    QVERIFY2(r.code == 0 && r.out.contains(u"\"timing\": \"emulated tiny2x2 x20\""_s), qPrintable(r.out + r.err));
  }

  // "auto": the cluster's device rate over the sgemm rate measured per rank, printed.
  void auto_time_scale_is_measured_and_printed() {
    QTemporaryDir dir;
    const QString cluster = write_file(dir, u"tiny2x2.toml"_s, kCluster2x2);
    const Result r = run_cli(run_args(dir, {"emulate.cluster=" + cluster}));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const QRegularExpression re(u"time scale x([0-9.e+-]+) \\(auto: 0\\.05 TFLOP/s per device / ([0-9.]+) GFLOP/s sgemm measured per rank\\)"_s);
    const auto m = re.match(r.out);
    QVERIFY2(m.hasMatch(), qPrintable(r.out));
    const double scale = m.captured(1).toDouble(), measured = m.captured(2).toDouble();
    QVERIFY2(measured > 0.1, qPrintable(r.out));
    QVERIFY2(std::abs(scale - 50.0 / measured) <= 0.01 * scale, qPrintable(m.captured(0)));
    const auto tags = tags_of_only_run(dir.filePath(u"runs.db"_s));
    QCOMPARE(QString::fromStdString(tags.count("emulated.time_scale_source") ? tags.at("emulated.time_scale_source") : ""), u"auto"_s);
  }

  void bad_input_exits_2_naming_the_key_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::addColumn<QString>("expected");
    QTest::newRow("missing cluster file") << QStringList{u"emulate.cluster=/nonexistent/c.toml"_s}
                                          << u"--set emulate.cluster: cluster file not found: /nonexistent/c.toml"_s;
    QTest::newRow("devices != ranks") << QStringList{u"emulate.cluster=@/tiny2x2.toml"_s, u"run.ranks=2"_s,
                                                     u"cluster.nodes=1"_s, u"cluster.devices_per_node=0"_s}
                                      << u"--set emulate.cluster: @/tiny2x2.toml describes 2 nodes x 2 devices; the run has run.ranks = 2"_s;
    QTest::newRow("missing link") << QStringList{u"emulate.cluster=@/nolink.toml"_s}
                                  << u"--set emulate.cluster: @/nolink.toml: missing cluster.inter_bw_gbs"_s;
    QTest::newRow("zero bandwidth") << QStringList{u"emulate.cluster=@/zero.toml"_s}
                                    << u"@/zero.toml:2: cluster.inter_bw_gbs: must be > 0, got 0 (the cluster of emulate.cluster)"_s;
    for (const char* bad : {"0", "-1", "fast"})
      QTest::newRow(qPrintable(u"time_scale "_s + QLatin1String(bad)))
          << QStringList{u"emulate.cluster=@/tiny2x2.toml"_s, u"emulate.time_scale="_s + QLatin1String(bad)}
          << u"--set emulate.time_scale: must be \"auto\" or a number > 0, got "_s;
  }
  void bad_input_exits_2_naming_the_key() {
    QFETCH(QStringList, sets);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    write_file(dir, u"tiny2x2.toml"_s, kCluster2x2);
    write_file(dir, u"nolink.toml"_s, "[cluster]\nnodes = 2\ndevices_per_node = 2\ndevice_tflops = 1.0\nintra_bw_gbs = 10.0\n");
    write_file(dir, u"zero.toml"_s, "[cluster]\ninter_bw_gbs = 0.0\nnodes = 2\ndevices_per_node = 2\ndevice_tflops = 1.0\nintra_bw_gbs = 10.0\n");
    for (QString& s : sets) s.replace(u"@"_s, dir.path());
    expected.replace(u"@"_s, dir.path());
    const Result r = run_cli(run_args(dir, sets));
    QVERIFY2(r.code == 2, qPrintable(r.out + r.err));
    QVERIFY2(r.err.count(expected) == 1, qPrintable(r.err));
    QVERIFY2(r.out.isEmpty() && !r.err.contains(u"failed"_s), qPrintable(r.out + r.err));  // no rank started
    QVERIFY(!QFile::exists(dir.filePath(u"out"_s)));
  }
};

QTEST_GUILESS_MAIN(TestEmulateCli)
#include "tst_emulate_cli.moc"
