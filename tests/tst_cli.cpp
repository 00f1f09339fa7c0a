// ctest-labels: unit
// The moebench executable: exit codes (0 ok, 1 run failed, 2 bad usage or config), messages
// that name file, line and key (or the unknown sub-command, or the option given no value),
// progress lines, checkpoint/resume through the CLI, a damaged store left unchanged by every
// verb, and a vanished run's status and duration.
#include <QtTest>

#include <QCryptographicHash>
#include <QDir>
#include <QProcess>
#include <QThread>

#include "moebench/config/config_loader.h"
#include "moebench/train/device.h"
#include "moebench/train/run_recorder.h"
#include "moebench/store/gemm_rate_record.h"
#include "moebench/store/run_store.h"
#include "cli_support.h"
#include "store_support.h"
#include "test_support.h"

using namespace Qt::StringLiterals;

namespace {
using Result = moebench::test::CliResult;
using moebench::test::run_cli;
QString write(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
  return moebench::test::write_file(dir, name, text);
}
// The shared tiny config (tests/data/tiny.toml), run for 3 steps without intermediate evals.
const QString kTiny = QString::fromUtf8(moebench::test::tiny_config_path());
const QStringList kShort = {u"--set"_s, u"train.steps=3"_s, u"--set"_s, u"train.eval_every=0"_s, u"--set"_s,
                            u"store.enabled=false"_s};

QByteArray md5(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return "<unreadable>";
  return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Md5).toHex();
}

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
    // over the config limits (docs/limits.md): toml++ would overflow its stack or the
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

  // Every layout error (batch, experts and EP size against the rank count, nodes against the
  // ranks) is found by `validate --ranks N` and by `run` before any rank starts: one message
  // with file:line and key, exit 2, and no rank's output.
  void layout_errors_are_found_before_launch_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");
    const QString qs = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml");
    QTest::newRow("batch over 4 ranks") << QStringList{qs, "--set", "train.batch_size=2"}
                                        << "--set train.batch_size: the global batch must divide over the 4 data-parallel ranks";
    QTest::newRow("3 experts over 4 ranks") << QStringList{qs, "--set", "moe.experts=3"}
                                            << "--set moe.experts: the 3 experts of MoE block 1 do not divide over the 4 ranks";
    QTest::newRow("4 experts over 3 ranks") << QStringList{qs, "--ranks", "3", "--set", "cluster.nodes=1", "--set",
                                                           "cluster.devices_per_node=0", "--set", "train.batch_size=15"}
                                            << "quickstart.toml:40: moe.experts: the 4 experts of MoE block 1 do not divide over the 3 ranks";
    QTest::newRow("ep 2 on 3 ranks") << QStringList{qs, "--ranks", "3", "--set", "parallel.ep=2", "--set",
                                                    "cluster.nodes=1", "--set", "cluster.devices_per_node=0", "--set",
                                                    "train.batch_size=15"}
                                     << "--set parallel.ep: must divide the 3 data-parallel ranks";
    QTest::newRow("2 nodes x 2 on 3 ranks") << QStringList{qs, "--ranks", "3", "--set", "train.batch_size=15"}
                                            << "quickstart.toml:18: cluster.devices_per_node: cluster.nodes x devices_per_node = 4 must equal run.ranks = 3";
  }
  void layout_errors_are_found_before_launch() {
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    for (const QString verb : {"validate", "plan", "run"}) {
      QStringList a = QStringList{verb} + args;
      if (verb == u"run"_s) a += QStringList{"--out", dir.filePath("out"), "--db", dir.filePath("runs.db")};
      const Result r = run_cli(a);
      QVERIFY2(r.code == 2, qPrintable(verb + ": " + r.err));
      QVERIFY2(r.err.contains(expected), qPrintable(verb + ": " + r.err));
      if (verb == u"run"_s)  // said once, by the command itself: no rank started
        QVERIFY2(r.err.count(expected) == 1 && !r.err.contains("failed") && !r.err.contains("MPI_ABORT") &&
                     r.out.isEmpty(),
                 qPrintable(r.out + r.err));
    }
    QVERIFY2(!QFile::exists(dir.filePath("out")) && !QFile::exists(dir.filePath("runs.db")),
             "run created outputs before refusing the config");
  }

  // Local launches beyond 8 ranks per core, or beyond the memory available, are refused
  // before anything starts (the output directory is not even created), naming the bound
  // and the override.
  void launch_bounds_refuse_before_starting() {
    QTemporaryDir dir;
    const int ranks = 16 * QThread::idealThreadCount();
    const QString n = QString::number(ranks);
    Result r = run_cli({"run", kTiny, "--ranks", n, "--set", "moe.experts=" + n, "--set", "train.batch_size=" + n,
                        "--out", dir.filePath("out")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("refusing to start " + n + " local ranks") && r.err.contains("at most 8 ranks per core") &&
                 r.err.contains("--oversubscribe-ok"),
             qPrintable(r.err));
    r = run_cli({"run", kTiny, "--ranks", "2", "--set", "model.hidden=65536", "--set", "model.heads=1", "--out",
                 dir.filePath("out")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("refusing to start 2 local ranks: they need about") && r.err.contains("is available"),
             qPrintable(r.err));
    QVERIFY(!QFile::exists(dir.filePath("out")));
  }

  // An output directory holding a run is refused unless --resume or --overwrite; two runs
  // never share one; a resume with nothing left to train says so.
  void output_directory_is_protected() {
    QTemporaryDir dir;
    const QString out = dir.filePath("out");
    const QStringList base = QStringList{"run", kTiny, "--out", out} + kShort;
    Result r = run_cli(base);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QFile model(out + "/checkpoints/step_000003/model.safetensors");
    QVERIFY(model.open(QIODevice::ReadOnly));
    const QByteArray first = model.readAll();
    model.close();
    r = run_cli(base + QStringList{"--set", "run.seed=99"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(out + " holds checkpoints of an earlier run (latest step_000003)"), qPrintable(r.err));
    QVERIFY(model.open(QIODevice::ReadOnly));
    QVERIFY2(model.readAll() == first, "a refused run changed the checkpoint");
    model.close();
    r = run_cli(base + QStringList{"--resume", out});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("is at step 3 and train.steps is 3: nothing left to train"), qPrintable(r.err));
    r = run_cli(base + QStringList{"--resume", out, "--steps", "5"});
    QVERIFY2(r.code == 0 && r.out.contains("resumed at step 3"), qPrintable(r.err));
    r = run_cli(base + QStringList{"--overwrite", "--set", "run.seed=99"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(!QFile::exists(out + "/checkpoints/step_000005"));  // the earlier run's checkpoints are gone
    QVERIFY(model.open(QIODevice::ReadOnly));
    QVERIFY2(model.readAll() != first, "--overwrite kept the old checkpoint");
    QCOMPARE(run_cli(base + QStringList{"--overwrite", "--resume", out}).code, 2);  // exclusive

    // A second run while the first holds the directory.
    QProcess first_run;
    first_run.start(QStringLiteral(MOEBENCH_CLI), QStringList{"run", kTiny, "--out", dir.filePath("busy"), "--steps",
                                                              "1000000", "--set", "store.enabled=false"});
    QString seen;
    while (!seen.contains("step ") && first_run.waitForReadyRead(30000)) seen += first_run.readAllStandardOutput();
    const qint64 holder = first_run.processId();
    r = run_cli(QStringList{"run", kTiny, "--out", dir.filePath("busy")} + kShort);
    first_run.terminate();
    first_run.waitForFinished(30000);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(dir.filePath("busy") + " is in use by another moebench run (pid " +
                            QString::number(holder) + ";"),
             qPrintable(r.err));
  }

  void bad_usage_exits_2() {
    QCOMPARE(run_cli({u"run"_s}).code, 2);
    QCOMPARE(run_cli({u"run"_s, u"x.toml"_s, u"--steps"_s, u"-3"_s}).code, 2);
    Result r = run_cli({u"validate"_s, u"/nonexistent/x.toml"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"/nonexistent/x.toml"_s), qPrintable(r.err));
  }

  // storage.sparse = "ssd" (MoESys hierarchical storage, storage/expert_state_tier.h) through the
  // CLI: a run killed with SIGKILL in the middle of a record's write-back (its temp file written,
  // not yet renamed: MOEBENCH_KILL_IN_WRITE) resumes from its last checkpoint with the losses of
  // an uninterrupted run; the step lines and `runs show` carry the host cache's counters.
  void ssd_run_killed_in_write_back_resumes() {
    QTemporaryDir dir;
    QDir(dir.path()).mkdir(u"ssd"_s);
    QDir(dir.path()).mkdir(u"ssd_ref"_s);
    const QString db = dir.filePath(u"runs.db"_s);
    // 4 experts (tiny.toml) in a cache of one: 3 write-backs a step without prefetch, after the
    // 4 first records; write 15 is in step 4's update, after the checkpoint of step 2.
    auto args = [&](const QString& out, const QString& ssd) {
      return QStringList{u"run"_s, kTiny, u"--ranks"_s, u"1"_s, u"--out"_s, out, u"--db"_s, db,
                         u"--steps"_s, u"6"_s, u"--set"_s, u"train.checkpoint_every=2"_s, u"--set"_s,
                         u"train.eval_every=0"_s, u"--set"_s, u"storage.sparse=ssd"_s, u"--set"_s,
                         u"storage.ssd_dir="_s + dir.filePath(ssd), u"--set"_s, u"storage.sparse_prefetch=false"_s,
                         u"--set"_s, u"storage.host_cache_bytes=50304"_s};
    };
    auto losses = [](const QString& out) {
      QMap<int, QString> by_step;
      for (const QString& line : out.split(u'\n'))
        if (line.startsWith(u"step "_s)) by_step[line.section(u' ', 1, 1).section(u'/', 0, 0).toInt()] =
                                              line.section(u'|', 1, 1).trimmed();
      return by_step;
    };
    const Result ref = run_cli(args(dir.filePath(u"ref"_s), u"ssd_ref"_s));
    QVERIFY2(ref.code == 0, qPrintable(ref.err));
    QVERIFY2(ref.out.contains(u"states hit  25%"_s), qPrintable(ref.out));  // 1 of 4 records cached
    QProcess killed;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(u"MOEBENCH_KILL_IN_WRITE"_s, u"15"_s);
    killed.setProcessEnvironment(env);
    const QString out = dir.filePath(u"out"_s);
    killed.start(QStringLiteral(MOEBENCH_CLI), args(out, u"ssd"_s));
    QVERIFY(killed.waitForFinished(120000));
    QCOMPARE(killed.exitStatus(), QProcess::CrashExit);
    const QStringList temps = QDir(dir.filePath(u"ssd/rank0"_s)).entryList({u"*.tmp"_s});
    QCOMPARE(temps.size(), 1);  // killed between the temp file and its rename
    const Result resumed = run_cli(args(out, u"ssd"_s) + QStringList{u"--resume"_s, out});
    QVERIFY2(resumed.code == 0 && resumed.out.contains(u"resumed at step 2"_s), qPrintable(resumed.err + resumed.out));
    const QMap<int, QString> got = losses(resumed.out), expected = losses(ref.out);
    QCOMPARE(got.firstKey(), 3);
    for (int step = 3; step <= 6; ++step) QCOMPARE(got.value(step), expected.value(step));
    QVERIFY(QDir(dir.filePath(u"ssd/rank0"_s)).entryList({u"*.tmp"_s}).isEmpty());  // removed on open
    const Result show = run_cli({u"runs"_s, u"show"_s, u"1"_s, u"--db"_s, db});
    // 1 of 4 records cached each step; 3 read and 3 written back, 50344 bytes each (header included).
    QVERIFY2(show.code == 0 && show.out.contains(u"SSD tier     host-cache hit rate 25.0%, read 0.151 MB/step, "
                                                  "written 0.151 MB/step"_s),
             qPrintable(show.out));
  }

  // run.device = "cuda" says once what is missing on this build or machine (no CUDA build, no
  // GPU; on one rank and on two, data_centric's pulls included) or, on any machine, what the GPU
  // path cannot train (bf16 experts of a width not a multiple of 8), exits 2 and writes nothing;
  // so do bench gemm, bench moe-layer and bench overlap (before its ranks start). bench moe-layer
  // --precision bf16 is a GPU option: refused on the CPU path.
  void cuda_device_requests_say_what_is_missing() {
    const moebench::CudaAvailability cuda = moebench::cuda_availability();
    const QString missing = !cuda.built ? u"this moebench was built without CUDA"_s
                                        : u"no CUDA device is visible on this machine"_s;
    QTemporaryDir dir;
    const QString out = dir.filePath(u"out"_s), db = dir.filePath(u"runs.db"_s);
    for (const QString& ranks : {u"1"_s, u"2"_s}) {
      if (cuda.built && cuda.devices > 0) break;  // they train there
      const QString said = u"run.device = \"cuda\": "_s + missing;
      const Result r = run_cli(QStringList{u"run"_s, kTiny, u"--ranks"_s, ranks, u"--out"_s, out, u"--db"_s, db,
                                           u"--set"_s, u"run.device=cuda"_s, u"--set"_s, u"strategy.name=data_centric"_s});
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.contains(said), qPrintable(r.err));
      QCOMPARE(r.err.count(said), 1);
      QVERIFY(!QFile::exists(out));
      QVERIFY(!QFile::exists(db));
    }
    {  // bf16's expert GEMMs want rows of a multiple of 8 elements: said on any machine
      const Result r = run_cli({u"run"_s, kTiny, u"--out"_s, out, u"--db"_s, db, u"--set"_s, u"run.device=cuda"_s,
                                u"--set"_s, u"run.precision=bf16"_s, u"--set"_s, u"model.hidden=36"_s});
      QCOMPARE(r.code, 2);
      const QString said = u"the experts' bf16 GEMMs need model.hidden (36) and each rank's expert FFN width (72 = "
                           u"model.ffn_mult x model.hidden) to be multiples of 8"_s;
      QVERIFY2(r.err.contains(said), qPrintable(r.err));
      QCOMPARE(r.err.count(said), 1);
      QVERIFY(!QFile::exists(out));
    }
    Result r = run_cli({u"bench"_s, u"moe-layer"_s, u"--precision"_s, u"bf16"_s, u"--iters"_s, u"1"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"--precision bf16 needs --device cuda"_s), qPrintable(r.err));
    QVERIFY2(r.out.isEmpty(), qPrintable(r.out));
    r = run_cli({u"bench"_s, u"moe-layer"_s, u"--expert-gemms"_s, u"per_expert"_s, u"--iters"_s, u"1"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"--expert-gemms per_expert needs --device cuda"_s), qPrintable(r.err));
    r = run_cli({u"bench"_s, u"moe-layer"_s, u"--profile"_s, u"--iters"_s, u"1"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"--profile needs --device cuda"_s), qPrintable(r.err));
    if (cuda.built && cuda.devices > 0) return;  // bench gemm / moe-layer --device cuda then measure the GPU
    r = run_cli({u"bench"_s, u"moe-layer"_s, u"--device"_s, u"cuda"_s, u"--iters"_s, u"1"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"bench moe-layer --device cuda: "_s + missing), qPrintable(r.err));
    QCOMPARE(r.err.count(missing), 1);
    r = run_cli({u"bench"_s, u"moe-layer"_s, u"--device"_s, u"cuda"_s, u"--precision"_s, u"bf16"_s, u"--iters"_s,
                 u"1"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"bench moe-layer --device cuda: "_s + missing), qPrintable(r.err));
    r = run_cli({u"bench"_s, u"gemm"_s, u"--device"_s, u"cuda"_s, u"--iters"_s, u"1"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"bench gemm --device cuda: "_s + missing), qPrintable(r.err));
    r = run_cli({u"bench"_s, u"gemm"_s, u"--device"_s, u"cuda"_s, u"--db"_s, db});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"not with --device cuda"_s), qPrintable(r.err));
    QVERIFY(!QFile::exists(db));
    // bench overlap on the GPU (run.device): said once, before any rank starts
    r = run_cli({u"bench"_s, u"overlap"_s, kTiny, u"--ranks"_s, u"2"_s, u"--set"_s, u"run.device=cuda"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"run.device = \"cuda\": "_s + missing), qPrintable(r.err));
    QCOMPARE(r.err.count(missing), 1);
  }

  // A word that is no sub-command is named as such, at every level.
  void unknown_sub_command_is_named_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");
    QTest::newRow("top") << QStringList{u"frobnicate"_s}
                         << u"moebench: unknown sub-command 'frobnicate' (expected one of: run, ablate, validate, "
                            "bench, runs, trace, export, plan, simulate, calibrate, infer, launch)"_s;
    QTest::newRow("runs") << QStringList{u"runs"_s, u"frob"_s}
                          << u"moebench runs: unknown sub-command 'frob' (expected one of: list, show, compare, "
                             "roofline, delete, import)"_s;
    QTest::newRow("bench") << QStringList{u"bench"_s, u"gemmm"_s, u"--iters"_s, u"1"_s}
                           << u"moebench bench: unknown sub-command 'gemmm'"_s;
  }
  void unknown_sub_command_is_named() {
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    const Result r = run_cli(args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.startsWith(expected), qPrintable(r.err));
  }

  // Every option that takes a value, given an empty one ("--steps=", "--steps ''") or none at
  // the end of the line, is refused by name (exit 2) before anything runs; so is an empty
  // positional argument.
  void empty_values_are_refused_data() {
    QTest::addColumn<QStringList>("args");    // a command line without the option
    QTest::addColumn<QString>("option");
    const QStringList run = {u"run"_s, kTiny}, ablate = {u"ablate"_s, kTiny, u"--vary"_s, u"train.lr=1e-3,2e-3"_s};
    const QStringList trace = {u"trace"_s, u"1"_s, u"-o"_s, u"t.json"_s}, gemm = {u"bench"_s, u"gemm"_s};
    const QStringList layer = {u"bench"_s, u"moe-layer"_s}, comm = {u"bench"_s, u"comm"_s};
    const QList<std::pair<QStringList, QStringList>> table = {
        {run, {u"--set"_s, u"--steps"_s, u"--ranks"_s, u"--out"_s, u"--db"_s, u"--experiment"_s, u"--resume"_s,
               u"--stop-at"_s}},
        {ablate, {u"--vary"_s, u"--set"_s, u"--steps"_s, u"--experiment"_s, u"--db"_s}},
        {{u"validate"_s, kTiny}, {u"--set"_s}},
        {{u"plan"_s, kTiny}, {u"--set"_s}},
        {{u"runs"_s, u"list"_s}, {u"--db"_s, u"--experiment"_s}},
        {{u"runs"_s, u"show"_s, u"1"_s}, {u"--db"_s}},
        {{u"runs"_s, u"compare"_s, u"1"_s, u"2"_s}, {u"--db"_s}},
        {{u"runs"_s, u"delete"_s, u"1"_s}, {u"--db"_s}},
        {trace, {u"--db"_s, u"--steps"_s}},
        {{u"trace"_s, u"1"_s}, {u"-o"_s, u"--output"_s}},
        {{u"export"_s, u"1"_s}, {u"--csv"_s}},
        {{u"export"_s, u"1"_s, u"--csv"_s, u"d"_s}, {u"--db"_s}},
        {gemm, {u"--threads"_s, u"--iters"_s, u"--db"_s}},
        {layer, {u"--tokens"_s, u"--hidden"_s, u"--ffn-mult"_s, u"--experts"_s, u"--top-k"_s, u"--threads"_s,
                 u"--iters"_s, u"--device"_s, u"--precision"_s}},
        {comm, {u"--op"_s, u"-b"_s, u"--maxbytes"_s, u"-i"_s, u"-f"_s, u"-n"_s, u"-w"_s, u"-c"_s, u"--backend"_s}},
        {{u"bench"_s, u"recording"_s, kTiny}, {u"--set"_s, u"--steps"_s, u"--reps"_s}},
    };
    for (const auto& [args, options] : table)
      for (const QString& option : options)
        QTest::addRow("%s %s", qPrintable(args.mid(0, args[0] == u"bench"_s || args[0] == u"runs"_s ? 2 : 1).join(u' ')),
                      qPrintable(option))
            << args << option;
  }
  void empty_values_are_refused() {
    QFETCH(QStringList, args);
    QFETCH(QString, option);
    QTemporaryDir dir;  // nothing may be written, wherever it runs
    for (const QStringList& given : {QStringList{option + u"="_s}, QStringList{option, QString()}, QStringList{option}}) {
      QProcess p;
      p.setWorkingDirectory(dir.path());
      p.start(QStringLiteral(MOEBENCH_CLI), args + given);
      QVERIFY(p.waitForFinished(60000));
      const QString err = QString::fromUtf8(p.readAllStandardError());
      QVERIFY2(p.exitCode() == 2 && err.contains(option + u" needs a value, and got "_s),
               qPrintable((args + given).join(u' ') + u" -> "_s + QString::number(p.exitCode()) + u": "_s + err));
    }
    QCOMPARE(QDir(dir.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries), QStringList{});
  }
  void empty_positional_is_refused() {
    for (const QStringList& args : {QStringList{u"runs"_s, u"show"_s, QString()},
                                    QStringList{u"trace"_s, QString(), u"-o"_s, u"t.json"_s},
                                    QStringList{u"validate"_s, QString()}}) {
      const Result r = run_cli(args);
      QVERIFY2(r.code == 2 && r.err.contains(u" is empty"_s), qPrintable(r.err));
    }
  }

  // A store whose tables were damaged by another program: every verb names the damage, exits
  // 1 and leaves the file byte for byte as it was, with no -wal, -shm, export folder or trace
  // file left behind.
  void damaged_store_is_left_unchanged_data() {
    QTest::addColumn<QString>("damage");
    QTest::addColumn<QString>("expected");
    QTest::newRow("dropped table") << u"DROP TABLE metrics"_s << u"schema damaged (table metrics missing); left unchanged"_s;
    QTest::newRow("dropped column") << u"ALTER TABLE runs DROP COLUMN git_rev"_s
                                    << u"schema damaged (column runs.git_rev missing); left unchanged"_s;
  }
  void damaged_store_is_left_unchanged() {
    QFETCH(QString, damage);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString db = dir.filePath(u"x.db"_s);
    moebench::test::write_small_store(db.toStdString());
    QCOMPARE(moebench::test::raw_rows(db.toStdString(), damage.toStdString()), QStringList{});
    const QByteArray before = md5(db);
    const QStringList verbs[] = {
        {u"runs"_s, u"list"_s},
        {u"runs"_s, u"show"_s, u"1"_s},
        {u"runs"_s, u"compare"_s, u"1"_s, u"1"_s},
        {u"runs"_s, u"delete"_s, u"1"_s},
        {u"trace"_s, u"1"_s, u"-o"_s, dir.filePath(u"t.json"_s)},
        {u"export"_s, u"1"_s, u"--csv"_s, dir.filePath(u"csv"_s)},
        {u"run"_s, kTiny, u"--steps"_s, u"2"_s, u"--out"_s, dir.filePath(u"out"_s)},
    };
    for (const QStringList& verb : verbs) {
      const Result r = run_cli(verb + QStringList{u"--db"_s, db});
      QVERIFY2(r.code == 1 && r.err.contains(u"moebench: "_s + db + u": "_s + expected),
               qPrintable(verb.join(u' ') + u" -> "_s + QString::number(r.code) + u": "_s + r.err));
      QCOMPARE(md5(db), before);
      QStringList left = QDir(dir.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries);
      left.removeAll(u"out"_s);  // `run` made its output folder before it opened the store
      QCOMPARE(left, QStringList{u"x.db"_s});
    }
  }

  // The run's process exited but is not reaped (as under an init that does not reap): the run
  // shows FAILED, and its duration is up to its last recorded step, not a clock still running.
  void vanished_run_shows_failed_with_its_duration() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    moebench::test::ChildProcess child;
    {
      moebench::RunStore store(db.toStdString());
      moebench::RunInfo info;
      info.name = "crashed";
      info.pid = child.pid();
      info.start_time = 1700000000.0;
      const int64_t run = store.create_run(info).id;
      for (int step = 1; step <= 3; ++step) store.log_step(run, {{"loss", step, 1.0, 1700000000.0 + step}}, {}, {}, {});
    }
    child.exit_now();
    QVERIFY(child.wait_for_zombie());
    for (int i = 0; i < 2; ++i) {
      if (i) QThread::msleep(1100);
      Result r = run_cli({u"runs"_s, u"list"_s, u"--db"_s, db});
      QVERIFY2(r.code == 0 && r.out.contains(u"FAILED"_s) && r.out.contains(u"3.0s"_s), qPrintable(r.out + r.err));
      r = run_cli({u"runs"_s, u"show"_s, u"crashed"_s, u"--db"_s, db});
      QVERIFY2(r.code == 0 && r.out.contains(u"status       FAILED"_s) && r.out.contains(u"(3.0s)\n"_s),
               qPrintable(r.out + r.err));
    }
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
  // came from, and its summary line gives the model FLOPs utilisation against it: tokens/s x the
  // model FLOPs per token it printed, over that rate.
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
    const QString done = r.out.section(u"done: "_s, 1).section(u'\n', 0, 0);
    const double tok_s = done.section(u" tok/s"_s, 0, 0).section(u' ', -1).toDouble();
    const double gflop = r.out.section(u"model FLOPs per token: "_s, 1).section(u' ', 0, 0).toDouble();
    const double mfu = done.section(u"| MFU "_s, 1).section(u'%', 0, 0).toDouble();
    QVERIFY2(tok_s > 0 && gflop > 0 && done.contains(u"% of this host's recorded sgemm rate ("_s), qPrintable(r.out));
    const double expected = 100.0 * tok_s * gflop / std::stod(peak);  // GFLOP/s over GFLOP/s
    QVERIFY2(std::abs(mfu - expected) <= 0.05 + 1e-3 * expected, qPrintable(QString("MFU %1%, expected %2% from: %3")
                                                                              .arg(mfu).arg(expected).arg(r.out)));
  }

  // A GPU run (run.device = "cuda") records no peak_gflops: the host's recorded rate is the CPU's
  // sgemm, not its GPU's.
  void a_gpu_run_carries_no_cpu_gemm_rate() {
    QTemporaryDir dir;
    const std::string db = dir.filePath(u"runs.db"_s).toStdString();
    {
      moebench::RunStore store(db);
      moebench::record_gemm_rate(store, 123.0, 1, {{"64x64x64", 123.0}});
    }
    for (const char* device : {"cpu", "cuda"}) {
      const moebench::Config cfg =
          moebench::load_config(kTiny.toStdString(), {std::string("run.device=") + device, "store.db=" + db,
                                                      std::string("run.name=") + device});
      moebench::RunRecorder recorder(cfg, 1);
      recorder.on_setup("1 rank", nullptr);
      recorder.finish(moebench::RunStatus::finished);
    }
    moebench::RunStore store(db, moebench::RunStore::Mode::read_only);
    for (const auto& run : store.list_runs(u"default"_s.toStdString())) {
      bool peak = false;
      for (const auto& [key, value] : store.params(run.id)) peak = peak || key == "peak_gflops";
      QVERIFY2(peak == (run.name == "cpu"), run.name.c_str());
    }
    QCOMPARE(store.list_runs(u"default"_s.toStdString()).size(), size_t(2));
  }

  // The local launcher's memory check counts what a rank keeps in host memory: everything on
  // the CPU; on a GPU (run.device = "cuda") only the corpus and the checkpoint's buffers. A tiny
  // model with 3 TiB of activations is refused on the CPU and passes the check on cuda (which
  // then says what is missing here: the CUDA build or a GPU).
  void a_gpu_run_is_checked_for_the_host_memory_it_uses() {
    const moebench::CudaAvailability cuda = moebench::cuda_availability();
    if (cuda.built && cuda.devices > 0) QSKIP("a GPU is visible: the cuda run would start");
    QTemporaryDir dir;
    const QStringList huge = {u"run"_s, kTiny, u"--set"_s, u"model.seq_len=4096"_s, u"--set"_s,
                              u"train.batch_size=4096"_s, u"--set"_s, u"store.enabled=false"_s, u"--out"_s,
                              dir.filePath(u"out"_s)};
    Result r = run_cli(huge);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"refusing to start 1 rank: they need about"_s) &&
                 r.err.contains(u"TiB of activations and workspace"_s),
             qPrintable(r.err));
    r = run_cli(huge + QStringList{u"--set"_s, u"run.device=cuda"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(!r.err.contains(u"refusing to start"_s) && r.err.contains(u"run.device = \"cuda\": "_s), qPrintable(r.err));
    QVERIFY(!QFile::exists(dir.filePath(u"out"_s)));
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
