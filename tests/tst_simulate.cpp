// `moebench simulate` end to end: the predicted run in the store (tags, metrics, spans,
// traffic, `runs show`), trace: routing replaying a measured run's recorded counts, faster links
// never predicting a slower step, and every bad input with its message and exit code 2.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <map>

#include <nlohmann/json.hpp>

#include "moebench/perf/ddl_roofline.h"
#include "moebench/store/run_store.h"
#include "cli_support.h"
#include "test_support.h"

using namespace Qt::StringLiterals;
using namespace moebench;

namespace {

using Result = moebench::test::CliResult;
using moebench::test::run_cli;
QString write(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
  return moebench::test::write_file(dir, name, text);
}

// 2 nodes x 2 devices; inter-node bandwidth as given.
QByteArray cluster_text(const char* inter_gbs, const char* intra_gbs = "50.0") {
  return QByteArray("[cluster]\nname = \"two-by-two\"\nnodes = 2\ndevices_per_node = 2\ndevice_tflops = 10.0\n"
                    "intra_bw_gbs = ") +
         intra_gbs + "\nintra_latency_us = 1.0\ninter_bw_gbs = " + inter_gbs + "\ninter_latency_us = 5.0\n";
}

const QString kTiny = QString::fromUtf8(moebench::test::tiny_config_path());
// The tiny model on 4 ranks, one expert per rank.
const QStringList kFour = {u"--ranks"_s, u"4"_s, u"--set"_s, u"train.batch_size=8"_s};

}  // namespace

