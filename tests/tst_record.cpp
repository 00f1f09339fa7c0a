// ctest-labels: mpi slow
// `moebench run` recording into the run store: metrics, spans, traffic and routing of 1 and 4
// ranks; replicated experts' gradient all-reduce recorded per MoE block as the step graph has it
// and counted as the layer's communication on the DDL-roofline; SIGTERM marks the run KILLED
// after its last step is stored; kill -9 leaves a run that the next open marks FAILED with its
// steps kept; `ablate` with 2 x 2 variants, and with repeats (same seed, or --repeat-seeds).
#include <QtTest>

#include <QDir>
#include <QProcess>

#include <csignal>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "moebench/config/config_loader.h"
#include "moebench/perf/ddl_roofline.h"
#include "moebench/store/run_store.h"
#include "moebench/train/step_graph.h"
#include "test_support.h"

using namespace moebench;
using namespace Qt::StringLiterals;

namespace {
QStringList tiny_run(const QString& db, const QString& out, int steps) {
  return {u"run"_s, QString::fromUtf8(test::tiny_config_path()), u"--db"_s, db, u"--out"_s, out,
          u"--steps"_s, QString::number(steps), u"--set"_s, u"train.batch_size=8"_s, u"--set"_s,
          u"train.eval_every=0"_s};
}
struct Result {
  int code;
  QString out, err;
};
Result cli(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(MOEBENCH_CLI), args);
  if (!p.waitForFinished(180000)) return {-1, {}, u"timeout"_s};
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}
// Starts a run and returns once `steps` progress lines were printed.
bool start_and_wait(QProcess& p, const QStringList& args, int steps) {
  p.start(QStringLiteral(MOEBENCH_CLI), args);
  QString out;
  for (int i = 0; i < 600 && out.count(u"\nstep "_s) < steps; ++i) {
    p.waitForReadyRead(100);
    out += QString::fromUtf8(p.readAllStandardOutput());
  }
  return out.count(u"\nstep "_s) >= steps;
}
}  // namespace

class TestRecord : public QObject {
  Q_OBJECT

 private slots:
  void single_rank_run_is_recorded() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    Result r = cli(tiny_run(db, dir.filePath(u"o"_s), 6));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    RunStore store(db.toStdString(), RunStore::Mode::read_only);
    const auto runs = store.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    const RunInfo& run = runs[0];
    QCOMPARE(run.status, RunStatus::finished);
    QVERIFY(run.end_time >= run.start_time);
    // Steps are 1-based, as `run` prints them: loss at 1..6, the eval after step 6 at step 6.
    std::vector<int64_t> loss_steps;
    for (const auto& m : store.metrics(run.id, "loss")) loss_steps.push_back(m.step);
    QCOMPARE(loss_steps, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
    const auto eval = store.metrics(run.id, "eval_loss");
    QCOMPARE(eval.size(), size_t(1));
    QCOMPARE(eval[0].step, int64_t(6));
    QVERIFY2(r.out.contains(u"eval after step 6 | val loss"_s), qPrintable(r.out));
    QCOMPARE(store.steps_with(run.id, RecordTable::spans).front(), int64_t(1));
    QCOMPARE(store.steps_with(run.id, RecordTable::routing), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
    const auto params = store.params(run.id);
    QVERIFY(std::find(params.begin(), params.end(), std::make_pair(std::string("model.hidden"), std::string("32"))) != params.end());
    std::set<std::string> names;
    for (const SpanRow& s : store.spans(run.id)) {
      names.insert(s.name);
      // The tasks' FLOPs are recorded: expert compute has them, communication none.
      if (s.name == "moe.experts") QVERIFY2(s.flops > 0, s.name.c_str());
      if (s.category == "comm") QCOMPARE(s.flops, 0.0);
    }
    for (const char* n : {"step", "forward", "backward", "optimizer"}) QVERIFY2(names.count(n), n);
    // routing: 6 steps x 1 MoE block x 4 experts, kept tokens = tokens x top_k per step.
    const auto routing = store.routing(run.id);
    QCOMPARE(routing.size(), size_t(6 * 4));
    int64_t step1 = 0;
    for (const RoutingRow& row : routing)
      if (row.step == 1) step1 += row.tokens;
    QCOMPARE(step1, int64_t(8 * 16 * 2));
  }

  void four_ranks_ship_spans_traffic_and_routing() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    QStringList args = tiny_run(db, dir.filePath(u"o"_s), 4);
    args << u"--ranks"_s << u"4"_s << u"--set"_s << u"cluster.nodes=2"_s;
    Result r = cli(args);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    RunStore store(db.toStdString(), RunStore::Mode::read_only);
    const RunInfo run = store.list_runs().at(0);
    QCOMPARE(run.ranks, 4);
    QCOMPARE(run.strategy, std::string("expert_centric"));
    std::set<int> span_ranks, routing_sources;
    std::set<std::string> streams;
    for (const SpanRow& s : store.spans(run.id)) span_ranks.insert(s.rank), streams.insert(s.stream);
    QCOMPARE(span_ranks, (std::set<int>{0, 1, 2, 3}));
    // 2 nodes: the EP all-to-alls and the DP all-reduces cross nodes (comm.inter); nothing is
    // node-local. Each pass's tokens come in on the copy role.
    QCOMPARE(streams, (std::set<std::string>{"host", "compute", "comm.inter", "copy"}));
    std::set<std::string> links;
    for (const TrafficRow& t : store.traffic(run.id)) links.insert(t.link);
    QCOMPARE(links, (std::set<std::string>{"inter_node", "intra_node"}));
    for (const RoutingRow& row : store.routing(run.id)) routing_sources.insert(row.source_rank);
    QCOMPARE(routing_sources, (std::set<int>{0, 1, 2, 3}));
  }

