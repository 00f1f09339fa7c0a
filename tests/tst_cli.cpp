// ctest-labels: unit
// The moebench executable: exit codes (0 ok, 1 run failed, 2 bad usage or config), messages
// that name file, line and key, progress lines, and checkpoint/resume through the CLI.
#include <QtTest>

#include <QProcess>

#include "moebench/store/gemm_rate_record.h"
#include "moebench/store/run_store.h"
#include "test_support.h"

using namespace Qt::StringLiterals;

namespace {
struct Result {
  int code;
  QString out, err;
};
Result run_cli(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(MOEBENCH_CLI), args);
  if (!p.waitForFinished(120000)) return {-1, {}, u"timeout"_s};
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}
QString write(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
  QFile f(dir.filePath(name));
  f.open(QIODevice::WriteOnly);
  f.write(text);
  return f.fileName();
}
// The shared tiny config (tests/data/tiny.toml), run for 3 steps without intermediate evals.
const QString kTiny = QString::fromUtf8(moebench::test::tiny_config_path());
const QStringList kShort = {u"--set"_s, u"train.steps=3"_s, u"--set"_s, u"train.eval_every=0"_s, u"--set"_s,
                            u"store.enabled=false"_s};
}  // namespace

class TestCli : public QObject {
  Q_OBJECT

 private slots:
  void validate_prints_the_resolved_config() {
    Result r = run_cli({u"validate"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml")});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains(u"[model]"_s) && r.out.contains(u"top_k"_s));
  }

  void broken_configs_exit_2_naming_line_and_key_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("expected");  // substring of stderr
    QTest::newRow("unknown key") << QByteArray("[model]\nhiden = 64\n") << u"broken.toml:2: model.hiden"_s;
    QTest::newRow("wrong type") << QByteArray("[model]\n\nhidden = \"big\"\n") << u"broken.toml:3: model.hidden"_s;
    QTest::newRow("top_k > experts") << QByteArray("[moe]\nmoe_layers = [1]\nexperts = 2\ntop_k = 3\n") << u"moe.top_k"_s;
    QTest::newRow("heads do not divide hidden") << QByteArray("[model]\nhidden = 30\nheads = 4\n") << u"model.heads"_s;
    QTest::newRow("moe block out of range") << QByteArray("[model]\nlayers = 4\n[moe]\nmoe_layers = [1, 4]\n") << u"moe.moe_layers"_s;
    QTest::newRow("missing data file") << QByteArray("[data]\nsource = \"bin\"\npath = \"nope.bin\"\n") << u"nope.bin"_s;
    // over the config limits (README "Config limits"): toml++ would overflow its stack or the
    // "did you mean" search would take minutes
    QTest::newRow("40000-part key") << "[model]\n" + QByteArray("a.").repeated(39999) + "a = 1\n"
                                    << u"broken.toml:2: key `a.a.a"_s;
    QTest::newRow("50000-part header") << "[" + QByteArray("a.").repeated(49999) + "a]\n"
                                       << u"has 50000 dotted parts; the limit is 32"_s;
    QTest::newRow("2 MB key") << "[model]\n" + QByteArray(2 << 20, 'k') + " = 1\n"
                              << u"broken.toml: the config file is 2097165 bytes; the limit is 1048576 bytes"_s;
  }
  void broken_configs_exit_2_naming_line_and_key() {
    QFETCH(QByteArray, text);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    Result r = run_cli({u"validate"_s, write(dir, u"broken.toml"_s, text)});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(expected), qPrintable(r.err));
    r = run_cli({u"run"_s, dir.filePath(u"broken.toml"_s)});
    QCOMPARE(r.code, 2);
  }

  void bad_usage_exits_2() {
    QCOMPARE(run_cli({u"run"_s}).code, 2);
    QCOMPARE(run_cli({u"frobnicate"_s}).code, 2);
    QCOMPARE(run_cli({u"run"_s, u"x.toml"_s, u"--steps"_s, u"-3"_s}).code, 2);
    Result r = run_cli({u"validate"_s, u"/nonexistent/x.toml"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"/nonexistent/x.toml"_s), qPrintable(r.err));
  }

