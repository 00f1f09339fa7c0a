// ctest-labels: unit
// Sizes, memory and time budgets (docs/limits.md "Sizes, memory and time"): a flag, key or input
// file that would make a command take GBs of memory or minutes is refused before any work, once,
// with exit 2, naming the flag or key, the value or estimate and the bound. Every command here runs
// under an address-space limit and a time limit (cli_support.h run_cli_capped), so that a
// regression fails within seconds (std::bad_alloc, exit 1, or a timeout) instead of eating the
// machine: infer's prompt files and checkpoint paths, simulate's and plan --graph's estimate,
// the synthetic corpus keys and the corpus in the launch memory check, plan --context's range,
// validate's elastic plan on huge batches, and bench moe-layer's and bench comm's sizes.
#include <QtTest>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "moebench/config/config_loader.h"
#include "moebench/train/trainer.h"
#include "test_support.h"

using namespace Qt::StringLiterals;
using namespace moebench;

namespace {

using test::run_cli_capped;
const QString kTiny = QString::fromUtf8(test::tiny_config_path());
const QString kQuickstart = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml");
const QString kClusters = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/clusters/");
constexpr int kQuick = 60000;  // ms: every refusal takes well under a second; the old code ran for minutes

// Exit 2 with `message` said once on stderr, nothing on stdout.
#define QVERIFY_REFUSED(r, message)                                                                              \
  do {                                                                                                           \
    QVERIFY2((r).code == 2, qPrintable(QString("exit %1: %2").arg((r).code).arg((r).err.left(2000))));         \
    QVERIFY2((r).err.contains(message), qPrintable((r).err.left(2000)));                                        \
    QVERIFY2((r).err.count(u"moebench: "_s) <= 1 && (r).out.isEmpty(), qPrintable((r).out.left(500) + (r).err)); \
  } while (0)

}  // namespace

