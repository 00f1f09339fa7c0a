// ctest-labels: unit slow
// A strategy that lives only in the tests' sources (toy_exchange.cpp) goes through every verb
// with no core file naming it (issue 31: each strategy in one place): its descriptor is known
// to the catalog, its options section parses and validates, and moebench_toy (the CLI's entry
// with the strategy linked in) validates, plans its graph, simulates and trains it on 2 ranks
// with the losses of expert_centric, whose all-to-all-v it reproduces.
#include <QtTest>

#include <QRegularExpression>
#include <QTemporaryDir>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/strategy_spec.h"
#include "moebench/store/run_store.h"
#include "moebench/strategies/registry.h"

using namespace moebench;
using namespace moebench::test;
using namespace Qt::StringLiterals;

namespace {

const QByteArray kConfig =
    "[run]\nname = \"toy\"\nseed = 7\nranks = 2\n[cluster]\nnodes = 1\n[strategy]\nname = \"toy_exchange\"\n"
    "[strategy.toy_exchange]\nchunks = 2\n[model]\nvocab_size = 64\nseq_len = 16\nhidden = 32\nlayers = 2\nheads = 2\n"
    "[moe]\nmoe_layers = [1]\nexperts = 4\ntop_k = 2\n[data]\nsource = \"synthetic\"\ncorpus_tokens = 20000\n"
    "[train]\nbatch_size = 8\nsteps = 4\nwarmup_steps = 1\neval_every = 0\n";

CliResult run_toy(const QStringList& args, const QString& cwd = {}) {
  QProcess p;
  if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
  p.start(QStringLiteral(MOEBENCH_TOY_CLI), args);
  if (!p.waitForFinished(240000)) return {-1, {}, QStringLiteral("timeout")};
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

// The training's loss lines ("step 1/4 | loss 4.1589 | aux ...": step and loss) and the final summary's losses.
QStringList losses(const QString& out) {
  QStringList v;
  static const QRegularExpression step(u"^step +(\\d+)/\\d+ \\| loss ([0-9.]+)"_s, QRegularExpression::MultilineOption);
  for (auto it = step.globalMatch(out); it.hasNext();) {
    const auto m = it.next();
    v << m.captured(1) + u" "_s + m.captured(2);
  }
  static const QRegularExpression done(u"final train loss ([0-9.]+)"_s);
  if (const auto m = done.match(out); m.hasMatch()) v << m.captured(1);
  return v;
}

}  // namespace

class TestCustomStrategy : public QObject {
  Q_OBJECT