class TestSimulate : public QObject {
  Q_OBJECT
 private slots:
  void predicted_run_in_the_store() {
    QTemporaryDir dir;
    const QString cluster = write(dir, u"c.toml"_s, cluster_text("5.0"));
    const QString db = dir.filePath(u"runs.db"_s);
    Result r = run_cli(QStringList{u"simulate"_s, kTiny, u"--cluster"_s, cluster, u"--db"_s, db, u"--steps"_s, u"2"_s,
                                   u"--json"_s} + kFour);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(j.at("predicted").get<bool>(), true);
    QCOMPARE(j.at("step_ms").size(), (size_t)2);
    const RunStore store(db.toStdString(), RunStore::Mode::read_only);
    const RunInfo run = store.find_run(std::to_string(j.at("run").at("id").get<int64_t>()));
    QCOMPARE(run.status, RunStatus::finished);
    QCOMPARE(run.ranks, 4);
    std::map<std::string, std::string> tags;
    for (const auto& [k, v] : store.tags(run.id)) tags[k] = v;
    QCOMPARE(tags.at("predicted"), std::string("simulator"));
    QCOMPARE(tags.at("cluster"), std::string("two-by-two"));
    const auto step_ms = store.metrics(run.id, "step_ms");
    QCOMPARE((int)step_ms.size(), 2);
    QCOMPARE(step_ms[0].value, j.at("step_ms")[0].get<double>());
    // Every rank's spans; the slowest rank's step span is the predicted step.
    const auto spans = store.spans(run.id, 1, 1);
    double longest = 0;
    std::map<int, int> dispatches;
    for (const SpanRow& s : spans) {
      if (s.stream == "host" && s.name == "step") longest = std::max(longest, s.duration);
      if (s.name == "moe.dispatch" && s.layer == 1) ++dispatches[s.rank];
    }
    QCOMPARE(longest * 1e3, step_ms[0].value);
    QCOMPARE(dispatches, (std::map<int, int>{{0, 1}, {1, 1}, {2, 1}, {3, 1}}));
    // Traffic by link class of the described cluster: ranks 0 and 1 share node 0.
    bool intra = false, inter = false;
    for (const TrafficRow& t : store.traffic(run.id, 1, 1)) {
      const bool same_node = t.rank / 2 == t.peer / 2;
      QCOMPARE(t.link, std::string(same_node ? "intra_node" : "inter_node"));
      (same_node ? intra : inter) = true;
    }
    QVERIFY(intra && inter);
    r = run_cli({u"runs"_s, u"show"_s, QString::number(run.id), u"--db"_s, db});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains(u"PREDICTED    by the simulator on cluster two-by-two"_s), qPrintable(r.out));
  }

  // A config with [emulate] is predicted as that emulated run: the cluster's links stretched by
  // the time scale (a 10x scale at least 10x the comm), computing at --host's rate; --cluster
  // does not apply to it, --host only to it.
  void emulated_run_with_host_rates() {
    QTemporaryDir dir;
    const QString cluster = write(dir, u"c.toml"_s, cluster_text("5.0"));
    const QString host = write(dir, u"host.toml"_s, "[cluster]\nname = \"host\"\ndevice_tflops = 0.1\n");
    const QString db = dir.filePath(u"runs.db"_s);
    auto simulate = [&](const char* scale, QStringList extra = {}) {
      return run_cli(QStringList{u"simulate"_s, kTiny, u"--db"_s, db, u"--json"_s, u"--set"_s, u"cluster.nodes=2"_s,
                                 u"--set"_s, u"emulate.cluster="_s + cluster, u"--set"_s,
                                 u"emulate.time_scale=\""_s + QString::fromLatin1(scale) + u"\""_s} +
                     kFour + extra);
    };
    Result one = simulate("1", {u"--host"_s, host});
    QVERIFY2(one.code == 0, qPrintable(one.err));
    Result ten = simulate("10", {u"--host"_s, host});
    QVERIFY2(ten.code == 0, qPrintable(ten.err));
    const auto j1 = nlohmann::json::parse(one.out.toStdString()), j10 = nlohmann::json::parse(ten.out.toStdString());
    QVERIFY2(QString::fromStdString(j10.at("cluster").get<std::string>()).contains(u"two-by-two emulated x10 on host"_s),
             qPrintable(QString::fromStdString(j10.at("cluster").get<std::string>())));
    QVERIFY2(QString::fromStdString(j10.at("cluster").get<std::string>()).contains(u"0.1 TFLOP/s"_s),
             qPrintable(QString::fromStdString(j10.at("cluster").get<std::string>())));
    QVERIFY(j10.at("comm_ms").get<double>() > 9 * j1.at("comm_ms").get<double>());
    QVERIFY(j10.at("mean_step_ms").get<double>() > j1.at("mean_step_ms").get<double>());
    const Result cmp = run_cli({u"runs"_s, u"compare"_s, QString::number(j1.at("run").at("id").get<int64_t>()),
                                QString::number(j10.at("run").at("id").get<int64_t>()), u"--db"_s, db});
    QVERIFY2(cmp.code == 0 && cmp.out.contains(u"predicted (two-by-two emulated x10 on host)"_s), qPrintable(cmp.out));
    Result bad = simulate("1", {u"--cluster"_s, cluster});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains(u"--cluster and --nodes do not apply"_s), qPrintable(bad.err));
    bad = run_cli(QStringList{u"simulate"_s, kTiny, u"--db"_s, db, u"--host"_s, host} + kFour);
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains(u"only for a config with [emulate]"_s), qPrintable(bad.err));
  }

  void faster_links_never_predict_a_slower_step() {
    QTemporaryDir dir;
    double last = 0;
    for (const char* gbs : {"0.5", "5.0", "50.0"}) {
      const QString cluster = write(dir, QString::fromLatin1(gbs) + u".toml"_s, cluster_text(gbs));
      const Result r = run_cli(QStringList{u"simulate"_s, kTiny, u"--cluster"_s, cluster, u"--db"_s,
                                           dir.filePath(u"runs.db"_s), u"--json"_s} + kFour);
      QVERIFY2(r.code == 0, qPrintable(r.err));
      const double ms = nlohmann::json::parse(r.out.toStdString()).at("mean_step_ms").get<double>();
      if (last > 0) QVERIFY2(ms < last, qPrintable(u"%1 GB/s: %2 ms, slower links %3 ms"_s.arg(gbs).arg(ms).arg(last)));
      last = ms;
    }
  }

  void trace_replays_the_recorded_routing() {
    // A real 4-rank run with skewed routing records its counts; simulating trace:<run> sends
    // exactly the recorded rows: each rank's dispatch carries its rows for the 3 experts of
    // other ranks (expert e lives on rank e), C = 32 floats each.
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    Result r = run_cli(QStringList{u"run"_s, kTiny, u"--out"_s, dir.filePath(u"out"_s), u"--db"_s, db, u"--set"_s,
                                   u"train.steps=2"_s, u"--set"_s, u"train.eval_every=0"_s, u"--set"_s,
                                   u"moe.routing=zipf:1.5"_s, u"--set"_s, u"run.name=measured"_s} + kFour);
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    const QString cluster = write(dir, u"c.toml"_s, cluster_text("5.0"));
    r = run_cli(QStringList{u"simulate"_s, kTiny, u"--cluster"_s, cluster, u"--db"_s, db, u"--routing"_s,
                            u"trace:measured"_s, u"--steps"_s, u"2"_s, u"--json"_s} + kFour);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const int64_t predicted = nlohmann::json::parse(r.out.toStdString()).at("run").at("id").get<int64_t>();
    const RunStore store(db.toStdString(), RunStore::Mode::read_only);
    const RunInfo measured = store.find_run("measured");
    for (int64_t step = 1; step <= 2; ++step) {
      std::map<int, int64_t> remote_rows;
      int64_t rows = 0;
      for (const RoutingRow& row : store.routing(measured.id, step, step)) {
        rows += row.tokens;
        if (row.expert != row.source_rank) remote_rows[row.source_rank] += row.tokens;
      }
      QCOMPARE(rows, (int64_t)8 * 16 * 2);  // batch 8 x 16 tokens x top-2
      int seen = 0;
      for (const SpanRow& s : store.spans(predicted, step, step))
        if (s.name == "moe.dispatch") {
          QCOMPARE(s.bytes, remote_rows[s.rank] * 32 * 4);
          ++seen;
        }
      QCOMPARE(seen, 4);
    }
    // `runs roofline`: the measured run's points (measured and predicted) and the simulated run's
    // (simulated only), as perf/ddl_roofline.h gives them.
    r = run_cli({u"runs"_s, u"roofline"_s, u"measured"_s, QString::number(predicted), u"--db"_s, db, u"--json"_s,
                 u"--peak"_s, u"100"_s});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const nlohmann::json rows = nlohmann::json::parse(r.out.toStdString());
    std::map<std::string, int> kinds;
    for (const auto& row : rows) {
      const std::string kind = row.at("kind");
      ++kinds[kind];
      QCOMPARE(row.at("run_id").get<int64_t>(), kind == "simulated" ? predicted : measured.id);
    }
    QCOMPARE(kinds, (std::map<std::string, int>{{"measured", 2}, {"predicted", 2}, {"simulated", 2}}));  // layer 1, all
    for (const DdlPoint& p : ddl_roofline_points(store, store.find_run(std::to_string(predicted))))
      for (const auto& row : rows)
        if (row.at("kind") == "simulated" && row.at("layer") == p.layer && p.has_point()) {
          QCOMPARE(row.at("r_cc").get<double>(), p.r_cc);
          QCOMPARE(row.at("achieved_gflops").get<double>(), p.achieved_gflops);
        }
    r = run_cli({u"runs"_s, u"roofline"_s, u"nosuchrun"_s, u"--db"_s, db});
    QVERIFY(r.code != 0);
    QVERIFY2(r.err.contains(u"nosuchrun"_s), qPrintable(r.err));
  }

  void bad_inputs_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("cluster");
    QTest::addColumn<QString>("expected");
    QTest::newRow("devices != ranks") << QStringList{u"--ranks"_s, u"2"_s} << cluster_text("5.0")
                                      << u"describes 2 nodes x 2 devices = 4 devices; the config runs 2 ranks"_s;
    QTest::newRow("zero bandwidth") << kFour << cluster_text("0.0") << u"inter_bw_gbs"_s;
    QTest::newRow("missing link") << kFour
                                  << QByteArray("[cluster]\nname = \"x\"\nnodes = 2\ndevices_per_node = 2\n"
                                                "device_tflops = 1.0\nintra_bw_gbs = 5.0\n")
                                  << u"c.toml: missing cluster.inter_bw_gbs (a described cluster names every link it uses)"_s;
    QTest::newRow("missing trace run") << (kFour + QStringList{u"--routing"_s, u"trace:nosuchrun"_s})
                                       << cluster_text("5.0") << u"trace:nosuchrun: no run 'nosuchrun'"_s;
    QTest::newRow("bad routing") << (kFour + QStringList{u"--routing"_s, u"zipf:x"_s}) << cluster_text("5.0")
                                 << u"moe.routing"_s;
  }
  void bad_inputs() {
    QFETCH(QStringList, args);
    QFETCH(QByteArray, cluster);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString file = write(dir, u"c.toml"_s, cluster);
    const Result r = run_cli(QStringList{u"simulate"_s, kTiny, u"--cluster"_s, file, u"--db"_s,
                                         dir.filePath(u"runs.db"_s)} + args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(expected), qPrintable(r.err));
  }

  void trace_of_another_shape() {
    // A run recorded on 4 ranks cannot be replayed on 2, nor with other experts.
    QTemporaryDir dir;
    const QString db = dir.filePath(u"runs.db"_s);
    Result r = run_cli(QStringList{u"run"_s, kTiny, u"--out"_s, dir.filePath(u"out"_s), u"--db"_s, db, u"--set"_s,
                                   u"train.steps=1"_s, u"--set"_s, u"train.eval_every=0"_s, u"--set"_s,
                                   u"run.name=four"_s} + kFour);
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    r = run_cli({u"simulate"_s, kTiny, u"--db"_s, db, u"--routing"_s, u"trace:four"_s, u"--ranks"_s, u"2"_s, u"--set"_s,
                 u"train.batch_size=8"_s});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"was recorded on 4 ranks; the config runs 2"_s), qPrintable(r.err));
    r = run_cli(QStringList{u"simulate"_s, kTiny, u"--db"_s, db, u"--routing"_s, u"trace:four"_s, u"--set"_s,
                            u"moe.experts=8"_s} + kFour);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"other MoE blocks or expert counts"_s), qPrintable(r.err));
    r = run_cli(QStringList{u"simulate"_s, kTiny, u"--db"_s, db, u"--routing"_s, u"trace:four"_s, u"--steps"_s,
                            u"3"_s} + kFour);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(u"recorded the routing of 1 steps; 3 were asked for"_s), qPrintable(r.err));
  }
};

QTEST_APPLESS_MAIN(TestSimulate)
#include "tst_simulate.moc"
