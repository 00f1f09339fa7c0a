// ctest-labels: unit
// The Janus plan (strategies/janus.h: R, SIGCOMM'23 eq. 1, with the expert_centric and
// data_centric predictions, PREDICTED traffic §5.1.3): Table 1 and §7.5's PR-MoE decisions
// reproduced from sample_configs/models, R and the predicted traffic on hand-computed rows,
// and `moebench plan --json`.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "moebench/config/config_loader.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/strategies/janus.h"
#include "moebench/strategies/registry.h"
#include "test_support.h"

using namespace Qt::StringLiterals;
using namespace moebench;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string model_config(const char* name) {
  return std::string(MOEBENCH_SOURCE_DIR "/sample_configs/models/") + name;
}

// The 32-GPU row of Table 1: 4 machines x 8, #Expert = #GPU, B sequences per GPU kept.
std::vector<std::string> gpus32(int b) {
  return {"run.ranks=32", "cluster.nodes=4", "moe.experts=32", "train.batch_size=" + std::to_string(b * 32)};
}

std::vector<JanusBlockPlan> plan_of(const Config& c) { return janus_plan(c, cluster_model(c)); }

double round2(double x) { return std::round(x * 100.0) / 100.0; }

struct Totals {
  double ec_gib = 0, dc_gib = 0;
};
Totals totals(const std::vector<JanusBlockPlan>& plan) {
  Totals t;
  for (const auto& p : plan) {
    t.ec_gib += p.expert_centric.machine.inter / kGiB;
    t.dc_gib += p.data_centric.machine.inter / kGiB;
  }
  return t;
}
}  // namespace

class TestPlan : public QObject {
  Q_OBJECT