 private slots:
  // Registered from this binary's sources: the catalog, its option's default, check and section.
  void registered_from_the_tests_sources() {
    const auto& names = strategy_names();
    QVERIFY(std::find(names.begin(), names.end(), "toy_exchange") != names.end());
    QVERIFY(find_strategy_spec("toy_exchange")->per_block_member);
    QCOMPARE(make_strategy("toy_exchange")->name(), std::string("toy_exchange"));
    QCOMPARE(StrategyConfig{}.option("toy_exchange.chunks").i, 1);
    const Config c = parse_config(kConfig.toStdString(), "toy.toml");
    QCOMPARE(c.strategy.option("toy_exchange.chunks").i, 2);
    QVERIFY(config_to_toml(c).find("[strategy.toy_exchange]\nchunks = 2") != std::string::npos);
    QVERIFY(config_to_toml(c).find("\n# [strategy.expert_centric]  (not read by strategy.name = toy_exchange)") !=
            std::string::npos);
    try {
      parse_config(kConfig.toStdString(), "toy.toml", {"strategy.toy_exchange.chunks=0"});
      QFAIL("chunks = 0 loaded");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find("strategy.toy_exchange.chunks: must be >= 1, got 0") != std::string::npos, e.what());
    }
    try {  // another strategy's section is refused, naming who reads it
      parse_config(kConfig.toStdString(), "toy.toml", {"strategy.name=expert_centric"});
      QFAIL("[strategy.toy_exchange] loaded for expert_centric");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find("[strategy.toy_exchange] does not apply to strategy.name = \"expert_centric\" "
                                          "(it is read by per_block or toy_exchange)") != std::string::npos,
               e.what());
    }
  }

  void validate_plan_graph_and_simulate() {
    QTemporaryDir dir;
    const QString cfg = write_file(dir, u"toy.toml"_s, kConfig);
    CliResult r = run_toy({u"validate"_s, cfg}, dir.path());
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains(u"name = \"toy_exchange\""_s) && r.out.contains(u"chunks = 2"_s), qPrintable(r.out));
    // The plain moebench does not know it: the error lists the strategies it has.
    r = run_cli({u"validate"_s, cfg}, dir.path());
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"unknown section [strategy.toy_exchange]"_s) ||
                 r.err.contains(u"unknown strategy \"toy_exchange\" (known: expert_centric"_s),
             qPrintable(r.err));
    // Rank 1's graph: the toy's own all-to-all tasks, dispatch and combine in two chunks each,
    // forward and backward.
    r = run_toy({u"plan"_s, cfg, u"--graph"_s, u"1"_s, u"--json"_s}, dir.path());
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const nlohmann::json graph = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(graph.at("strategy").get<std::string>(), std::string("toy_exchange"));
    int toy_tasks = 0;
    for (const auto& t : graph.at("tasks")) toy_tasks += t.at("name").get<std::string>().starts_with("toy.") ? 1 : 0;
    QCOMPARE(toy_tasks, 8);
    // The simulator replays the same graph: the block's comm takes time.
    r = run_toy({u"simulate"_s, cfg, u"--steps"_s, u"2"_s, u"--json"_s, u"--db"_s, dir.filePath(u"sim.db"_s)}, dir.path());
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const nlohmann::json sim = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(sim.at("strategy").get<std::string>(), std::string("toy_exchange"));
    QCOMPARE(sim.at("blocks").at(0).at("strategy").get<std::string>(), std::string("toy_exchange"));
    QVERIFY(sim.at("blocks").at(0).at("comm_ms").get<double>() > 0 && sim.at("mean_step_ms").get<double>() > 0);
  }

  // 2 ranks under mpirun (run.ranks = 2: moebench_toy launches itself): the losses of
  // expert_centric on the same config (the same exchange; chunks = 1 as expert_centric's D = 1).
  void trains_on_two_ranks_as_expert_centric() {
    QTemporaryDir dir;
    const QString cfg = write_file(dir, u"toy.toml"_s, kConfig);
    const QString ec = write_file(dir, u"ec.toml"_s,
                                  QByteArray(kConfig).replace("name = \"toy_exchange\"\n[strategy.toy_exchange]\nchunks = 2",
                                                              "name = \"expert_centric\""));
    auto args = [&](const QString& file, const QString& tag) {
      return QStringList{u"run"_s, file, u"--out"_s, dir.filePath(tag), u"--db"_s, dir.filePath(tag + u".db"_s)};
    };
    const CliResult a = run_toy(args(cfg, u"toy"_s) + QStringList{u"--set"_s, u"strategy.toy_exchange.chunks=1"_s}, dir.path());
    QVERIFY2(a.code == 0, qPrintable(a.out + a.err));
    const CliResult b = run_cli(args(ec, u"ec"_s), dir.path(), 240000);
    QVERIFY2(b.code == 0, qPrintable(b.out + b.err));
    // The stored runs: 2 ranks each, the toy's blocks ran the toy, the same loss at every step.
    auto stored = [&](const QString& tag) {
      const RunStore store(dir.filePath(tag + u".db"_s).toStdString());
      const RunInfo run = store.find_run("toy");
      std::vector<double> loss;
      for (const MetricPoint& m : store.metrics(run.id, "loss")) loss.push_back(m.value);
      return std::tuple{run, store.tags(run.id), loss};
    };
    const auto [toy_run, toy_tags, toy_loss] = stored(u"toy"_s);
    const auto [ec_run, ec_tags, ec_loss] = stored(u"ec"_s);
    QCOMPARE(toy_run.ranks, 2);
    QCOMPARE(ec_run.ranks, 2);
    QCOMPARE(toy_run.strategy, std::string("toy_exchange"));
    const std::pair<std::string, std::string> block_tag{"strategy.block.1", "toy_exchange"};
    QVERIFY(std::find(toy_tags.begin(), toy_tags.end(), block_tag) != toy_tags.end());
    QCOMPARE(toy_loss.size(), size_t(4));
    QCOMPARE(toy_loss, ec_loss);
    QCOMPARE(losses(a.out), losses(b.out));  // and what both printed
  }
};

QTEST_GUILESS_MAIN(TestCustomStrategy)
#include "tst_custom_strategy.moc"
