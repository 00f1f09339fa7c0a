// ctest-labels: unit
// Values, ranges and files through the CLI (docs/limits.md "Values and ranges", "Files that
// commands write or read"): link emulation scales and cluster values within their bounds, a
// warning and a recorded run before a paced run's first message; --resume never replaces
// another run's checkpoints; every command that writes a file refuses an existing one without
// --force; names and paths too long for the filesystem, option ranges said readably (exponent
// form accepted for whole numbers); a NaN loss stops the run FAILED and reads "nan" everywhere;
// --stop-at 0 refused; FIFOs refused instead of hanging. Every bad input: exit 2, one message
// naming the flag or key, nothing written; every run is bounded by a timeout.
#include <QtTest>

#include <sys/stat.h>

#include "moebench/store/run_store.h"
#include "cli_support.h"
#include "store_support.h"
#include "test_support.h"

using namespace Qt::StringLiterals;

namespace {
using Result = moebench::test::CliResult;
using moebench::test::run_cli;
using moebench::test::write_file;

const QString kQuickstart = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml");
const QString kJanus4 = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/clusters/janus_4gpu.toml");
const QString kTiny = QString::fromUtf8(moebench::test::tiny_config_path());
constexpr int kQuick = 60000;  // ms: a refusal, a validate or a 4-step tiny run

// A 2 x 2 cluster naming every link, as quickstart's topology.
const QByteArray kCluster2x2 =
    "[cluster]\nname = \"c2x2\"\nnodes = 2\ndevices_per_node = 2\ndevice_tflops = 0.05\n"
    "intra_bw_gbs = 20.0\nintra_latency_us = 1.0\ninter_bw_gbs = 1.0\ninter_latency_us = 5.0\n";

QByteArray bytes_of(const QString& path) { return QByteArray::fromStdString(moebench::test::read_bytes(path.toStdString())); }

// `@` in each argument -> the folder.
QStringList in_dir(QStringList args, const QTemporaryDir& dir) {
  for (QString& a : args) a.replace(u"@"_s, dir.path());
  return args;
}

// A tiny run of `steps` steps into `out`, recorded in `db` (or not, when db is empty).
QStringList tiny_run(const QString& out, const QString& db, int steps, const QStringList& sets = {}) {
  QStringList a = {u"run"_s, kTiny, u"--steps"_s, QString::number(steps), u"--out"_s, out, u"--set"_s,
                   u"train.eval_every=0"_s};
  a += db.isEmpty() ? QStringList{u"--set"_s, u"store.enabled=false"_s} : QStringList{u"--db"_s, db};
  for (const QString& s : sets) a += QStringList{u"--set"_s, s};
  return a;
}

}  // namespace

class TestCliValues : public QObject {
  Q_OBJECT

  QTemporaryDir recorded_;  // runs.db with one recorded tiny run (trace, export)

 private slots:
  void initTestCase() {
    const Result r = run_cli(tiny_run(recorded_.filePath(u"out"_s), recorded_.filePath(u"runs.db"_s), 2), {}, kQuick);
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
  }