 private slots:
  void table1_traffic_from_the_sample_configs_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("b");  // sequences per GPU
    QTest::addColumn<bool>("gpus32");
    QTest::addColumn<int>("moe_blocks");
    QTest::addColumn<double>("ec_gib");
    QTest::addColumn<double>("dc_gib");
    QTest::addColumn<double>("r");
    QTest::newRow("MoE-BERT 16") << u"moe_bert.toml"_s << 256 << false << 4 << 6.0 << 0.56 << 10.67;
    QTest::newRow("MoE-BERT 32") << u"moe_bert.toml"_s << 256 << true << 4 << 9.0 << 1.69 << 5.33;
    QTest::newRow("MoE-GPT 16") << u"moe_gpt.toml"_s << 256 << false << 1 << 1.5 << 0.14 << 10.67;
    QTest::newRow("MoE-GPT 32") << u"moe_gpt.toml"_s << 256 << true << 1 << 2.25 << 0.42 << 5.33;
    QTest::newRow("MoE-Transformer-xl 16") << u"moe_transformer_xl.toml"_s << 64 << false << 12 << 6.0 << 0.19 << 32.0;
    QTest::newRow("MoE-Transformer-xl 32") << u"moe_transformer_xl.toml"_s << 64 << true << 12 << 9.0 << 0.56 << 16.0;
  }
  void table1_traffic_from_the_sample_configs() {
    QFETCH(QString, file);
    QFETCH(int, b);
    QFETCH(bool, gpus32);
    QFETCH(int, moe_blocks);
    QFETCH(double, ec_gib);
    QFETCH(double, dc_gib);
    QFETCH(double, r);
    const Config c = load_config(model_config(file.toUtf8().constData()), gpus32 ? ::gpus32(b) : std::vector<std::string>{});
    QCOMPARE(c.run.ranks, gpus32 ? 32 : 16);
    QCOMPARE(c.train.batch_size / c.run.ranks, b);
    const auto plan = plan_of(c);
    QCOMPARE((int)plan.size(), moe_blocks);
    for (const auto& p : plan) {
      QCOMPARE(p.decision.experts, c.run.ranks);  // #Expert = #GPU
      QCOMPARE(p.decision.experts_per_worker, 1);
      QCOMPARE(round2(p.decision.R), r);
      QCOMPARE(p.decision.paradigm, std::string("data_centric"));
    }
    const Totals t = totals(plan);
    QCOMPARE(round2(t.ec_gib), ec_gib);
    QCOMPARE(round2(t.dc_gib), dc_gib);
  }

  void pr_moe_picks_data_centric_then_expert_centric() {
    const Config c = load_config(model_config("pr_moe_transformer_xl.toml"));
    const auto plan = plan_of(c);
    QCOMPARE((int)plan.size(), 4);
    const std::vector<double> r = {4, 4, 1, 1};
    const std::vector<int> e = {1, 1, 4, 4};
    const std::vector<std::string> paradigm = {"data_centric", "data_centric", "expert_centric", "expert_centric"};
    for (size_t i = 0; i < 4; ++i) {
      QCOMPARE(plan[i].decision.R, r[i]);
      QCOMPARE(plan[i].decision.experts_per_worker, e[i]);
      QCOMPARE(plan[i].decision.paradigm, paradigm[i]);
    }
  }

  void R_on_hand_computed_rows_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<double>("e");
    QTest::addColumn<int>("h");
    QTest::addColumn<double>("b");
    QTest::addColumn<int>("s");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("a");  // ffn_mult
    QTest::addColumn<double>("r");
    // R = B*S*k/(a*n*H*E).
    QTest::newRow("BERT 2x8") << 2 << 1.0 << 768 << 256.0 << 128 << 2 << 4 << 32.0 / 3.0;
    QTest::newRow("4x2 E=2") << 4 << 2.0 << 64 << 4.0 << 32 << 1 << 4 << 0.0625;
    QTest::newRow("one machine") << 1 << 1.0 << 128 << 8.0 << 64 << 2 << 4 << 2.0;
    QTest::newRow("ffn_mult 2, E=1/2") << 2 << 0.5 << 100 << 3.0 << 10 << 3 << 2 << 0.45;
    QTest::newRow("8x8 E=4 R=1") << 8 << 4.0 << 1024 << 64.0 << 2048 << 1 << 4 << 1.0;
  }
  void R_on_hand_computed_rows() {
    QFETCH(int, n);
    QFETCH(double, e);
    QFETCH(int, h);
    QFETCH(double, b);
    QFETCH(int, s);
    QFETCH(int, k);
    QFETCH(int, a);
    QFETCH(double, r);
    QCOMPARE(janus_R(b, s, k, n, h, e, a), r);
  }

  // The strategies' predictions on an n x m cluster model, every worker's B*S tokens routed
  // (balanced) to E experts per worker: per machine, expert_centric's inter-node bytes are
  // Comm_EC and data_centric's (node cache) Comm_DC.
  void traffic_on_hand_computed_rows_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("m");
    QTest::addColumn<int>("e");
    QTest::addColumn<int>("h");
    QTest::addColumn<double>("b");
    QTest::addColumn<int>("s");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("a");  // ffn_mult
    QTest::addColumn<double>("ec");  // bytes
    QTest::addColumn<double>("dc");  // bytes
    // T = B*S*k; EC = 2*m*H*T*(n-1)/n*4; DC = (2aH^2 + (a+1)H)*E*m*(n-1)*4.
    QTest::newRow("BERT 2x8") << 2 << 8 << 1 << 768 << 256.0 << 128 << 2 << 4 << 1610612736.0 << 151117824.0;
    QTest::newRow("4x2 E=2") << 4 << 2 << 2 << 64 << 4.0 << 32 << 1 << 4 << 98304.0 << 1588224.0;
    QTest::newRow("one machine") << 1 << 4 << 1 << 128 << 8.0 << 64 << 2 << 4 << 0.0 << 0.0;
    QTest::newRow("ffn_mult 2, E=1") << 2 << 1 << 1 << 100 << 3.0 << 10 << 3 << 2 << 36000.0 << 161200.0;
    QTest::newRow("8x8 E=4 R=1") << 8 << 8 << 4 << 1024 << 64.0 << 2048 << 1 << 4 << 7516192768.0 << 7520780288.0;
  }
  void traffic_on_hand_computed_rows() {
    QFETCH(int, n);
    QFETCH(int, m);
    QFETCH(int, e);
    QFETCH(int, h);
    QFETCH(double, b);
    QFETCH(int, s);
    QFETCH(int, k);
    QFETCH(int, a);
    QFETCH(double, ec);
    QFETCH(double, dc);
    ClusterSpec spec;
    spec.nodes = n;
    spec.devices_per_node = m;
    const ClusterModel cluster(spec);
    MoeContext ctx;
    ctx.experts = e * n * m;
    ctx.C = h;
    ctx.F = a * h;
    for (int r = 0; r < n * m; ++r) ctx.ep_world.push_back(r);
    const CostInputs load{b * s, k};
    StrategyConfig node_cache;  // Janus' Comm_DC: experts pulled once per machine
    node_cache.option("data_centric.hierarchical").b = true;
    QCOMPARE(make_strategy("expert_centric")->predict(load, ctx, cluster).machine.inter, ec);
    QCOMPARE(make_strategy("data_centric", node_cache)->predict(load, ctx, cluster).machine.inter, dc);
  }

  // One expert pulled across machines is exactly what moebench stores: Janus's 8H^2 floats plus
  // the biases, (a+1)H.
  void expert_size_is_what_moebench_pulls() {
    ClusterSpec spec;
    spec.nodes = 2;
    const ClusterModel cluster(spec);
    MoeContext ctx;
    ctx.experts = 2;
    ctx.ep_world = {0, 1};
    for (int a : {4, 2}) {
      const int h = a == 4 ? 768 : 64;
      ctx.C = h;
      ctx.F = a * h;
      const StrategyCost c = make_strategy("data_centric")->predict({8, 1}, ctx, cluster);
      QCOMPARE(c.rank.inter, (2.0 * a * h * h + (a + 1.0) * h) * 4);
    }
  }

  void plan_from_a_config_text() {
    // 2 machines x 2 workers, global batch 8 -> B = 2; S = 32, k = 2, H = 64, E = 4/4 = 1 and 8/4 = 2:
    // R = 128 / (4*2*64*E) = 0.25 and 0.125; threshold 0.2 -> data_centric, expert_centric.
    const Config c = parse_config(
        "[run]\nranks = 4\n[cluster]\nnodes = 2\n[strategy]\nname = \"janus\"\n[strategy.janus]\nthreshold = 0.2\n"
        "[model]\nvocab_size = 64\nseq_len = 32\nhidden = 64\nlayers = 4\nheads = 4\n"
        "[moe]\nmoe_layers = [3, 1]\nexperts = [8, 4]\ntop_k = 2\n[train]\nbatch_size = 8\n",
        "inline.toml");
    const auto plan = janus_plan(c, cluster_model(c));
    QCOMPARE((int)plan.size(), 2);
    QCOMPARE(plan[0].decision.block, 1);  // block order, whatever the order of moe_layers
    QCOMPARE(plan[0].decision.experts, 4);
    QCOMPARE(plan[0].decision.R, 0.25);
    QCOMPARE(plan[0].decision.paradigm, std::string("data_centric"));
    QCOMPARE(plan[1].decision.block, 3);
    QCOMPARE(plan[1].decision.experts_per_worker, 2);
    QCOMPARE(plan[1].decision.R, 0.125);
    QCOMPARE(plan[1].decision.paradigm, std::string("expert_centric"));
    // EC = 2*2*64*128*(1/2)*4 bytes per block, whatever E; DC = (8*64^2 + 5*64)*E*2*1*4.
    QCOMPARE(plan[0].expert_centric.machine.inter, 65536.0);
    QCOMPARE(plan[1].expert_centric.machine.inter, 65536.0);
    QCOMPARE(plan[0].data_centric.machine.inter, 33088.0 * 8);
    QCOMPARE(plan[1].data_centric.machine.inter, 33088.0 * 16);
    // The decisions block_strategies hands to a janus run's trainer are the plan's.
    Config janus = c;
    janus.strategy.name = "janus";
    const auto chosen = block_strategies(janus, 2, 2);
    QCOMPARE(chosen.at(1), std::string("data_centric"));
    QCOMPARE(chosen.at(3), std::string("expert_centric"));
    // R == threshold is not "> threshold": expert-centric.
    const Config at = parse_config(
        "[run]\nranks = 4\n[cluster]\nnodes = 2\n[strategy]\nname = \"janus\"\n[strategy.janus]\nthreshold = 0.25\n"
        "[model]\nvocab_size = 64\nseq_len = 32\nhidden = 64\nlayers = 4\nheads = 4\n"
        "[moe]\nmoe_layers = [1]\nexperts = 4\ntop_k = 2\n[train]\nbatch_size = 8\n",
        "inline.toml");
    QCOMPARE(janus_decisions(at, 2, 2).at(0).paradigm, std::string("expert_centric"));
    // No MoE block: an empty plan. Bad layouts throw.
    const Config dense = parse_config("[moe]\nmoe_layers = []\n", "dense.toml");
    QVERIFY(janus_plan(dense, cluster_model(dense)).empty());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, janus_decisions(c, 0, 2));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, janus_decisions(c, 2, 0));
  }

  void cli_plan_json_agrees() {
    const QString file = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/models/moe_bert.toml");
    QProcess p;
    p.start(QStringLiteral(MOEBENCH_CLI), {u"plan"_s, file, u"--set"_s, u"run.ranks=32"_s, u"--set"_s,
                                          u"cluster.nodes=4"_s, u"--set"_s, u"moe.experts=32"_s, u"--set"_s,
                                          u"train.batch_size=8192"_s, u"--json"_s});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    QCOMPARE(j.at("predicted").get<bool>(), true);
    QCOMPARE(j.at("nodes").get<int>(), 4);
    QCOMPARE(j.at("workers_per_node").get<int>(), 8);
    const Config c = load_config(file.toStdString(), gpus32(256));
    const auto plan = plan_of(c);
    const auto& blocks = j.at("blocks");
    QCOMPARE((int)blocks.size(), (int)plan.size());
    for (size_t i = 0; i < plan.size(); ++i) {
      const JanusDecision& d = plan[i].decision;
      QCOMPARE(blocks[i].at("block").get<int>(), d.block);
      QCOMPARE(blocks[i].at("experts").get<int>(), d.experts);
      QCOMPARE(blocks[i].at("experts_per_worker").get<int>(), d.experts_per_worker);
      QCOMPARE(blocks[i].at("R").get<double>(), d.R);
      QCOMPARE(blocks[i].at("paradigm").get<std::string>(), d.paradigm);
      QCOMPARE(blocks[i].at("ec_bytes").get<double>(), plan[i].expert_centric.machine.inter);
      QCOMPARE(blocks[i].at("dc_bytes").get<double>(), plan[i].data_centric.machine.inter);
      const auto& ec = blocks[i].at("expert_centric");
      QCOMPARE(ec.at("comm_seconds").get<double>(), plan[i].expert_centric.comm_seconds);
      QCOMPARE(ec.at("compute_seconds").get<double>(), plan[i].expert_centric.compute_seconds);
      QCOMPARE(ec.at("rank_intra_bytes").get<double>(), plan[i].expert_centric.rank.intra);
      const auto& dc = blocks[i].at("data_centric");
      QCOMPARE(dc.at("comm_seconds").get<double>(), plan[i].data_centric.comm_seconds);
      QCOMPARE(dc.at("machine_inter_bytes").get<double>(), plan[i].data_centric.machine.inter);
      QVERIFY(plan[i].expert_centric.comm_seconds > 0 && plan[i].data_centric.compute_seconds > 0);
    }
    QCOMPARE(round2(j.at("total").at("ec_gib").get<double>()), 9.0);
    QCOMPARE(round2(j.at("total").at("dc_gib").get<double>()), 1.69);
  }

  void cli_plan_table_and_errors() {
    QProcess p;
    p.start(QStringLiteral(MOEBENCH_CLI),
            {u"plan"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/models/pr_moe_transformer_xl.toml")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY2(out.contains(u"predicted by the Janus model"_s), qPrintable(out));
    QVERIFY2(out.contains(u"E.C. comm ms"_s) && out.contains(u"D.C. comm ms"_s), qPrintable(out));
    QVERIFY2(out.contains(u"expert_centric"_s) && out.contains(u"data_centric"_s) && out.contains(u"total"_s),
             qPrintable(out));
    QProcess bad;
    bad.start(QStringLiteral(MOEBENCH_CLI),
              {u"plan"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/models/moe_gpt.toml"), u"--set"_s,
               u"cluster.nodes=3"_s});
    QVERIFY(bad.waitForFinished(60000));
    QCOMPARE(bad.exitCode(), 2);  // 3 x 8 != 16 ranks: a config error
    QVERIFY(QString::fromUtf8(bad.readAllStandardError()).contains(u"cluster"_s));
  }

  // plan --graph: a 64-rank iteration graph without MPI. Rank 37 (node 4) exchanges counts
  // with the 63 other EP ranks; every MoE block has a forward and a backward exchange; the
  // optimizer comes last, after every gradient all-reduce.
  void cli_plan_graph_for_64_ranks() {
    QProcess p;
    p.start(QStringLiteral(MOEBENCH_CLI),
            {u"plan"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml"), u"--graph"_s, u"37"_s,
             u"--ranks"_s, u"64"_s, u"--set"_s, u"moe.experts=64"_s, u"--set"_s, u"train.batch_size=64"_s, u"--set"_s,
             u"cluster.nodes=8"_s, u"--set"_s, u"cluster.devices_per_node=8"_s, u"--json"_s});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    QCOMPARE(j.at("predicted").get<bool>(), true);
    QCOMPARE(j.at("rank").get<int>(), 37);
    const auto& tasks = j.at("tasks");
    int counts = 0, dispatch = 0, dispatch_grad = 0, reduces = 0, host_reduces = 0;
    for (const auto& t : tasks) {
      const std::string name = t.at("name");
      if (name == "moe.counts") {
        ++counts;
        QCOMPARE((int)t.at("bytes_to_peer").size(), 1);  // a ring all-gather to the next rank
        QCOMPARE(t.at("bytes_to_peer")[0].at("peer").get<int>(), 38);
        QCOMPARE(t.at("bytes_to_peer")[0].at("bytes").get<int>(), 63 * 64 * 8);  // 63 ranks' 64 int64 counts
        QCOMPARE(t.at("role").get<std::string>(), std::string("comm.inter"));
      }
      dispatch += name == "moe.dispatch";
      dispatch_grad += name == "moe.dispatch_grad";
      reduces += name == "grad.allreduce";
      if (name == "grad.norm.ep" || name == "loss.dp") {  // the main thread's small all-reduces
        ++host_reduces;
        QCOMPARE(t.at("role").get<std::string>(), std::string("host"));
      }
    }
    QCOMPARE(counts, 2);  // quickstart: MoE blocks 1 and 3
    QCOMPARE(dispatch, 2);
    QCOMPARE(dispatch_grad, 2);
    QCOMPARE(reduces, 4 + 2);  // the 4 blocks, ln_f and the embeddings
    const auto& last = tasks.back();
    QCOMPARE(last.at("name").get<std::string>(), std::string("optimizer"));
    QCOMPARE(host_reduces, 2);  // over EP and DP (64 ranks each); no TP or PP
    QCOMPARE((int)last.at("deps").size(), reduces + 1);  // every bucket and the tail's task before it (loss.dp)
    QCOMPARE(tasks[(size_t)last.at("deps").back().get<int>()].at("name").get<std::string>(), std::string("loss.dp"));
    QProcess bad;
    bad.start(QStringLiteral(MOEBENCH_CLI),
              {u"plan"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml"), u"--graph"_s, u"4"_s});
    QVERIFY(bad.waitForFinished(60000));
    QCOMPARE(bad.exitCode(), 2);
    QCOMPARE(QString::fromUtf8(bad.readAllStandardError()),
             u"moebench: --graph: rank 4 is outside the 4 ranks of the config (run.ranks)\n"_s);
  }

  // The planner (plan --cluster): on Janus's cluster, MoE-BERT at 32 GPUs (R = 5.33) runs every
  // block data-centric with the node cache, as the paper finds where R > 1; with 2 sequences per
  // GPU (R = 0.04) pulling every expert costs more than moving the tokens, and no block pulls.
  void cli_plan_cluster_follows_R_data() {
    QTest::addColumn<QString>("batch");
    QTest::addColumn<bool>("pulls");
    QTest::newRow("R = 5.33") << u"8192"_s << true;
    QTest::newRow("R = 0.04") << u"64"_s << false;
  }
  void cli_plan_cluster_follows_R() {
    QFETCH(QString, batch);
    QFETCH(bool, pulls);
    QProcess p;
    p.start(QStringLiteral(MOEBENCH_CLI),
            {u"plan"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/models/moe_bert.toml"), u"--cluster"_s,
             QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/clusters/janus.toml"), u"--ranks"_s, u"32"_s,
             u"--set"_s, u"moe.experts=32"_s, u"--set"_s, u"train.batch_size="_s + batch, u"--json"_s});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    QCOMPARE(j.at("predicted").get<bool>(), true);
    QCOMPARE(j.at("blocks").size(), (size_t)4);
    for (const auto& b : j.at("blocks")) {
      const std::string strategy = b.at("strategy");
      QVERIFY2((strategy == "data_centric") == pulls, b.dump().c_str());
      QCOMPARE(b.at("janus_rule").get<std::string>(), std::string(pulls ? "data_centric" : "expert_centric"));
      // The choice is the fastest applicable candidate of that block.
      for (const auto& c : j.at("candidates"))
        if (c.at("applicable").get<bool>())
          QVERIFY(b.at("ms").get<double>() <= c.at("block_ms").at(std::to_string(b.at("block").get<int>())).get<double>());
    }
  }

  // --write-config: the chosen config loads, runs the chosen strategies, and simulating it gives
  // the plan's predicted step; an existing file is replaced only with --force.
  void cli_plan_write_config() {
    QTemporaryDir dir;
    const QString out = dir.filePath(u"planned.toml"_s);
    const QStringList args = {u"plan"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/models/pr_moe_transformer_xl.toml"),
                              u"--cluster"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/clusters/janus.toml"),
                              u"--nodes"_s, u"2"_s, u"--json"_s, u"--write-config"_s, out};
    QProcess p;
    p.start(QStringLiteral(MOEBENCH_CLI), args);
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    const Config planned = load_config(out.toStdString());
    QCOMPARE(planned.strategy.name, j.at("planned_strategy").get<std::string>());
    QCOMPARE(planned.cluster.name, std::string("janus"));
    QCOMPARE(planned.run.ranks, 16);
    if (j.at("mixed").get<bool>()) {
      QCOMPARE(planned.strategy.name, std::string("per_block"));
      std::vector<std::string> chosen;
      for (const auto& b : j.at("blocks")) chosen.push_back(b.at("strategy"));
      QCOMPARE(planned.strategy.option("per_block.blocks").strings, chosen);
    }
    QProcess sim;
    sim.start(QStringLiteral(MOEBENCH_CLI), {u"simulate"_s, out, u"--db"_s, dir.filePath(u"runs.db"_s), u"--json"_s});
    QVERIFY(sim.waitForFinished(120000));
    QVERIFY2(sim.exitCode() == 0, sim.readAllStandardError().constData());
    const auto s = nlohmann::json::parse(sim.readAllStandardOutput().toStdString());
    QCOMPARE(s.at("mean_step_ms").get<double>(), j.at("planned_step_ms").get<double>());
    QProcess again;
    again.start(QStringLiteral(MOEBENCH_CLI), args);
    QVERIFY(again.waitForFinished(120000));
    QCOMPARE(again.exitCode(), 2);
    QVERIFY(QString::fromUtf8(again.readAllStandardError()).contains(u"exists; pass --force to replace it"_s));
    QProcess no_cluster;
    no_cluster.start(QStringLiteral(MOEBENCH_CLI),
                     {u"plan"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml"), u"--write-config"_s,
                      dir.filePath(u"x.toml"_s)});
    QVERIFY(no_cluster.waitForFinished(60000));
    QCOMPARE(no_cluster.exitCode(), 2);
    QCOMPARE(QString::fromUtf8(no_cluster.readAllStandardError()), u"moebench: --write-config needs --cluster (the planner)\n"_s);
  }
  // plan --elastic (cli/plan_elastic.h; MoESys Table III): the UFO tasks 512/256/128/128 on 8
  // ranks get 4/2/1/1, every rank 128 sequences (no predicted bubble); one rank per task has
  // max 512 / mean 256 (bubble 50 %), so the per-rank throughput ratio is 2 (predicted). The
  // printed config lines are a valid config; errors are usage errors (exit 2).
  void cli_plan_elastic() {
    const QString quickstart = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml");
    const QStringList ufo = {u"--set"_s, u"data.tasks=[512,256,128,128]"_s, u"--set"_s, u"train.batch_size=1024"_s,
                             u"--set"_s, u"cluster.nodes=1"_s,  u"--set"_s, u"cluster.devices_per_node=0"_s,
                             u"--set"_s, u"moe.experts=8"_s, u"--ranks"_s, u"8"_s};
    auto plan = [&](const QStringList& extra, int* code) {
      QProcess p;
      p.start(QStringLiteral(MOEBENCH_CLI), QStringList{u"plan"_s, quickstart} + extra);
      p.waitForFinished(60000);
      *code = p.exitCode();
      return QString::fromUtf8(p.readAllStandardOutput()) + QString::fromUtf8(p.readAllStandardError());
    };
    int code = -1;
    const QString json_text = plan(ufo + QStringList{u"--elastic"_s, u"--json"_s}, &code);
    QVERIFY2(code == 0, qPrintable(json_text));
    const auto j = nlohmann::json::parse(json_text.toStdString());
    QCOMPARE(j.at("predicted").get<bool>(), true);
    QCOMPARE(j.at("ranks").get<int>(), 8);
    QCOMPARE(j.at("ranks_per_task").get<std::vector<int>>(), (std::vector<int>{4, 2, 1, 1}));
    const auto& e = j.at("elastic");
    QCOMPARE(e.at("assignment").get<std::vector<std::string>>(),
             (std::vector<std::string>{"0", "0", "0", "0", "1", "1", "2", "3"}));
    QCOMPARE(e.at("load").get<std::vector<long>>(), std::vector<long>(8, 128));
    QCOMPARE(e.at("bubble_share").get<double>(), 0.0);
    const auto& base = j.at("one_rank_per_task");
    QCOMPARE(base.at("max_load").get<long>(), 512L);
    QCOMPARE(base.at("mean_load").get<double>(), 256.0);
    QCOMPARE(base.at("bubble_share").get<double>(), 0.5);
    QCOMPARE(j.at("per_rank_throughput_ratio").get<double>(), 2.0);
    // The config lines run: they load for 8 ranks.
    const std::string lines = j.at("config_lines").get<std::string>();
    const std::string rank_tasks = lines.substr(lines.find("rank_tasks = ") + 13);
    const Config c = load_config(quickstart.toStdString(),
                                 {"data.tasks=[512,256,128,128]", "train.batch_size=1024", "cluster.nodes=1",
                                  "cluster.devices_per_node=0", "moe.experts=8", "run.ranks=8",
                                  "data.rank_tasks=" + rank_tasks.substr(0, rank_tasks.find('\n'))});
    QCOMPARE(c.data.rank_tasks.size(), size_t(8));
    // The table: Fig. 6(b) on 2 ranks merges the light tasks 2:2.
    const QString table = plan({u"--set"_s, u"data.tasks=[4,4,8]"_s, u"--set"_s, u"train.batch_size=16"_s, u"--set"_s,
                                u"cluster.nodes=1"_s, u"--set"_s, u"cluster.devices_per_node=0"_s, u"--ranks"_s, u"2"_s,
                                u"--elastic"_s},
                               &code);
    QVERIFY2(code == 0, qPrintable(table));
    QVERIFY2(table.contains(u"PREDICTED"_s) && table.contains(u"rank_tasks = [\"2\", \"0+1\"]"_s) &&
                 table.contains(u"bubble share 0.0%"_s) && table.contains(u"bubble share 33.3% (3 ranks)"_s) &&
                 table.contains(u"1.500x"_s),
             qPrintable(table));
    // Errors: no tasks; another mode besides.
    QCOMPARE((plan({u"--elastic"_s}, &code), code), 2);
    QVERIFY(plan({u"--elastic"_s}, &code).contains(u"--elastic needs data.tasks"_s));
    QVERIFY(plan(ufo + QStringList{u"--elastic"_s, u"--memory"_s}, &code).contains(u"exclude each other"_s));
    QCOMPARE(code, 2);
  }
};

QTEST_GUILESS_MAIN(TestPlan)
#include "tst_plan.moc"
