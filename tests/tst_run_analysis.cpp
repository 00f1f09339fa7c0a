// ctest-labels: unit
// Reading stored runs back: summarize_run (hand-computed numbers), chrome_trace (metadata,
// complete events in microseconds, clock alignment, flows, counters), export_csv (parsed back)
// and the CLI verbs `runs list|show|compare|delete`, `trace`, `export` on a store built by hand.
#include <QtTest>

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "moebench/store/chrome_trace.h"
#include "moebench/store/csv_export.h"
#include "moebench/store/run_store.h"
#include "moebench/store/run_summary.h"

using namespace moebench;
using namespace Qt::StringLiterals;
using json = nlohmann::json;

namespace {

// ---- the hand-built store ---------------------------------------------------------------
//
// Run "baseline": 2 ranks, steps 1..3 (1-based, as the store keeps them). Each rank's spans are
// relative to its own epoch:
//   rank 0 step s starts at B0 = 0.1 + (s - 1);  rank 1 at B1 = 10 + (s - 1) (+ 0.002 for step 3).
// Per (step, rank), offsets from B in seconds:
//   host/step            0      .. D      D = 0.015 (rank 0), 0.017 (rank 1); 0.100 at step 1
//   compute/forward      0.001  + 0.004   contains compute.comm moe.dispatch (0.002 + 0.001)
//                                         and moe.combine (0.0035 + 0.0005), compute
//                                         moe.experts (0.003 + 0.0005, layer 1, expert 2)
//   compute/backward     0.005  + 0.004   contains compute.comm moe.dispatch_grad (0.006 + 0.001)
//   compute.comm/grad.wait 0.009 + 0.001  outside every compute phase
//   compute/optimizer    0.010  + 0.002
//   comm/grad.allreduce  0.006  + 0.003   4096 bytes to the other rank
// so per (step, rank): comm = 0.0035, compute = 0.010 - 0.0025 = 0.0075, idle = D - 0.011.
// Steps 2, 3 count (step 1 is the warm-up): step 0.016, compute 0.0075, comm 0.0035,
// idle 0.005, comm share 0.0035 / 0.016 = 0.21875.
// Traffic per step: rank 0 -> 1 intra 1000, rank 1 -> 0 intra 2000; step 3 also rank 0 -> 1
// inter 300. Routing per step and source rank: layer 1 experts 0,1,2 get 10,20,30 (the config
// says 4 experts), layer 3 experts 0,1 get 5,15.
// Metrics: loss 3.0 2.5 2.0, step_ms 100 10 20, tokens_per_s 1000 4000 2000, eval_loss 2.2 at 3
// ("eval after step 3", logged with step 3's records).
//
// Run "faster": step_ms 50 5 10, tokens_per_s 2000 8000 4000, loss 3.0 2.4 1.9, no spans.

constexpr double kStepDur[2] = {0.015, 0.017};
const char* kNote = "a, \"quoted\"\nline";

double base_of(int rank, int64_t step) {
  if (rank == 0) return 0.1 + double(step - 1);
  return 10.0 + double(step - 1) + (step == 3 ? 0.002 : 0.0);
}

SpanRow span(int64_t step, int rank, const char* stream, const char* name, const char* cat, double at, double dur) {
  SpanRow s;
  s.step = step;
  s.rank = rank;
  s.stream = stream;
  s.name = name;
  s.category = cat;
  s.start = base_of(rank, step) + at;
  s.duration = dur;
  return s;
}

std::vector<SpanRow> spans_of(int64_t step, int rank) {
  std::vector<SpanRow> v;
  v.push_back(span(step, rank, "host", "step", "compute", 0, step == 1 ? 0.100 : kStepDur[rank]));
  v.push_back(span(step, rank, "compute", "forward", "compute", 0.001, 0.004));
  SpanRow experts = span(step, rank, "compute", "moe.experts", "compute", 0.003, 0.0005);
  experts.layer = 1;
  experts.expert = 2;
  v.push_back(experts);
  v.push_back(span(step, rank, "compute", "backward", "compute", 0.005, 0.004));
  v.push_back(span(step, rank, "compute", "optimizer", "compute", 0.010, 0.002));
  for (auto [name, at, dur] : {std::tuple{"moe.dispatch", 0.002, 0.001}, std::tuple{"moe.combine", 0.0035, 0.0005},
                               std::tuple{"moe.dispatch_grad", 0.006, 0.001}}) {
    SpanRow c = span(step, rank, "compute.comm", name, "comm", at, dur);
    c.layer = 1;
    v.push_back(c);
  }
  v.push_back(span(step, rank, "compute.comm", "grad.wait", "comm", 0.009, 0.001));
  SpanRow ar = span(step, rank, "comm", "grad.allreduce", "comm", 0.006, 0.003);
  ar.bytes = 4096;
  ar.peer = 1 - rank;
  v.push_back(ar);
  return v;
}

void build_store(const std::string& path) {
  RunStore store(path);
  RunInfo a;
  a.name = "baseline";
  a.experiment = "exp";
  a.strategy = "expert_centric";
  a.ranks = 2;
  a.topology = "1 node x 2 devices";
  a.config_json = R"({"moe":{"experts":[4],"moe_layers":[1],"top_k":2}})";
  a = store.create_run(a);
  store.log_params(a.id, {{"model.hidden", "128"}, {"note", kNote}});
  const double loss[3] = {3.0, 2.5, 2.0}, ms[3] = {100, 10, 20}, tps[3] = {1000, 4000, 2000};
  for (int64_t s = 1; s <= 3; ++s) {
    const double ts = 1000.0 + double(s);
    const size_t i = size_t(s - 1);
    std::vector<MetricPoint> m = {{"loss", s, loss[i], ts}, {"step_ms", s, ms[i], ts}, {"tokens_per_s", s, tps[i], ts}};
    if (s == 3) m.push_back({"eval_loss", 3, 2.2, ts});
    std::vector<SpanRow> spans = spans_of(s, 0);
    for (auto& x : spans_of(s, 1)) spans.push_back(x);
    std::vector<TrafficRow> traffic = {{s, 0, 1, "intra_node", 1000}, {s, 1, 0, "intra_node", 2000}};
    if (s == 3) traffic.push_back({s, 0, 1, "inter_node", 300});
    std::vector<RoutingRow> routing;
    for (int r = 0; r < 2; ++r) {
      for (int e = 0; e < 3; ++e) routing.push_back({s, 1, r, e, 10 * (e + 1)});
      routing.push_back({s, 3, r, 0, 5});
      routing.push_back({s, 3, r, 1, 15});
    }
    store.log_step(a.id, m, spans, traffic, routing);
  }
  store.set_status(a.id, RunStatus::finished, a.start_time + 42);

  RunInfo b;
  b.name = "faster";
  b.experiment = "exp";
  b.strategy = "hier_a2a";
  b.ranks = 2;
  b = store.create_run(b);
  const double loss_b[3] = {3.0, 2.4, 1.9}, ms_b[3] = {50, 5, 10}, tps_b[3] = {2000, 8000, 4000};
  for (int64_t s = 1; s <= 3; ++s)
    store.log_step(b.id, {{"loss", s, loss_b[s - 1], 0}, {"step_ms", s, ms_b[s - 1], 0},
                          {"tokens_per_s", s, tps_b[s - 1], 0}},
                   {}, {}, {});
  store.set_status(b.id, RunStatus::finished, b.start_time + 21);
}

bool near(double a, double b, double tol = 1e-12) { return std::abs(a - b) <= tol * std::max(1.0, std::abs(b)); }
#define QNEAR(a, b)                                                                                  \
  QVERIFY2(near((a), (b)), qPrintable(QStringLiteral("%1 = %2, expected %3")                         \
                                          .arg(QString::fromUtf8(#a)).arg((a), 0, 'g', 17).arg((b), 0, 'g', 17)))

// RFC 4180 reader: rows of fields, quotes may span lines.
std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string t = ss.str();
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (quoted) {
      if (c == '"' && i + 1 < t.size() && t[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(field), field.clear();
    } else if (c == '\n') {
      row.push_back(field), field.clear();
      rows.push_back(row), row.clear();
    } else {
      field += c;
    }
  }
  if (!field.empty() || !row.empty()) row.push_back(field), rows.push_back(row);
  return rows;
}

using Result = moebench::test::CliResult;
using moebench::test::run_cli;

json parse(const QString& text) { return json::parse(text.toStdString()); }

QByteArray read_bytes(const QString& path) {
  QFile f(path);
  f.open(QIODevice::ReadOnly);
  return f.readAll();
}

}  // namespace

class TestRunAnalysis : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  std::string db_;
  QString qdb() const { return QString::fromStdString(db_); }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath(u"runs.db"_s).toStdString();
    build_store(db_);
  }

  void summary_numbers() {
    RunStore store(db_, RunStore::Mode::read_only);
    const RunSummary s = summarize_run(store, store.find_run("baseline"));
    QCOMPARE(s.steps, int64_t(3));
    QCOMPARE(s.first_step, int64_t(1));
    QCOMPARE(s.last_step, int64_t(3));
    QCOMPARE(s.last("loss"), 2.0);
    QCOMPARE(s.last("eval_loss"), 2.2);
    QCOMPARE(s.last("step_ms"), 20.0);
    QVERIFY(std::isnan(s.last("grad_norm")));
    QCOMPARE(s.mean_step_ms, 15.0);  // step 1 (100 ms) left out as warm-up
    QCOMPARE(s.mean_tokens_per_s, 3000.0);
    QVERIFY(s.warmup_excluded);

    QVERIFY(s.has_phases);
    QVERIFY(s.phase_warmup_excluded);
    QCOMPARE(s.span_steps, int64_t(3));
    QCOMPARE(s.phases.samples, int64_t(4));  // steps 2, 3 x ranks 0, 1
    QNEAR(s.phases.step_s, 0.016);
    QNEAR(s.phases.compute_s, 0.0075);
    QNEAR(s.phases.comm_s, 0.0035);
    QNEAR(s.phases.idle_s, 0.005);
    QNEAR(s.phases.comm_share, 0.21875);
    QCOMPARE(s.rank_phases.size(), size_t(2));
    QNEAR(s.rank_phases[0].step_s, 0.015);
    QNEAR(s.rank_phases[0].idle_s, 0.004);
    QNEAR(s.rank_phases[1].step_s, 0.017);
    QNEAR(s.rank_phases[1].idle_s, 0.006);
    QNEAR(s.rank_phases[1].comm_share, 0.0035 / 0.017);
    // Layer 1 per (step, rank): experts 0.0005; dispatch 0.001 + combine 0.0005 + dispatch_grad 0.001.
    QCOMPARE(s.layer_phases.size(), size_t(1));
    QCOMPARE(s.layer_phases[0].layer, 1);
    QNEAR(s.layer_phases[0].compute_s, 0.0005);
    QNEAR(s.layer_phases[0].comm_s, 0.0025);
    const auto json_layers = summary_json(s)["phases"]["layers"];
    QCOMPARE(json_layers.size(), size_t(1));
    QNEAR(json_layers[0]["comm_s"].get<double>(), 0.0025);
    QVERIFY(format_summary(s).find("MoE layer 1  experts 0.500 ms  exchange 2.500 ms") != std::string::npos);

    QCOMPARE(s.bytes_intra, int64_t(9000));
    QCOMPARE(s.bytes_inter, int64_t(300));
    QCOMPARE(s.bytes_intra_per_step, 3000.0);
    QCOMPARE(s.bytes_inter_per_step, 100.0);

    QCOMPARE(s.expert_load.size(), size_t(2));
    const LayerLoad& l1 = s.expert_load[0];
    QCOMPARE(l1.layer, 1);
    QCOMPARE(l1.experts, 4);  // from the config: expert 3 got nothing and still counts
    QCOMPARE(l1.tokens, (std::vector<int64_t>{60, 120, 180, 0}));
    QCOMPARE(l1.total_tokens, int64_t(360));
    QCOMPARE(l1.max_tokens, int64_t(180));
    QCOMPARE(l1.busiest_expert, 2);
    QCOMPARE(l1.mean_tokens, 90.0);
    QCOMPARE(l1.imbalance, 2.0);
    const LayerLoad& l3 = s.expert_load[1];
    QCOMPARE(l3.layer, 3);
    QCOMPARE(l3.experts, 2);  // not in the config: highest expert seen + 1
    QCOMPARE(l3.imbalance, 1.5);
    QCOMPARE(s.max_imbalance, 2.0);

    const QString text = QString::fromStdString(format_summary(s));
    QVERIFY2(text.contains(u"15.000 ms/step"_s) && text.contains(u"comm share   21.9%"_s), qPrintable(text));
    QVERIFY2(!text.contains(u"bubble"_s), qPrintable(text));  // no pipeline stages, no bubble line
    QCOMPARE(s.phases.bubble_s, 0.0);
    const json j = summary_json(s);
    QCOMPARE(j["mean_step_ms"].get<double>(), 15.0);
    QCOMPARE(j["expert_load"][0]["imbalance"].get<double>(), 2.0);
    QVERIFY(j["last_metrics"]["loss"].get<double>() == 2.0);
    QVERIFY(near(j["phases"]["comm_share"].get<double>(), 0.21875));
  }

  // A 2-stage pipeline: stage 0 (rank 0) waits 3 ms for gradients, stage 1 (rank 1) 2 ms for
  // activations, in 10 ms steps: a bubble of 2.5 ms (25 %) per rank and step on average.
  void pipeline_bubble_from_the_receive_waits() {
    const std::string path = dir_.filePath(u"pipeline.db"_s).toStdString();
    RunStore store(path);
    RunInfo r;
    r.name = "pp2";
    r.ranks = 2;
    r = store.create_run(r);
    for (int64_t step = 1; step <= 3; ++step) {
      std::vector<SpanRow> spans;
      for (int rank = 0; rank < 2; ++rank) {
        spans.push_back(span(step, rank, "host", "step", "compute", 0, 0.010));
        spans.push_back(span(step, rank, "host", "forward", "compute", rank == 0 ? 0.0 : 0.002, 0.003));
        spans.push_back(span(step, rank, "host", "backward", "compute", 0.006, 0.003));
        spans.push_back(rank == 0 ? span(step, 0, "comm.intra", "pp.recv_backward", "comm", 0.003, 0.003)
                                  : span(step, 1, "comm.intra", "pp.recv_forward", "comm", 0.0, 0.002));
      }
      store.log_step(r.id, {{"loss", step, 1.0, 1000.0 + double(step)}}, spans, {}, {});
    }
    const RunSummary s = summarize_run(store, store.find_run("pp2"));
    QNEAR(s.phases.bubble_s, 0.0025);
    QNEAR(s.phases.bubble_share, 0.25);
    QNEAR(s.rank_phases[0].bubble_share, 0.3);
    QNEAR(s.rank_phases[1].bubble_share, 0.2);
    const QString text = QString::fromStdString(format_summary(s));
    QVERIFY2(text.contains(u"pipeline bubble 25.0% of the step"_s) && text.contains(u"; bubble 30.0%"_s), qPrintable(text));
    QVERIFY(near(summary_json(s)["phases"]["bubble_share"].get<double>(), 0.25));
  }

  void summary_of_a_run_without_spans() {
    RunStore store(db_, RunStore::Mode::read_only);
    const RunSummary s = summarize_run(store, store.find_run("faster"));
    QCOMPARE(s.mean_step_ms, 7.5);
    QCOMPARE(s.mean_tokens_per_s, 6000.0);
    QVERIFY(!s.has_phases);
    QVERIFY(s.expert_load.empty());
    QVERIFY(std::isnan(s.max_imbalance));
    const json j = summary_json(s);
    QVERIFY(j["phases"].is_null());
    QVERIFY(j["max_imbalance"].is_null());
    QVERIFY(j["last_metrics"].contains("loss"));
  }

  void chrome_trace_events() {
    RunStore store(db_, RunStore::Mode::read_only);
    const json t = chrome_trace(store, store.find_run("baseline"), 0, -1);
    QCOMPARE(t["displayTimeUnit"].get<std::string>(), std::string("ms"));
    const json& ev = t["traceEvents"];
    QVERIFY(ev.is_array());
    std::map<int, std::string> process_name;
    std::map<std::pair<int, int>, std::string> thread_name;
    std::vector<json> x, s_events, f_events, counters;
    for (const auto& e : ev) {
      const std::string ph = e["ph"];
      if (ph == "M" && e["name"] == "process_name") process_name[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
      else if (ph == "M" && e["name"] == "thread_name") thread_name[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"].get<std::string>();
      else if (ph == "X") x.push_back(e);
      else if (ph == "s") s_events.push_back(e);
      else if (ph == "f") f_events.push_back(e);
      else if (ph == "C") counters.push_back(e);
    }
    QCOMPARE(process_name, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}}));
    for (int r = 0; r < 2; ++r) {
      QCOMPARE((thread_name[{r, 1}]), std::string("host"));
      QCOMPARE((thread_name[{r, 2}]), std::string("compute"));
      QCOMPARE((thread_name[{r, 3}]), std::string("compute.comm"));
      QCOMPARE((thread_name[{r, 4}]), std::string("comm"));
    }
    QCOMPARE(thread_name.size(), size_t(8));

    // X: 10 spans per step and rank; ranks aligned on their first step (rank 1 is shifted by
    // -9.9 s), then the trace starts at 0. Rank 1's step 3 started 2 ms late on its own clock.
    QCOMPARE(x.size(), size_t(60));
    auto find_x = [&](int pid, const std::string& name, int64_t step) -> json {
      for (const auto& e : x)
        if (e["pid"] == pid && e["name"] == name && e["args"]["step"] == step) return e;
      return json();
    };
    for (int r = 0; r < 2; ++r) {
      for (int64_t s = 1; s <= 3; ++s) {
        const double late = (r == 1 && s == 3) ? 2000 : 0;
        const double at = 1e6 * double(s - 1) + late;  // the step's start in the trace
        const json step = find_x(r, "step", s);
        QVERIFY(!step.is_null());
        QCOMPARE(step["tid"].get<int>(), 1);
        QCOMPARE(step["cat"].get<std::string>(), std::string("compute"));
        QNEAR(step["ts"].get<double>(), at);
        QNEAR(step["dur"].get<double>(), s == 1 ? 100000.0 : 1e6 * kStepDur[r]);
        const json fwd = find_x(r, "forward", s);
        QCOMPARE(fwd["tid"].get<int>(), 2);
        QNEAR(fwd["ts"].get<double>(), at + 1000);
        QNEAR(fwd["dur"].get<double>(), 4000.0);
        QVERIFY(!fwd["args"].contains("bytes") && !fwd["args"].contains("peer"));
        const json ar = find_x(r, "grad.allreduce", s);
        QCOMPARE(ar["tid"].get<int>(), 4);
        QCOMPARE(ar["cat"].get<std::string>(), std::string("comm"));
        QCOMPARE(ar["args"]["bytes"].get<int64_t>(), int64_t(4096));
        QCOMPARE(ar["args"]["peer"].get<int>(), 1 - r);
        QNEAR(ar["ts"].get<double>(), at + 6000);
        QNEAR(ar["dur"].get<double>(), 3000.0);
        const json ex = find_x(r, "moe.experts", s);
        QCOMPARE(ex["args"]["layer"].get<int>(), 1);
        QCOMPARE(ex["args"]["expert"].get<int>(), 2);
        const json wait = find_x(r, "grad.wait", s);
        QCOMPARE(wait["tid"].get<int>(), 3);
        QNEAR(wait["ts"].get<double>(), at + 9000);
      }
    }

    // Flows: one per direction of each step's all-reduce, s on the sender, f (bp e) on the
    // receiver, both at the middle of their span, same id, cat and name.
    QCOMPARE(s_events.size(), size_t(6));
    QCOMPARE(f_events.size(), size_t(6));
    std::set<int64_t> ids;
    for (const auto& s : s_events) {
      const int64_t id = s["id"];
      QVERIFY(ids.insert(id).second);
      int matches = 0;
      for (const auto& f : f_events) {
        if (f["id"] != id) continue;
        ++matches;
        QCOMPARE(f["bp"].get<std::string>(), std::string("e"));
        QCOMPARE(f["name"], s["name"]);
        QCOMPARE(f["cat"], s["cat"]);
        QCOMPARE(f["pid"].get<int>(), 1 - s["pid"].get<int>());
        QCOMPARE(f["tid"].get<int>(), 4);
        QCOMPARE(s["name"].get<std::string>(), std::string("grad.allreduce"));
        // Both ends lie inside an all-reduce span of the same step on their rank.
        for (const json* e : {&s, &f}) {
          bool inside = false;
          for (const auto& xe : x)
            if (xe["pid"] == (*e)["pid"] && xe["name"] == "grad.allreduce" && xe["ts"] < (*e)["ts"] &&
                (*e)["ts"] < xe["ts"].get<double>() + xe["dur"].get<double>())
              inside = true;
          QVERIFY(inside);
        }
        const double s_ts = s["ts"], f_ts = f["ts"];
        const double late_s = s_ts > 2e6 && s["pid"] == 1 ? 2000 : 0, late_f = f_ts > 2e6 && f["pid"] == 1 ? 2000 : 0;
        QNEAR(s_ts - late_s, f_ts - late_f);
        QNEAR(std::fmod(s_ts - late_s, 1e6), 7500.0);
      }
      QCOMPARE(matches, 1);
    }

    // Counters: bytes each rank sent per step, at its step start.
    QCOMPARE(counters.size(), size_t(6));
    for (const auto& c : counters) {
      QCOMPARE(c["name"].get<std::string>(), std::string("bytes sent"));
      const int pid = c["pid"];
      const double ts = c["ts"];
      const int64_t step = 1 + std::llround((pid == 1 && ts > 2e6 ? ts - 2000 : ts) / 1e6);
      QNEAR(ts, 1e6 * double(step - 1) + (pid == 1 && step == 3 ? 2000 : 0));
      QCOMPARE(c["args"]["intra_node"].get<int64_t>(), int64_t(pid == 0 ? 1000 : 2000));
      QCOMPARE(c["args"]["inter_node"].get<int64_t>(), int64_t(pid == 0 && step == 3 ? 300 : 0));
    }
  }

  void chrome_trace_of_a_step_range_aligns_on_its_first_step() {
    RunStore store(db_, RunStore::Mode::read_only);
    const json t = chrome_trace(store, store.find_run("baseline"), 3, 3);
    int xs = 0;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] != "X") continue;
      ++xs;
      QCOMPARE(e["args"]["step"].get<int64_t>(), int64_t(3));
      if (e["name"] == "step") QNEAR(e["ts"].get<double>(), 0.0);  // both ranks: aligned on step 3
    }
    QCOMPARE(xs, 20);
  }

  void csv_export_round_trips() {
    RunStore store(db_, RunStore::Mode::read_only);
    const std::string out = dir_.filePath(u"csv/nested"_s).toStdString();
    export_csv(store, store.find_run("baseline"), out);
    const auto run = read_csv(out + "/run.csv");
    QCOMPARE(run.size(), size_t(2));
    QCOMPARE(run[0].front(), std::string("id"));
    QCOMPARE(run[0].back(), std::string("config_json"));
    QCOMPARE(run[1][2], std::string("baseline"));
    QCOMPARE(run[1][4], std::string("FINISHED"));
    QCOMPARE(run[1].back(), std::string(R"({"moe":{"experts":[4],"moe_layers":[1],"top_k":2}})"));
    const auto params = read_csv(out + "/params.csv");
    QCOMPARE(params[0], (std::vector<std::string>{"key", "value"}));
    bool note = false;
    for (const auto& r : params) note = note || (r.size() == 2 && r[0] == "note" && r[1] == kNote);
    QVERIFY(note);
    const auto metrics = read_csv(out + "/metrics.csv");
    QCOMPARE(metrics[0], (std::vector<std::string>{"step", "key", "value", "timestamp"}));
    QCOMPARE(metrics.size(), size_t(1 + 10));
    bool eval = false;
    for (const auto& r : metrics) eval = eval || (r[0] == "3" && r[1] == "eval_loss" && std::stod(r[2]) == 2.2);
    QVERIFY(eval);
    const auto spans = read_csv(out + "/spans.csv");
    QCOMPARE(spans[0], (std::vector<std::string>{"step", "rank", "stream", "name", "category", "start", "duration",
                                                 "bytes", "peer", "layer", "expert", "flops", "chunk"}));
    QCOMPARE(spans.size(), size_t(1 + 60));
    double wait_total = 0;
    for (size_t i = 1; i < spans.size(); ++i)
      if (spans[i][3] == "grad.wait") wait_total += std::stod(spans[i][6]);
    QNEAR(wait_total, 6 * 0.001);
    const auto traffic = read_csv(out + "/traffic.csv");
    QCOMPARE(traffic[0], (std::vector<std::string>{"step", "rank", "peer", "link", "bytes"}));
    QCOMPARE(traffic.size(), size_t(1 + 7));
    const auto routing = read_csv(out + "/routing.csv");
    QCOMPARE(routing[0], (std::vector<std::string>{"step", "layer", "source_rank", "expert", "tokens"}));
    QCOMPARE(routing.size(), size_t(1 + 30));
    int64_t tokens = 0;
    for (size_t i = 1; i < routing.size(); ++i) tokens += std::stoll(routing[i][4]);
    QCOMPARE(tokens, int64_t(360 + 120));
    QCOMPARE(csv_field("plain"), std::string("plain"));
    QCOMPARE(csv_field("a,b"), std::string("\"a,b\""));
    QCOMPARE(csv_field("say \"hi\""), std::string("\"say \"\"hi\"\"\""));
    QCOMPARE(csv_field(" pad"), std::string("\" pad\""));
  }

  void cli_list_show_compare() {
    Result r = run_cli({u"runs"_s, u"list"_s, u"--db"_s, qdb(), u"--json"_s});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    json list = parse(r.out);
    QCOMPARE(list.size(), size_t(2));
    QCOMPARE(list[0]["name"].get<std::string>(), std::string("baseline"));
    QCOMPARE(list[0]["steps"].get<int>(), 3);
    QCOMPARE(list[0]["final_loss"].get<double>(), 2.0);
    QCOMPARE(list[0]["status"].get<std::string>(), std::string("FINISHED"));
    QCOMPARE(list[1]["strategy"].get<std::string>(), std::string("hier_a2a"));

    r = run_cli({u"runs"_s, u"list"_s}, dir_.path());  // --db defaults to ./runs.db
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(u"FINAL LOSS"_s) && r.out.contains(u"baseline"_s) && r.out.contains(u"2.0000"_s) &&
                 r.out.contains(u"42.0s"_s),
             qPrintable(r.out));
    r = run_cli({u"runs"_s, u"list"_s, u"--experiment"_s, u"other"_s}, dir_.path());
    QCOMPARE(r.code, 0);
    QVERIFY(!r.out.contains(u"baseline"_s));

    r = run_cli({u"runs"_s, u"show"_s, u"baseline"_s, u"--db"_s, qdb(), u"--json"_s});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    json show = parse(r.out);
    QCOMPARE(show["run"]["name"].get<std::string>(), std::string("baseline"));
    QCOMPARE(show["params"]["model.hidden"].get<std::string>(), std::string("128"));
    QCOMPARE(show["summary"]["mean_step_ms"].get<double>(), 15.0);
    QVERIFY(near(show["summary"]["phases"]["comm_share"].get<double>(), 0.21875));
    QCOMPARE(show["summary"]["max_imbalance"].get<double>(), 2.0);
    r = run_cli({u"runs"_s, u"show"_s, u"1"_s, u"--db"_s, qdb()});
    QVERIFY2(r.code == 0 && r.out.contains(u"expert_centric"_s) && r.out.contains(u"model.hidden = 128"_s),
             qPrintable(r.out + r.err));

    r = run_cli({u"runs"_s, u"compare"_s, u"baseline"_s, u"faster"_s, u"--db"_s, qdb(), u"--json"_s});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    json cmp = parse(r.out);
    QCOMPARE(cmp["baseline"]["name"].get<std::string>(), std::string("baseline"));
    QCOMPARE(cmp["runs"][0]["speedup_ms_per_step"].get<double>(), 1.0);
    QCOMPARE(cmp["runs"][1]["speedup_ms_per_step"].get<double>(), 2.0);
    QCOMPARE(cmp["runs"][1]["speedup_tokens_per_s"].get<double>(), 2.0);
    QCOMPARE(cmp["runs"][1]["ms_per_step"].get<double>(), 7.5);
    QCOMPARE(cmp["runs"][0]["eval_loss"].get<double>(), 2.2);
    QVERIFY(cmp["runs"][1]["eval_loss"].is_null());
    QVERIFY(cmp["runs"][1]["comm_share"].is_null());
    QCOMPARE(cmp["runs"][0]["intra_mb_per_step"].get<double>(), 0.003);
    QCOMPARE(cmp["runs"][0]["max_imbalance"].get<double>(), 2.0);
    r = run_cli({u"runs"_s, u"compare"_s, u"baseline"_s, u"faster"_s, u"--db"_s, qdb()});
    QVERIFY2(r.code == 0 && r.out.contains(u"2.00x"_s) && r.out.contains(u"21.9%"_s), qPrintable(r.out + r.err));
    r = run_cli({u"runs"_s, u"compare"_s, u"baseline"_s, u"--db"_s, qdb()});
    QCOMPARE(r.code, 2);  // needs two runs
  }

  void cli_trace_and_export() {
    const QString out = dir_.filePath(u"trace.json"_s);
    Result r = run_cli({u"trace"_s, u"baseline"_s, u"--db"_s, qdb(), u"-o"_s, out});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    json t = json::parse(read_bytes(out).toStdString());
    int xs = 0;
    for (const auto& e : t["traceEvents"]) xs += e["ph"] == "X";
    QCOMPARE(xs, 60);
    r = run_cli({u"trace"_s, u"baseline"_s, u"--db"_s, qdb(), u"--steps"_s, u"1:2"_s, u"-o"_s, out,
                 u"--force"_s});  // replaces the first trace
    QVERIFY2(r.code == 0, qPrintable(r.err));
    t = json::parse(read_bytes(out).toStdString());
    xs = 0;
    for (const auto& e : t["traceEvents"]) xs += e["ph"] == "X";
    QCOMPARE(xs, 40);
    for (const QString& bad : {u"x:y"_s, u"2:1"_s, u"1:2:3"_s, u"-1"_s, u"0"_s, u"0:2"_s, u":0"_s}) {
      r = run_cli({u"trace"_s, u"baseline"_s, u"--db"_s, qdb(), u"--steps"_s, bad, u"-o"_s, out});
      QVERIFY2(r.code == 2 && r.err.contains(u"--steps"_s), qPrintable(bad + u": "_s + r.err));
    }
    r = run_cli({u"trace"_s, u"faster"_s, u"--db"_s, qdb(), u"-o"_s, out, u"--force"_s});
    QVERIFY2(r.code == 1 && r.err.contains(u"no spans"_s), qPrintable(r.err));

    const QString csv = dir_.filePath(u"export"_s);
    r = run_cli({u"export"_s, u"baseline"_s, u"--csv"_s, csv, u"--db"_s, qdb()});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (const char* f : {"run.csv", "params.csv", "metrics.csv", "spans.csv", "traffic.csv", "routing.csv"})
      QVERIFY2(QFile::exists(csv + u"/"_s + QString::fromUtf8(f)), f);
    QCOMPARE(read_csv((csv + u"/spans.csv"_s).toStdString()).size(), size_t(61));

    // Existing files are not replaced without --force (exit 2, nothing written), then are.
    const QByteArray spans = read_bytes(csv + u"/spans.csv"_s);
    QVERIFY(QFile(csv + u"/spans.csv"_s).resize(10));
    r = run_cli({u"export"_s, u"faster"_s, u"--csv"_s, csv, u"--db"_s, qdb()});
    QVERIFY2(r.code == 2 && r.err.contains(csv + u"/run.csv already exists (and 6 more)"_s) &&
                 r.err.contains(u"--force"_s),
             qPrintable(r.err));
    QCOMPARE(read_bytes(csv + u"/spans.csv"_s).size(), qsizetype(10));
    r = run_cli({u"export"_s, u"baseline"_s, u"--csv"_s, csv, u"--db"_s, qdb(), u"--force"_s});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(read_bytes(csv + u"/spans.csv"_s), spans);
  }

  // An export that fails half-way leaves nothing behind: no temporary file, no final file it
  // added, not the folders it created. The run has 2000 spans (spans.csv > 64 KiB).
  void cli_export_is_all_or_nothing() {
    const QString db = dir_.filePath(u"big.db"_s);
    {
      RunStore store(db.toStdString());
      const int64_t run = store.create_run(RunInfo{}).id;
      std::vector<SpanRow> spans;
      for (int i = 0; i < 2000; ++i) spans.push_back(span(1, i % 2, "compute", "forward", "compute", 0.001 * i, 0.001));
      store.log_step(run, {{"loss", 1, 1.0, 0}}, spans, {}, {});
    }
    // 1. spans.csv cannot be written: a 64 KiB file size limit (SIGXFSZ ignored: write fails).
    const QString limited = dir_.filePath(u"limited/nested"_s);
    QProcess p;
    p.start(u"bash"_s, {u"-c"_s, u"trap '' XFSZ; ulimit -f 64; exec \"$0\" \"$@\""_s, QStringLiteral(MOEBENCH_CLI),
                        u"export"_s, u"1"_s, u"--csv"_s, limited, u"--db"_s, db});
    QVERIFY(p.waitForFinished(60000));
    QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitCode() == 1 && err.contains(u"cannot write "_s + limited + u"/spans.csv"_s), qPrintable(err));
    QVERIFY(!QFile::exists(dir_.filePath(u"limited"_s)));
    // 2. spans.csv cannot be renamed into place (a folder of that name; --force replaces files only).
    const QString blocked = dir_.filePath(u"blocked"_s);
    QVERIFY(QDir().mkpath(blocked + u"/spans.csv/inside"_s));
    Result r = run_cli({u"export"_s, u"1"_s, u"--csv"_s, blocked, u"--db"_s, db, u"--force"_s});
    QVERIFY2(r.code == 1 && r.err.contains(u"cannot write "_s + blocked + u"/spans.csv"_s), qPrintable(r.err));
    QCOMPARE(QDir(blocked).entryList(QDir::NoDotAndDotDot | QDir::AllEntries | QDir::Hidden),
             QStringList{u"spans.csv"_s});
  }

  void cli_errors() {
    Result r = run_cli({u"runs"_s, u"show"_s, u"nosuchrun"_s, u"--db"_s, qdb()});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(u"no run"_s), qPrintable(r.err));
    r = run_cli({u"trace"_s, u"nosuchrun"_s, u"--db"_s, qdb(), u"-o"_s, dir_.filePath(u"x.json"_s)});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(u"no run"_s), qPrintable(r.err));

    const QString missing = dir_.filePath(u"missing.db"_s);
    r = run_cli({u"runs"_s, u"list"_s, u"--db"_s, missing});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(u"does not exist"_s) && r.err.contains(missing), qPrintable(r.err));
    QVERIFY(!QFile::exists(missing));
    r = run_cli({u"runs"_s, u"delete"_s, u"1"_s, u"--db"_s, missing});
    QCOMPARE(r.code, 1);
    QVERIFY(!QFile::exists(missing));  // never created, not even by the writing verb

    const QString corrupt = dir_.filePath(u"corrupt.db"_s);
    QByteArray junk;
    quint32 x = 12345;
    for (int i = 0; i < 8192; ++i) junk.append(char((x = x * 1664525u + 1013904223u) >> 24));
    {
      QFile f(corrupt);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(junk);
    }
    for (const QStringList& args : {QStringList{u"runs"_s, u"list"_s}, QStringList{u"runs"_s, u"show"_s, u"1"_s},
                                    QStringList{u"trace"_s, u"1"_s, u"-o"_s, dir_.filePath(u"y.json"_s)}}) {
      r = run_cli(args + QStringList{u"--db"_s, corrupt});
      QCOMPARE(r.code, 1);
      QVERIFY2(r.err.startsWith(u"moebench: "_s) && r.err.contains(corrupt), qPrintable(r.err));
      QCOMPARE(read_bytes(corrupt), junk);
    }
  }

  void cli_delete() {
    const QString copy = dir_.filePath(u"delete.db"_s);
    build_store(copy.toStdString());
    Result r = run_cli({u"runs"_s, u"delete"_s, u"faster"_s, u"--db"_s, copy});
    QVERIFY2(r.code == 0 && r.out.contains(u"deleted run"_s), qPrintable(r.err));
    r = run_cli({u"runs"_s, u"list"_s, u"--db"_s, copy, u"--json"_s});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    json list = parse(r.out);
    QCOMPARE(list.size(), size_t(1));
    QCOMPARE(list[0]["name"].get<std::string>(), std::string("baseline"));
    r = run_cli({u"runs"_s, u"show"_s, u"faster"_s, u"--db"_s, copy});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(u"no run"_s), qPrintable(r.err));
    // The deleted run's rows are gone too: the remaining run still summarises the same.
    RunStore store(copy.toStdString(), RunStore::Mode::read_only);
    QCOMPARE(summarize_run(store, store.find_run("baseline")).mean_step_ms, 15.0);
  }
};

QTEST_APPLESS_MAIN(TestRunAnalysis)
#include "tst_run_analysis.moc"