  // Item 6: time scales and link values of the emulated cluster have bounds; no 1e300 reaches
  // the emulator's nanosecond clock.
  void emulation_scales_and_links_are_bounded_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::addColumn<QString>("expected");
    for (const char* scale : {"1e300", "1e9", "1e-9"})
      QTest::newRow(qPrintable(u"time_scale "_s + QLatin1String(scale)))
          << QStringList{u"emulate.cluster=@/c2x2.toml"_s, u"emulate.time_scale="_s + QLatin1String(scale)}
          << u"--set emulate.time_scale: must be \"auto\" or a number from 0.001 to 1e+06"_s;
    QTest::newRow("link of 1e-300 GB/s")
        << QStringList{u"emulate.cluster=@/slow.toml"_s}
        << u"@/slow.toml:6: cluster.intra_bw_gbs: must be from 0.001 to 1e+09 GB/s, got 1e-300 (the cluster of emulate.cluster)"_s;
  }
  void emulation_scales_and_links_are_bounded() {
    QFETCH(QStringList, sets);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    write_file(dir, u"c2x2.toml"_s, kCluster2x2);
    write_file(dir, u"slow.toml"_s, QByteArray(kCluster2x2).replace("intra_bw_gbs = 20.0", "intra_bw_gbs = 1e-300"));
    expected.replace(u"@"_s, dir.path());
    for (const QString& verb : {u"validate"_s, u"run"_s}) {
      QStringList args = {verb, kQuickstart};
      for (const QString& s : in_dir(sets, dir)) args += QStringList{u"--set"_s, s};
      if (verb == u"run"_s) args += QStringList{u"--out"_s, dir.filePath(u"out"_s), u"--db"_s, dir.filePath(u"runs.db"_s)};
      const Result r = run_cli(args, {}, kQuick);
      QVERIFY2(r.code == 2 && r.err.count(expected) == 1, qPrintable(verb + u": "_s + r.err));
    }
    QVERIFY(!QFile::exists(dir.filePath(u"out"_s)) && !QFile::exists(dir.filePath(u"runs.db"_s)));
  }

  // Item 6: a paced run whose one message takes over a minute says so before its first step,
  // and is in the store from then on: stopped there, it is marked KILLED.
  void slow_emulated_run_warns_and_is_recorded_before_its_first_step() {
    QTemporaryDir dir;
    // one node of 2 devices; a message takes 1000 x (0.1 s + bytes / 1 GB/s) > 100 s
    const QString cluster = write_file(dir, u"slow1x2.toml"_s,
                                       "[cluster]\nname = \"slow1x2\"\nnodes = 1\ndevices_per_node = 2\n"
                                       "device_tflops = 0.05\nintra_bw_gbs = 1.0\nintra_latency_us = 100000.0\n");
    const QString db = dir.filePath(u"runs.db"_s);
    QProcess run;
    run.start(QStringLiteral(MOEBENCH_CLI),
              tiny_run(dir.filePath(u"out"_s), db, 4,
                       {u"run.ranks=2"_s, u"cluster.nodes=1"_s, u"cluster.devices_per_node=0"_s,
                        u"emulate.cluster="_s + cluster, u"emulate.time_scale=1000"_s, u"run.stop_grace_s=1"_s}));
    QString err;
    QElapsedTimer waited;
    waited.start();
    while (!err.contains(u"longer than a minute"_s) && waited.elapsed() < 90000 && run.state() != QProcess::NotRunning) {
      run.waitForReadyRead(1000);
      err += QString::fromUtf8(run.readAllStandardError());
    }
    bool recorded = false;
    while (!recorded && waited.elapsed() < 120000 && run.state() != QProcess::NotRunning) {
      try {  // rank 0 may be creating the store right now
        moebench::RunStore store(db.toStdString(), moebench::RunStore::Mode::read_only);
        recorded = store.list_runs().size() == 1;
      } catch (const std::exception&) {
      }
      if (!recorded) QThread::msleep(200);
    }
    run.terminate();  // Ctrl-C: the ranks are still in their first paced message
    QVERIFY(run.waitForFinished(60000));
    err += QString::fromUtf8(run.readAllStandardError());
    const QString expected =
        u"moebench: warning: emulated slow1x2 x1000: one message of the dense gradients ("_s;
    QVERIFY2(err.count(expected) == 1 && err.contains(u"on the emulated intra_node link, longer than a minute"_s),
             qPrintable(err));
    QVERIFY2(recorded, "the run was not in the store before its first step");
    moebench::RunStore store(db.toStdString(), moebench::RunStore::Mode::read_only);
    const auto runs = store.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(QString::fromLatin1(moebench::run_status_name(runs[0].status)), u"KILLED"_s);
    QVERIFY2(store.metrics(runs[0].id, "loss").empty(), "a step ran: the test proves nothing");
  }

  // Item 17: cluster values (cluster.* keys and cluster files) have sane bounds per key.
  void cluster_values_are_bounded_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::addColumn<QString>("expected");
    QTest::newRow("device memory 1e300") << QStringList{u"cluster.device_memory_gib=1e300"_s}
                                         << u"--set cluster.device_memory_gib: must be from 1e-06 to 1e+06 GiB (0 = not described), got 1e+300"_s;
    QTest::newRow("intra 1e-300") << QStringList{u"cluster.intra_bw_gbs=1e-300"_s}
                                  << u"--set cluster.intra_bw_gbs: must be from 0.001 to 1e+09 GB/s, got 1e-300"_s;
    QTest::newRow("inter 1e300") << QStringList{u"cluster.inter_bw_gbs=1e300"_s}
                                 << u"--set cluster.inter_bw_gbs: must be from 0.001 to 1e+09 GB/s, got 1e+300"_s;
    QTest::newRow("latency 1e300") << QStringList{u"cluster.inter_latency_us=1e300"_s}
                                   << u"--set cluster.inter_latency_us: must be from 0 to 1e+06 us, got 1e+300"_s;
    QTest::newRow("tflops 1e-300") << QStringList{u"cluster.device_tflops=1e-300"_s}
                                   << u"--set cluster.device_tflops: must be from 1e-06 to 1e+06 TFLOP/s, got 1e-300"_s;
    QTest::newRow("cluster file") << QStringList{u"cluster.file=@/huge.toml"_s}
                                  << u"@/huge.toml:3: cluster.device_tflops: must be from 1e-06 to 1e+06 TFLOP/s, got 1e+300"_s;
    QTest::newRow("curve") << QStringList{u"cluster.alltoall_busbw_bytes=[1e6]"_s, u"cluster.alltoall_busbw_gbs=[1e300]"_s}
                           << u"--set cluster.alltoall_busbw_gbs: must be from 0.001 to 1e+09 GB/s, entry 0 is 1e+300"_s;
  }
  void cluster_values_are_bounded() {
    QFETCH(QStringList, sets);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    write_file(dir, u"huge.toml"_s, "[cluster]\nname = \"huge\"\ndevice_tflops = 1e300\n");
    expected.replace(u"@"_s, dir.path());
    for (const QString& verb : {u"validate"_s, u"plan"_s}) {
      QStringList args = {verb, kQuickstart};
      for (const QString& s : in_dir(sets, dir)) args += QStringList{u"--set"_s, s};
      const Result r = run_cli(args, {}, kQuick);
      QVERIFY2(r.code == 2 && r.err.count(expected) == 1, qPrintable(verb + u": "_s + r.err));
      QVERIFY2(!r.out.contains(u"inf"_s) && r.out.isEmpty(), qPrintable(r.out));
    }
  }

  // Item 7: --resume from another folder into an --out holding another run's checkpoints is
  // refused as a plain second run is; --overwrite replaces them, but never the one resumed.
  void resume_from_another_folder_keeps_the_checkpoints() {
    QTemporaryDir dir;
    const QString f = dir.filePath(u"f"_s), g = dir.filePath(u"g"_s);
    QCOMPARE(run_cli(tiny_run(f, {}, 3), {}, kQuick).code, 0);
    QCOMPARE(run_cli(tiny_run(g, {}, 4, {u"run.seed=99"_s}), {}, kQuick).code, 0);
    const QString kept = g + u"/checkpoints/step_000004/model.safetensors"_s;
    const QByteArray before = bytes_of(kept);
    QVERIFY(!before.isEmpty());
    const QString from = f + u"/checkpoints/step_000003"_s;
    Result r = run_cli(tiny_run(g, {}, 4) + QStringList{u"--resume"_s, from}, {}, kQuick);
    QVERIFY2(r.code == 2, qPrintable(r.out + r.err));
    QVERIFY2(r.err.count(g + u" holds checkpoints of another run (latest step_000004); --resume "_s + from) == 1 &&
                 r.err.contains(u"pass --overwrite to replace them, or another --out"_s) && r.out.isEmpty(),
             qPrintable(r.err));
    QCOMPARE(bytes_of(kept), before);
    r = run_cli(tiny_run(g, {}, 4) + QStringList{u"--resume"_s, g, u"--overwrite"_s}, {}, kQuick);
    QVERIFY2(r.code == 2 && r.err.contains(u"--overwrite would remove the checkpoint --resume "_s + g), qPrintable(r.err));
    QCOMPARE(bytes_of(kept), before);
    r = run_cli(tiny_run(g, {}, 5) + QStringList{u"--resume"_s, from, u"--overwrite"_s}, {}, kQuick);
    QVERIFY2(r.code == 0 && r.out.contains(u"resumed at step 3"_s), qPrintable(r.out + r.err));
    QVERIFY(!QFile::exists(kept));  // replaced, as asked
    QVERIFY(QFile::exists(g + u"/checkpoints/step_000005/model.safetensors"_s));
  }

  // Item 12: every command that writes a file refuses an existing one without --force (exit 2,
  // the file unchanged, before any work); with --force it replaces it.
  void commands_that_write_files_refuse_existing_ones_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("file");
    QTest::addColumn<bool>("try_force");  // also run it with --force (calibrate would take minutes)
    const QString db = recorded_.filePath(u"runs.db"_s);
    QTest::newRow("trace -o") << QStringList{u"trace"_s, u"1"_s, u"--db"_s, db, u"-o"_s, u"@/keep.json"_s}
                              << u"@/keep.json"_s << true;
    QTest::newRow("export --csv") << QStringList{u"export"_s, u"1"_s, u"--db"_s, db, u"--csv"_s, u"@"_s}
                                  << u"@/run.csv"_s << true;
    QTest::newRow("calibrate --out") << QStringList{u"calibrate"_s, u"--quick"_s, u"--ranks"_s, u"2"_s, u"--out"_s,
                                                    u"@/keep.toml"_s}
                                     << u"@/keep.toml"_s << false;
    QTest::newRow("plan --write-config")
        << QStringList{u"plan"_s, kQuickstart, u"--cluster"_s, kJanus4, u"--write-config"_s, u"@/keep.toml"_s}
        << u"@/keep.toml"_s << true;
  }
  void commands_that_write_files_refuse_existing_ones() {
    QFETCH(QStringList, args);
    QFETCH(QString, file);
    QFETCH(bool, try_force);
    QTemporaryDir dir;
    file.replace(u"@"_s, dir.path());
    write_file(dir, QFileInfo(file).fileName(), "precious, unrelated\n");
    Result r = run_cli(in_dir(args, dir), {}, kQuick);
    QVERIFY2(r.code == 2 && r.err.contains(u"--force"_s) && r.err.contains(QFileInfo(file).fileName()) &&
                 r.err.count(u"\n"_s) <= 2,
             qPrintable(r.out + r.err));
    QCOMPARE(bytes_of(file), QByteArray("precious, unrelated\n"));
    if (!try_force) return;
    r = run_cli(in_dir(args, dir) + QStringList{u"--force"_s}, {}, kQuick);
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY(bytes_of(file) != QByteArray("precious, unrelated\n"));
  }

  // Item 15: names and paths the filesystem cannot hold are config or usage errors (exit 2,
  // nothing created); run.name "." or ".." would leave run.out_dir.
  void names_and_paths_are_checked_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");
    const QString name5000(5000, u'n'), name300(300, u'a');
    QTest::newRow("5000-byte run.name")
        << QStringList{u"run"_s, kTiny, u"--set"_s, u"run.name="_s + name5000, u"--set"_s, u"run.out_dir=@/runs"_s}
        << u"--set run.name: has 5000 bytes; it names the folder <out_dir>/<name>, and a file name has at most 255"_s;
    for (const char* name : {".", ".."})
      QTest::newRow(qPrintable(u"run.name "_s + QLatin1String(name)))
          << QStringList{u"run"_s, kTiny, u"--set"_s, u"run.name=\""_s + QLatin1String(name) + u"\""_s, u"--set"_s,
                         u"run.out_dir=@/runs"_s}
          << u"--set run.name: must not be \""_s + QLatin1String(name) + u"\" (it names the folder <out_dir>/<name>"_s;
    QTest::newRow("300-byte --out") << QStringList{u"run"_s, kTiny, u"--out"_s, u"@/"_s + name300}
                                    << u"a name in it has 300 bytes ('aaaaaaaaaaaaaaaa...'); a file name has at most 255"_s;
    QTest::newRow("300-byte run.out_dir")
        << QStringList{u"run"_s, kTiny, u"--set"_s, u"run.out_dir=@/"_s + name300}
        << u"--set run.out_dir: cannot name a folder: a name in it has 300 bytes"_s;
  }
  void names_and_paths_are_checked() {
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const Result r = run_cli(in_dir(args, dir) + QStringList{u"--db"_s, dir.filePath(u"runs.db"_s)}, {}, kQuick);
    QVERIFY2(r.code == 2 && r.err.count(expected) == 1 && !r.err.contains(u"filesystem error"_s), qPrintable(r.err));
    QVERIFY2(QDir(dir.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries).isEmpty(), "something was created");
    if (args.first() == u"run"_s && args.contains(u"--set"_s)) {  // validate says the same
      QStringList v = in_dir(args, dir);
      v[0] = u"validate"_s;
      const Result vr = run_cli(v, {}, kQuick);
      QVERIFY2(vr.code == 2 && vr.err.count(expected) == 1, qPrintable(vr.err));
    }
  }

  // Item 16 (and 19): option ranges read as ranges; no 300-digit bound.
  void option_ranges_are_readable_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");
    QTest::newRow("plan --graph -1") << QStringList{u"plan"_s, kQuickstart, u"--graph"_s, u"-1"_s}
                                     << u"--graph: must be a whole number from 0 to 2147483647, got '-1'"_s;
    QTest::newRow("runs roofline --peak 0") << QStringList{u"runs"_s, u"roofline"_s, u"1"_s, u"--peak"_s, u"0"_s}
                                            << u"--peak: must be a number > 0 and at most 1e+08, got '0'"_s;
    QTest::newRow("plan --alpha 2") << QStringList{u"plan"_s, kQuickstart, u"--memory"_s, u"--alpha"_s, u"2"_s}
                                    << u"--alpha: must be a number from 0 to 1, got '2'"_s;
    QTest::newRow("run --steps 1.5e0") << QStringList{u"run"_s, kTiny, u"--steps"_s, u"1.5e0"_s}
                                       << u"--steps: must be a whole number from 1 to 2147483647, got '1.5e0'"_s;
    QTest::newRow("run --stop-at 0") << QStringList{u"run"_s, kTiny, u"--stop-at"_s, u"0"_s, u"--out"_s, u"@/out"_s}
                                     << u"--stop-at: must be a whole number from 1 to 2147483647, got '0'"_s;
  }
  void option_ranges_are_readable() {
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const Result r = run_cli(in_dir(args, dir), dir.path(), kQuick);
    QVERIFY2(r.code == 2 && r.err.count(expected) == 1, qPrintable(r.err));
    QVERIFY2(!r.err.contains(u"179769313486"_s) && !r.err.contains(u"0.000000"_s), qPrintable(r.err));
    QVERIFY2(QDir(dir.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries).isEmpty(), "something was created");
  }

  // Item 16: a whole number in exponent form is the same number.
  void exponent_form_whole_numbers_are_accepted() {
    const QStringList plan = {u"plan"_s, kQuickstart, u"--set"_s, u"cluster.file="_s + kJanus4, u"--context"_s};
    const Result digits = run_cli(plan + QStringList{u"1000000000000"_s}, {}, kQuick);
    const Result exponent = run_cli(plan + QStringList{u"1e12"_s}, {}, kQuick);
    QVERIFY2(!exponent.err.contains(u"could not be converted"_s) && !exponent.err.contains(u"1e12"_s), qPrintable(exponent.err));
    QCOMPARE(exponent.code, digits.code);
    QCOMPARE(exponent.out, digits.out);
    // 2.5e5 is read as 250000; --stop-at 0 then refuses the run before any work
    const Result steps = run_cli({u"run"_s, kTiny, u"--steps"_s, u"2.5e5"_s, u"--stop-at"_s, u"0"_s}, {}, kQuick);
    QVERIFY2(steps.code == 2 && !steps.err.contains(u"--steps"_s) && steps.err.contains(u"--stop-at"_s), qPrintable(steps.err));
  }

  // Item 18: a NaN or infinite loss stops the run at that step (exit 1, FAILED with the reason,
  // no checkpoint of the diverged weights), unless train.allow_nonfinite; the loss reads "nan"
  // (or "inf") in runs list, show and compare alike.
  void nonfinite_loss_stops_the_run() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    Result r = run_cli(tiny_run(dir.filePath(u"out"_s), db, 6, {u"train.lr=1e30"_s, u"run.name=diverged"_s}), {}, kQuick);
    QVERIFY2(r.code == 1, qPrintable(r.out + r.err));
    QVERIFY2(r.err.count(u"the training loss is "_s) == 1 && r.err.contains(u"train.allow_nonfinite = true"_s),
             qPrintable(r.err));
    QVERIFY2(!r.out.contains(u"done:"_s) && !QFile::exists(dir.filePath(u"out/checkpoints"_s)), qPrintable(r.out));
    const QString bad = r.err.contains(u"loss is nan"_s) ? u"nan"_s : u"inf"_s;
    r = run_cli({u"runs"_s, u"list"_s, u"--db"_s, db}, {}, kQuick);
    QVERIFY2(r.code == 0 && r.out.contains(u"FAILED"_s) && r.out.contains(u" "_s + bad + u" "_s), qPrintable(r.out));
    r = run_cli({u"runs"_s, u"show"_s, u"diverged"_s, u"--db"_s, db}, {}, kQuick);
    QVERIFY2(r.code == 0 && r.out.contains(u"failure      step "_s) && r.out.contains(u"loss "_s + bad), qPrintable(r.out));
    r = run_cli({u"runs"_s, u"compare"_s, u"diverged"_s, u"diverged"_s, u"--db"_s, db}, {}, kQuick);
    QVERIFY2(r.code == 0 && r.out.contains(QRegularExpression(u"final loss +"_s + bad + u" +"_s + bad)), qPrintable(r.out));
    r = run_cli(tiny_run(dir.filePath(u"kept"_s), db, 4, {u"train.lr=1e30"_s, u"train.allow_nonfinite=true"_s}), {}, kQuick);
    QVERIFY2(r.code == 0 && r.out.contains(u"done: 4 steps"_s), qPrintable(r.out + r.err));
  }

  // Item 22: config, cluster and data files that are not regular files (a FIFO without a writer
  // would block the open for ever) are refused at once, naming the path.
  void non_regular_files_are_refused_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");
    QTest::newRow("config") << QStringList{u"validate"_s, u"@/fifo"_s}
                            << u"@/fifo: cannot read the config file: it is a FIFO (named pipe), not a regular file"_s;
    QTest::newRow("run config") << QStringList{u"run"_s, u"@/fifo"_s}
                                << u"@/fifo: cannot read the config file: it is a FIFO (named pipe), not a regular file"_s;
    QTest::newRow("cluster file") << QStringList{u"validate"_s, kQuickstart, u"--set"_s, u"cluster.file=@/fifo"_s}
                                  << u"not a regular file: @/fifo"_s;
    QTest::newRow("data file") << QStringList{u"validate"_s, kTiny, u"--set"_s, u"data.source=text"_s, u"--set"_s,
                                              u"model.vocab_size=256"_s, u"--set"_s, u"data.path=@/fifo"_s}
                               << u"--set data.path: not a regular file: @/fifo"_s;
  }
  void non_regular_files_are_refused() {
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    QCOMPARE(::mkfifo(qPrintable(dir.filePath(u"fifo"_s)), 0600), 0);
    expected.replace(u"@"_s, dir.path());
    const Result r = run_cli(in_dir(args, dir), dir.path(), 20000);  // -1: it hung
    QVERIFY2(r.code == 2 && r.err.count(expected) == 1, qPrintable(QString::number(r.code) + u" "_s + r.err));
  }
};

QTEST_GUILESS_MAIN(TestCliValues)
#include "tst_cli_values.moc"