  // parallel.ep = 1 on 4 ranks (FasterMoE's DP): each rank's "expert.allreduce" of the MoE
  // block is a host span with the block as its layer, one per step, as in the step graph the
  // simulator replays; the layer's roofline point counts it as communication.
  void replicated_experts_allreduce_per_block() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    QStringList args = tiny_run(db, dir.filePath(u"o"_s), 4);
    args << u"--ranks"_s << u"4"_s << u"--set"_s << u"parallel.ep=1"_s;
    Result r = cli(args);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    RunStore store(db.toStdString(), RunStore::Mode::read_only);
    const RunInfo run = store.list_runs().at(0);
    std::map<int64_t, double> longest;  // step -> the longest expert.allreduce over the ranks
    std::map<std::pair<int64_t, int>, int> per_rank;  // (step, rank) -> expert.allreduce spans
    for (const SpanRow& s : store.spans(run.id))
      if (s.name == "expert.allreduce") {
        QCOMPARE(s.layer, 1);
        QCOMPARE(s.stream, std::string("host"));
        longest[s.step] = std::max(longest[s.step], s.duration);
        ++per_rank[{s.step, s.rank}];
      }
    QCOMPARE(per_rank.size(), size_t(4 * 4));
    for (const auto& [key, n] : per_rank) QCOMPARE(n, 1);
    const Config cfg = load_config(test::tiny_config_path(), {"run.ranks=4", "parallel.ep=1", "train.batch_size=8"});
    for (int rank = 0; rank < 4; ++rank) {
      std::vector<int> layers;
      const TaskGraph g = build_step_graph(cfg, rank);
      for (const GraphTask& t : g.tasks())
        if (t.name == "expert.allreduce") layers.push_back(t.layer);
      QCOMPARE(layers, std::vector<int>{1});
    }
    // Steps 2-4 (step 1 is the warm-up): Lat_comm >= the mean of each step's longest all-reduce.
    double mean = 0;
    for (int64_t step = 2; step <= 4; ++step) mean += longest.at(step) / 3;
    const std::vector<DdlPoint> points = ddl_roofline_points(store, run);
    QCOMPARE(points.at(0).layer, 1);
    QVERIFY2(points[0].has_point(), points[0].reason.c_str());
    QVERIFY2(points[0].lat_comm_s >= mean * (1 - 1e-9),
             qPrintable(u"Lat_comm %1 s, all-reduces %2 s"_s.arg(points[0].lat_comm_s).arg(mean)));
  }

  // monta's level and chunks reach the store per step as metrics "monta.level/block1" and
  // "monta.chunks/block1" (from the ranks, through rank 0's gather): as set, and as the cost
  // model chose under "auto" (O1 always with one chunk).
  void monta_choices_are_stored_per_block() {
    for (const QString& level : {u"O3"_s, u"auto"_s}) {
      QTemporaryDir dir;
      const QString db = dir.filePath(u"runs.db"_s);
      QStringList args = tiny_run(db, dir.filePath(u"o"_s), 3);
      args << u"--ranks"_s << u"4"_s << u"--set"_s << u"cluster.nodes=2"_s << u"--set"_s << u"parallel.tp=2"_s
           << u"--set"_s << u"strategy.name=monta"_s << u"--set"_s << (u"strategy.monta.level="_s + level)
           << u"--set"_s << (level == u"O3"_s ? u"strategy.monta.chunks=3"_s : u"strategy.monta.chunks=auto"_s);
      Result r = cli(args);
      QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
      RunStore store(db.toStdString(), RunStore::Mode::read_only);
      const RunInfo run = store.list_runs().at(0);
      const auto levels = store.metrics(run.id, "monta.level/block1");
      const auto chunks = store.metrics(run.id, "monta.chunks/block1");
      QCOMPARE(levels.size(), size_t(3));
      QCOMPARE(chunks.size(), size_t(3));
      for (size_t i = 0; i < 3; ++i) {
        QCOMPARE(levels[i].step, int64_t(i + 1));
        if (level == u"O3"_s) {
          QCOMPARE(levels[i].value, 3.0);
          QCOMPARE(chunks[i].value, 3.0);
        } else {
          QVERIFY2(levels[i].value >= 1 && levels[i].value <= 3, qPrintable(QString::number(levels[i].value)));
          QVERIFY(chunks[i].value >= 1);
          if (levels[i].value == 1) QCOMPARE(chunks[i].value, 1.0);
        }
      }
    }
  }

  // fastermoe's topology-aware gate on the quickstart (FasterMoE §4.3) with a network 8x
  // slower than a node's links: rho = W_net / (M W_local) = 2.5 / (2 x 10) = 0.125, so at most
  // L = floor(0.125 x 128 tokens x 2) = 32 of a rank's assignments per step go to the other
  // node (experts 2, 3 for ranks 0, 1; experts 0, 1 for ranks 2, 3). The loss still falls, and
  // the inter-node bytes drop against the same run without the gate.
  void fastermoe_topo_gate_caps_remote_assignments() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    auto train = [&](const QString& gate) {
      return cli({u"run"_s, QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml"), u"--db"_s, db,
                  u"--out"_s, dir.filePath(u"o"_s + gate), u"--steps"_s, u"30"_s, u"--set"_s, u"run.name=gate_"_s + gate, u"--set"_s,
                  u"train.eval_every=0"_s, u"--set"_s, u"strategy.name=fastermoe"_s, u"--set"_s,
                  u"cluster.inter_bw_gbs=2.5"_s, u"--set"_s, u"strategy.fastermoe.topo_gate="_s + gate});
    };
    for (const QString& gate : {u"false"_s, u"true"_s}) {
      const Result r = train(gate);
      QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    }
    RunStore store(db.toStdString(), RunStore::Mode::read_only);
    const RunInfo off = store.find_run("gate_false"), on = store.find_run("gate_true");
    auto inter = [&](const RunInfo& run) {
      double sum = 0;
      for (const MetricPoint& m : store.metrics(run.id, "bytes_inter")) sum += m.value;
      return sum;
    };
    const auto loss = store.metrics(on.id, "loss");
    QCOMPARE(loss.size(), size_t(30));
    QVERIFY2(loss.back().value < loss.front().value - 0.5, qPrintable(QString::number(loss.back().value)));
    QVERIFY2(inter(on) < 0.5 * inter(off), qPrintable(QString::number(inter(on)) + " vs " + QString::number(inter(off))));
    std::map<std::tuple<int64_t, int, int>, int64_t> remote;  // (step, layer, source rank) -> assignments off-node
    for (const RoutingRow& row : store.routing(on.id))
      if ((row.source_rank / 2) != (row.expert / 2)) remote[{row.step, row.layer, row.source_rank}] += row.tokens;
    int64_t most = 0;
    for (const auto& [key, n] : remote) most = std::max(most, n);
    QVERIFY2(most <= 32, qPrintable(QString::number(most)));
    QVERIFY(most > 0);
  }

  void sigterm_marks_the_run_killed() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    QProcess p;
    QVERIFY(start_and_wait(p, tiny_run(db, dir.filePath(u"o"_s), 1000000), 5));
    ::kill((pid_t)p.processId(), SIGTERM);
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 130);
    RunStore store(db.toStdString(), RunStore::Mode::read_only);
    const RunInfo run = store.list_runs().at(0);
    QCOMPARE(run.status, RunStatus::killed);
    QVERIFY(store.metrics(run.id, "loss").size() >= 5);
  }

  void ctrl_c_on_four_ranks_marks_the_run_killed() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    QStringList args = tiny_run(db, dir.filePath(u"o"_s), 1000000);
    args << u"--ranks"_s << u"4"_s << u"--set"_s << u"cluster.nodes=2"_s;
    QProcess p;
    QVERIFY(start_and_wait(p, args, 3));
    ::kill((pid_t)p.processId(), SIGINT);
    QVERIFY2(p.waitForFinished(30000), "the job did not stop after SIGINT");
    QCOMPARE(p.exitCode(), 130);
    RunStore store(db.toStdString(), RunStore::Mode::read_only);
    const RunInfo run = store.list_runs().at(0);
    QCOMPARE(run.status, RunStatus::killed);
    QVERIFY(store.metrics(run.id, "loss").size() >= 3);
  }

  void kill_9_leaves_a_failed_run_with_its_steps() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    QProcess p;
    QVERIFY(start_and_wait(p, tiny_run(db, dir.filePath(u"o"_s), 1000000), 5));
    p.kill();  // SIGKILL
    QVERIFY(p.waitForFinished(30000));
    RunStore store(db.toStdString());  // opening marks the vanished run
    const RunInfo run = store.list_runs().at(0);
    QCOMPARE(run.status, RunStatus::failed);
    QVERIFY(store.metrics(run.id, "loss").size() >= 5);
  }

  void ablate_runs_the_product_as_one_experiment() {
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    Result r = cli({u"ablate"_s, QString::fromUtf8(test::tiny_config_path()), u"--db"_s, db, u"--steps"_s, u"3"_s,
                    u"--experiment"_s, u"abl"_s, u"--vary"_s, u"moe.top_k=1,2"_s, u"--vary"_s,
                    u"moe.routing=learned,uniform"_s, u"--set"_s, u"train.eval_every=0"_s, u"--set"_s,
                    u"run.out_dir="_s + dir.filePath(u"o"_s)});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    RunStore store(db.toStdString(), RunStore::Mode::read_only);
    const auto runs = store.list_runs("abl");
    QCOMPARE(runs.size(), size_t(4));
    std::set<std::string> variants;
    for (const RunInfo& run : runs) {
      QCOMPARE(run.status, RunStatus::finished);
      for (const auto& [k, v] : store.tags(run.id))
        if (k == "ablation.variant") variants.insert(v);
    }
    QCOMPARE(variants, (std::set<std::string>{"moe.top_k=1 moe.routing=learned", "moe.top_k=1 moe.routing=uniform",
                                              "moe.top_k=2 moe.routing=learned", "moe.top_k=2 moe.routing=uniform"}));
    QVERIFY2(r.out.contains(u"speedup"_s, Qt::CaseInsensitive), qPrintable(r.out));
  }

  // --repeats 2: every variant twice, each repeat a run of its own named <experiment>.<i>.<r>,
  // tagged ablation.variant (shared) and ablation.repeat (1, 2). The same seed by default: a
  // repeat trains the same numbers (same losses) and differs only in time; --repeat-seeds gives
  // repeat r the seed run.seed + r - 1 (tiny.toml's seed is 7), so the losses differ.
  void ablate_repeats_each_variant() {
    for (const bool vary_seeds : {false, true}) {
      QTemporaryDir dir;
      const QString db = dir.filePath(u"runs.db"_s);
      QStringList args = {u"ablate"_s, QString::fromUtf8(test::tiny_config_path()), u"--db"_s, db, u"--steps"_s,
                          u"3"_s, u"--experiment"_s, u"rep"_s, u"--vary"_s, u"moe.top_k=1,2"_s, u"--repeats"_s, u"2"_s,
                          u"--set"_s, u"train.eval_every=0"_s, u"--set"_s, u"run.out_dir="_s + dir.filePath(u"o"_s)};
      if (vary_seeds) args << u"--repeat-seeds"_s;
      const Result r = cli(args);
      QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
      RunStore store(db.toStdString(), RunStore::Mode::read_only);
      const auto runs = store.list_runs("rep");
      QCOMPARE(runs.size(), size_t(4));
      std::map<std::string, std::tuple<std::string, std::string, uint64_t, double>> by_name;  // variant, repeat, seed, loss
      for (const RunInfo& run : runs) {
        QCOMPARE(run.status, RunStatus::finished);
        std::string variant, repeat;
        for (const auto& [k, v] : store.tags(run.id)) {
          if (k == "ablation.variant") variant = v;
          if (k == "ablation.repeat") repeat = v;
        }
        const uint64_t seed = nlohmann::json::parse(run.config_json).at("run").at("seed").get<uint64_t>();
        by_name[run.name] = {variant, repeat, seed, store.metrics(run.id, "loss").back().value};
        QVERIFY2(QDir(dir.filePath(u"o/"_s + QString::fromStdString(run.name))).exists(), run.name.c_str());
      }
      QCOMPARE(by_name.size(), size_t(4));
      for (const auto& [name, want] :
           std::map<std::string, std::pair<std::string, std::string>>{{"rep.1.1", {"moe.top_k=1", "1"}},
                                                                       {"rep.1.2", {"moe.top_k=1", "2"}},
                                                                       {"rep.2.1", {"moe.top_k=2", "1"}},
                                                                       {"rep.2.2", {"moe.top_k=2", "2"}}}) {
        QVERIFY2(by_name.count(name), name.c_str());
        QCOMPARE(std::get<0>(by_name[name]), want.first);
        QCOMPARE(std::get<1>(by_name[name]), want.second);
        QCOMPARE(std::get<2>(by_name[name]), uint64_t(vary_seeds && want.second == "2" ? 8 : 7));
      }
      for (const char* v : {"rep.1", "rep.2"}) {
        const double first = std::get<3>(by_name[std::string(v) + ".1"]), second = std::get<3>(by_name[std::string(v) + ".2"]);
        if (vary_seeds)
          QVERIFY2(first != second, qPrintable(QString::number(first)));
        else
          QCOMPARE(first, second);  // same seed: the same training, bit for bit
      }
      QVERIFY2(r.out.contains(u"variant 2/2, repeat 2/2: moe.top_k=2 (run name rep.2.2)"_s), qPrintable(r.out));
      QVERIFY2(r.out.contains(u"mean +- standard deviation over 2 repeats per variant"_s), qPrintable(r.out));
      QVERIFY2(r.out.contains(vary_seeds ? u"seed run.seed + repeat - 1"_s : u"same seed"_s), qPrintable(r.out));
    }
    // A lone config repeated needs no --vary: its file name is the variant.
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    const Result r = cli({u"ablate"_s, QString::fromUtf8(test::tiny_config_path()), u"--db"_s, db, u"--steps"_s, u"2"_s,
                          u"--experiment"_s, u"noise"_s, u"--repeats"_s, u"3"_s, u"--set"_s, u"train.eval_every=0"_s,
                          u"--set"_s, u"run.out_dir="_s + dir.filePath(u"o"_s)});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    RunStore store(db.toStdString(), RunStore::Mode::read_only);
    const auto runs = store.list_runs("noise");
    QCOMPARE(runs.size(), size_t(3));
    for (const RunInfo& run : runs)
      for (const auto& [k, v] : store.tags(run.id))
        if (k == "ablation.variant") QCOMPARE(v, std::string("tiny"));
    // --repeat-seeds without repeats is bad usage
    const Result bad = cli({u"ablate"_s, QString::fromUtf8(test::tiny_config_path()), u"--db"_s, db, u"--vary"_s,
                            u"moe.top_k=1,2"_s, u"--repeat-seeds"_s});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains(u"--repeat-seeds"_s) && bad.err.contains(u"--repeats N"_s), qPrintable(bad.err));
  }
};

QTEST_APPLESS_MAIN(TestRecord)
#include "tst_record.moc"