class TestCliBudgets : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString run_;         // a run of the tiny model (synthetic data, token ids) with one checkpoint
  QString checkpoint_;  // its folder

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const Config cfg = load_config(test::tiny_config_path(), {"train.steps=2", "train.eval_every=0", "store.enabled=false"});
    run_ = dir_.filePath(u"run"_s);
    Trainer trainer(cfg, run_.toStdString());
    checkpoint_ = QString::fromStdString(trainer.run(-1).last_checkpoint);
    QVERIFY(QFile::exists(checkpoint_ + u"/model.safetensors"_s));
  }

  // Item 2: a prompt file is read with a bound; a device or a FIFO is never opened.
  void prompt_files_are_bounded_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("message");
    QTest::newRow("/dev/zero") << u"/dev/zero"_s
                               << u"--prompt-file: /dev/zero: a character device, not a regular file"_s;
    QTest::newRow("FIFO without a writer") << u"DIR/fifo"_s << u"fifo: a FIFO (named pipe), not a regular file"_s;
    QTest::newRow("2 MiB of ids") << u"DIR/big.txt"_s
                                  << u"big.txt: 2097152 bytes is over the limit of 1048576 bytes (1 MiB)"_s;
  }
  void prompt_files_are_bounded() {
    QFETCH(QString, file);
    QFETCH(QString, message);
    QTemporaryDir dir;
    QCOMPARE(mkfifo(dir.filePath(u"fifo"_s).toLocal8Bit().constData(), 0600), 0);
    test::write_file(dir, u"big.txt"_s, QByteArray("1 ").repeated(1 << 20));
    file.replace(u"DIR"_s, dir.path());
    const test::CliResult r = run_cli_capped({u"infer"_s, run_, u"--prompt-file"_s, file}, kQuick);
    QVERIFY_REFUSED(r, message);
  }

  // Item 26: a binary prompt file is quoted printable and cut in the error.
  void binary_prompt_is_quoted_printable() {
    QTemporaryDir dir;
    QByteArray bytes("\x01\xff\x1b[2J");
    bytes += QByteArray(100000, '\x80');
    const QString file = test::write_file(dir, u"bin.dat"_s, bytes);
    const test::CliResult r = run_cli_capped({u"infer"_s, run_, u"--prompt-file"_s, file}, kQuick);
    QVERIFY_REFUSED(r, u"'\\x01\\xff\\x1b[2J\\x80"_s);
    QVERIFY2(r.err.contains(u"... (100006 bytes)' is not a token id"_s), qPrintable(r.err));
    QVERIFY2(r.err.size() < 600, qPrintable(r.err.left(2000)));
    for (const QChar c : r.err) QVERIFY2(c == u'\n' || (c >= u' ' && c < QChar(127)), qPrintable(r.err.left(600)));
  }

  // Item 26: a checkpoint's model.safetensors names its folder; another file says what is wanted.
  void infer_takes_the_model_file() {
    test::CliResult r = run_cli_capped({u"infer"_s, checkpoint_ + u"/model.safetensors"_s, u"--prompt"_s, u"1 2 3"_s,
                                        u"--tokens"_s, u"2"_s, u"--json"_s},
                                       kQuick);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(QString::fromStdString(nlohmann::json::parse(r.out.toStdString()).at("checkpoint").get<std::string>()),
             checkpoint_);
    r = run_cli_capped({u"infer"_s, kTiny}, kQuick);
    QVERIFY_REFUSED(r, u"tiny.toml: a file, not a checkpoint (expected a checkpoint folder holding model.safetensors"_s);
  }

  // Item 3: simulate and plan --graph estimate memory and work before the routing or any graph
  // is built, and refuse over the budget; --steps is bounded.
  void simulation_is_refused_over_its_budget_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    const QString janus = kClusters + u"janus.toml"_s;
    const QStringList big{u"--set"_s, u"moe.experts=16384"_s, u"--set"_s, u"train.batch_size=16384"_s};
    QTest::newRow("simulate 16384 ranks x 16384 experts")
        << QStringList{u"simulate"_s, kQuickstart, u"--cluster"_s, janus, u"--nodes"_s, u"2048"_s, u"--ranks"_s,
                       u"16384"_s} + big
        << u"simulate: 16384 ranks, 1 step: the simulation would take about 16 GiB of memory (4 GiB of routing "
           "counts, 12 GiB of task graphs)"_s;
    QTest::newRow("simulate 100000 ranks")
        << QStringList{u"simulate"_s, kQuickstart, u"--cluster"_s, janus, u"--nodes"_s, u"12500"_s, u"--ranks"_s,
                       u"100000"_s, u"--set"_s, u"moe.experts=100000"_s, u"--set"_s, u"train.batch_size=100000"_s}
        << u"simulate: 100000 ranks, 1 step: the simulation would take about"_s;
    QTest::newRow("simulate 1e9 steps") << QStringList{u"simulate"_s, kQuickstart, u"--steps"_s, u"1000000000"_s}
                                        << u"--steps"_s;
    QTest::newRow("plan --graph of 16384 ranks x 16384 experts")
        << QStringList{u"plan"_s, kQuickstart, u"--graph"_s, u"0"_s, u"--cluster"_s, janus, u"--nodes"_s, u"2048"_s,
                       u"--ranks"_s, u"16384"_s} + big
        << u"plan --graph: rank 0 of 16384: the simulation would take about"_s;
  }
  void simulation_is_refused_over_its_budget() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    QTemporaryDir dir;
    if (args.first() == u"simulate"_s) args << u"--db"_s << dir.filePath(u"runs.db"_s);
    const test::CliResult r = run_cli_capped(args, kQuick);
    QVERIFY_REFUSED(r, message);
    if (!message.startsWith(u"--"_s)) QVERIFY2(r.err.contains(u"(docs/limits.md): lower --ranks"_s), qPrintable(r.err));
    QVERIFY(!QFile::exists(dir.filePath(u"runs.db"_s)));
  }
  // A million experts over 4 ranks is simulated and planned within seconds (the exchange layout
  // was quadratic in the experts per rank).
  void a_million_experts_are_quick() {
    QTemporaryDir dir;
    test::CliResult r = run_cli_capped({u"plan"_s, kQuickstart, u"--graph"_s, u"0"_s, u"--set"_s,
                                        u"moe.experts=1000000"_s},
                                       kQuick);
    QVERIFY2(r.code == 0 && r.out.contains(u"optimizer"_s), qPrintable(QString::number(r.code) + r.err));
    r = run_cli_capped({u"simulate"_s, kQuickstart, u"--set"_s, u"moe.experts=1000000"_s, u"--db"_s,
                        dir.filePath(u"runs.db"_s)},
                       kQuick);
    QVERIFY2(r.code == 0 && r.out.contains(u"PREDICTED"_s), qPrintable(QString::number(r.code) + r.err));
  }

  // Item 5: the synthetic corpus keys are bounded at load (validate says so, as run does).
  void data_keys_are_bounded_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::addColumn<QString>("message");
    QTest::newRow("100000 languages x 100000 tokens")
        << QStringList{u"data.languages=100000"_s, u"model.vocab_size=100000"_s}
        << u"data.languages: data.languages x model.vocab_size x data.branching = 100000 x 100000 x 3 = 3e+10 "
           "entries of the synthetic languages' tables (223.5 GiB per rank); the limit is 67108864"_s;
    QTest::newRow("2e9 corpus tokens") << QStringList{u"data.corpus_tokens=2000000000"_s}
                                       << u"data.corpus_tokens: must be <= 268435456 (2^28 tokens, 1 GiB per rank), "
                                          "got 2000000000 (7.5 GiB per rank)"_s;
    QTest::newRow("branching 100000") << QStringList{u"model.vocab_size=100000"_s, u"data.branching=100000"_s}
                                      << u"data.branching: must be <= 256, got 100000"_s;
  }
  void data_keys_are_bounded() {
    QFETCH(QStringList, sets);
    QFETCH(QString, message);
    QStringList args{u"validate"_s, kQuickstart};
    for (const QString& s : sets) args << u"--set"_s << s;
    const test::CliResult r = run_cli_capped(args, kQuick);
    QVERIFY_REFUSED(r, message);
  }

  // Item 5: the launch memory check counts the corpus (here a 64 GiB sparse text file): refused
  // before any rank starts, nothing created.
  void launch_counts_the_corpus() {
    QTemporaryDir dir;
    QFile text(dir.filePath(u"huge.txt"_s));
    QVERIFY(text.open(QIODevice::WriteOnly) && text.resize(qint64(64) << 30));
    text.close();
    const test::CliResult r =
        run_cli_capped({u"run"_s, kTiny, u"--set"_s, u"data.source=text"_s, u"--set"_s, u"data.path="_s + text.fileName(),
                        u"--set"_s, u"model.vocab_size=256"_s, u"--out"_s, dir.filePath(u"out"_s), u"--db"_s,
                        dir.filePath(u"runs.db"_s)},
                       kQuick);
    QVERIFY_REFUSED(r, u"256 GiB for the corpus"_s);
    QVERIFY(!QFile::exists(dir.filePath(u"out"_s)) && !QFile::exists(dir.filePath(u"runs.db"_s)));
  }

  // Item 10: --context is range-checked before its conversion can clamp or its arithmetic overflow.
  void context_is_range_checked_data() {
    QTest::addColumn<QString>("context");
    QTest::newRow("2^63 - 1") << u"9223372036854775807"_s;
    QTest::newRow("beyond 64 bits") << u"99999999999999999999"_s;
    QTest::newRow("2^40 + 1") << u"1099511627777"_s;
  }
  void context_is_range_checked() {
    QFETCH(QString, context);
    const test::CliResult r =
        run_cli_capped({u"plan"_s, kQuickstart, u"--set"_s, u"cluster.file="_s + kClusters + u"janus_4gpu.toml"_s,
                        u"--context"_s, context},
                       kQuick);
    QVERIFY_REFUSED(r, u"--context: the context length "_s + context + u" is outside [1, 1099511627776] tokens (2^40)"_s);
  }
  void context_at_the_limit_is_planned() {
    const test::CliResult r =
        run_cli_capped({u"plan"_s, kQuickstart, u"--set"_s, u"cluster.file="_s + kClusters + u"janus_4gpu.toml"_s,
                        u"--context"_s, u"1099511627776"_s, u"--json"_s},
                       kQuick);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const nlohmann::json j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(j.at("cp_world_size").get<long long>() > 0 && j.at("network_scale_nodes").get<long long>() > 0);
  }

  // Item 11: the elastic plan of validate no longer loops over every batch value.
  void elastic_plan_of_huge_batches_is_instant() {
    const test::CliResult r = run_cli_capped(
        {u"validate"_s, kQuickstart, u"--set"_s, u"data.tasks=[536870912,536870912,536870912,536870911]"_s, u"--set"_s,
         u"train.batch_size=2147483647"_s},
        20000);
    QVERIFY2(r.code != -1, "validate took more than 20 s");
    QVERIFY2(r.code == 0, qPrintable(r.err));
  }

  // Item 13: bench sizes are checked against the memory this process may use before anything
  // is allocated (under the 4 GiB cap here, whatever the machine has).
  void bench_sizes_are_checked_up_front_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    const QString layer = u"bench moe-layer: T="_s;
    QTest::newRow("100000 experts") << QStringList{u"moe-layer"_s, u"--experts"_s, u"100000"_s}
                                    << layer + u"4096 H=256 A=4 E=100000 K=2 needs about"_s;
    QTest::newRow("hidden 1000000") << QStringList{u"moe-layer"_s, u"--hidden"_s, u"1000000"_s}
                                    << layer + u"4096 H=1000000 A=4 E=8 K=2 needs about"_s;
    QTest::newRow("2^31 - 1 tokens") << QStringList{u"moe-layer"_s, u"--tokens"_s, u"2147483647"_s}
                                     << u"--tokens x --top-k = 4294967294 token copies"_s;
    QTest::newRow("top-k 9 of 8") << QStringList{u"moe-layer"_s, u"--top-k"_s, u"9"_s, u"--experts"_s, u"8"_s}
                                  << u"--top-k 9 must be <= --experts 8"_s;
    QTest::newRow("comm 8G") << QStringList{u"comm"_s, u"--backend"_s, u"local"_s, u"-b"_s, u"8G"_s, u"-e"_s, u"8G"_s}
                             << u"bench comm: --op allreduce at -e 8G needs about 8 GiB for its buffer on each rank"_s;
    QTest::newRow("comm sweep of 2^27 sizes")
        << QStringList{u"comm"_s, u"--backend"_s, u"local"_s, u"-b"_s, u"8"_s, u"-e"_s, u"1G"_s, u"-i"_s, u"8"_s}
        << u"bench comm: -b 8 -e 1G -i 8 asks for more than 1000 sizes"_s;
  }
  void bench_sizes_are_checked_up_front() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    const test::CliResult r = run_cli_capped(QStringList{u"bench"_s} + args, kQuick);
    QVERIFY_REFUSED(r, message);
  }
};

QTEST_GUILESS_MAIN(TestCliBudgets)
#include "tst_cli_budgets.moc"