  void run_prints_progress_and_resumes() {
    QTemporaryDir dir;
    const QString cfg = kTiny;
    const QString out = dir.filePath(u"out"_s);
    Result r = run_cli(QStringList{u"run"_s, cfg, u"--out"_s, out, u"--stop-at"_s, u"2"_s} + kShort);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(u"step 1/3 | loss"_s) && r.out.contains(u"tok/s"_s), qPrintable(r.out));
    QVERIFY(!r.out.contains(u"step 3/3"_s));
    QVERIFY(QFile::exists(out + u"/checkpoints/step_000002/model.safetensors"_s));
    r = run_cli(QStringList{u"run"_s, cfg, u"--out"_s, out, u"--resume"_s, out} + kShort);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(u"resumed at step 2"_s) && r.out.contains(u"step 3/3"_s) &&
                 !r.out.contains(u"step 1/3"_s) && r.out.contains(u"done: 3 steps"_s),
             qPrintable(r.out));
  }

  // `bench gemm --db` stores the measured rate; a run started afterwards on this host records
  // it, scaled to its threads per rank, as its peak rate (the DDL-roofline's P_w) with where it
  // came from.
  void bench_gemm_rate_is_recorded_by_later_runs() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    Result r = run_cli({u"bench"_s, u"gemm"_s, u"--iters"_s, u"1"_s, u"--threads"_s, u"1"_s, u"--db"_s, db});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(u"stored as run"_s), qPrintable(r.out));
    const QString printed = r.out.section(u"sgemm rate: "_s, 1).section(u' ', 0, 0);
    QStringList run_args = {u"run"_s, kTiny, u"--db"_s, db, u"--out"_s, dir.filePath(u"out"_s)};
    run_args += kShort.mid(0, 4);
    r = run_cli(run_args);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    moebench::RunStore store(db.toStdString(), moebench::RunStore::Mode::read_only);
    const auto bench = store.list_runs(moebench::kBenchExperiment);
    QCOMPARE(bench.size(), size_t(1));
    const double rate = store.metrics(bench[0].id, moebench::kGemmRateMetric).at(0).value;
    QCOMPARE(QString::number(rate, 'f', 2), printed);
    const auto runs = store.list_runs(u"default"_s.toStdString());
    QCOMPARE(runs.size(), size_t(1));
    std::string peak, source;
    for (const auto& [key, value] : store.params(runs[0].id)) {
      if (key == "peak_gflops") peak = value;
      if (key == "peak_gflops_source") source = value;
    }
    QVERIFY2(!peak.empty(), "the run did not record peak_gflops");
    // tiny.toml runs 2 BLAS threads, the benchmark ran 1: the rank's peak is twice the rate.
    QVERIFY2(std::abs(std::stod(peak) - 2 * rate) <= 1e-5 * rate, peak.c_str());
    QVERIFY2(source.find("bench gemm " + bench[0].uuid.substr(0, 8)) == 0 &&
                 source.find(", 1 thread; scaled to 2 threads per rank") != std::string::npos,
             source.c_str());
  }

  void failures_exit_1_with_the_reason() {
    QTemporaryDir dir;
    const QString cfg = kTiny;
    Result r = run_cli({u"run"_s, cfg, u"--resume"_s, dir.filePath(u"nothing"_s)});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(u"no checkpoint"_s), qPrintable(r.err));
    QByteArray bad(2048, '\0');  // a .bin whose magic is 0
    const QString bin = write(dir, u"bad.bin"_s, bad);
    r = run_cli({u"run"_s, cfg, u"--set"_s, u"data.source=bin"_s, u"--set"_s, u"data.path="_s + bin, u"--set"_s,
                 u"store.enabled=false"_s});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(u"bad.bin"_s) && r.err.contains(u"magic"_s), qPrintable(r.err));
  }
};

QTEST_APPLESS_MAIN(TestCli)
#include "tst_cli.moc"
