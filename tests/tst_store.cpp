// ctest-labels: unit
// store/run_store: schema round trip, migrations, WAL reader beside a writer, runs whose process
// vanished, corrupt and foreign files (clear errors, file left unchanged), run lookup, cascades.
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <random>
#include <thread>

#include "moebench/store/run_store.h"

#include "store_support.h"
#include "test_support.h"

using namespace moebench;
using namespace moebench::test;

namespace {

SpanRow span(int64_t step, int i) {
  SpanRow r;
  r.step = step;
  r.rank = i % 4;
  r.stream = i % 2 ? "comm" : "compute";
  r.name = "task" + std::to_string(i);
  r.category = i % 2 ? "comm" : "compute";
  r.start = 0.001 * i;
  r.duration = 0.0005 + 1e-6 * i;
  r.bytes = 1000 * i;
  r.peer = i % 2 ? (i + 1) % 4 : -1;
  r.layer = i % 3;
  r.expert = i % 5 - 1;
  r.flops = i % 2 ? 0.0 : 2.5e6 * (i + 1);
  r.chunk = i % 3 - 1;
  return r;
}

// A store with `steps` steps of `spans_per_step` spans, closed again.
int64_t fill_store(const std::string& path, int steps, int spans_per_step) {
  RunStore store(path);
  RunInfo run = store.create_run(RunInfo{});
  for (int s = 0; s < steps; ++s) {
    std::vector<SpanRow> spans;
    for (int i = 0; i < spans_per_step; ++i) spans.push_back(span(s, i));
    store.log_step(run.id, {{"loss", s, 3.0 - 0.01 * s, 0}}, spans, {}, {});
  }
  return run.id;
}

bool contains(const QString& msg, const std::string& part) { return msg.contains(QString::fromStdString(part)); }

}  // namespace

class TestStore : public QObject {
  Q_OBJECT

 private slots:
  void status_names() {
    for (RunStatus s : {RunStatus::running, RunStatus::finished, RunStatus::failed, RunStatus::killed})
      QCOMPARE(parse_run_status(run_status_name(s)), s);
    QCOMPARE(QString(run_status_name(RunStatus::killed)), QString("KILLED"));
    QCOMPARE(parse_run_status("failed"), RunStatus::failed);
    QVERIFY(error_message<StoreError>([] { parse_run_status("DONE"); }).contains("unknown run status 'DONE'"));
  }

  void round_trip() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    RunInfo in;
    in.name = "janus-small";
    in.experiment = "exp-a";
    in.strategy = "janus";
    in.config_json = "{\"model\":{\"layers\":4},\"name\":\"it's \\\"quoted\\\"\"}";
    in.topology = "2 nodes x 2 devices (virtual)";
    in.git_rev = "f862f3a";
    in.ranks = 4;
    const double before = (double)QDateTime::currentMSecsSinceEpoch() / 1000.0;
    RunInfo made;
    {
      RunStore store(path);
      QCOMPARE(store.path(), path);
      made = store.create_run(in);
      QVERIFY(made.id > 0);
      QCOMPARE(made.uuid.size(), size_t(32));
      QVERIFY(made.uuid.find_first_not_of("0123456789abcdef") == std::string::npos);
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      QCOMPARE(made.host, std::string(host));
      QCOMPARE(made.pid, (int64_t)getpid());
      QVERIFY(made.start_time >= before - 1 && made.start_time <= before + 60);
      QCOMPARE(made.status, RunStatus::running);
      QCOMPARE(made.end_time, 0.0);

      store.log_params(made.id, {{"lr", "0.01"}, {"batch", "8"}});
      store.log_params(made.id, {{"lr", "0.001"}});  // a later value replaces the earlier one
      store.set_tag(made.id, "note", "x'); DROP TABLE runs; --");
      store.set_tag(made.id, "owner", "me");
      const double nan = std::nan(""), inf = INFINITY;
      store.log_step(made.id, {{"loss", 0, 2.5, 1000.25}, {"grad_norm", 0, nan, 1000.5}, {"inf", 0, inf, 1000.5}},
                     {span(0, 0), span(0, 1)}, {{0, 0, 1, "intra_node", 4096}, {0, 1, 3, "inter_node", 8192}},
                     {{0, 2, 0, 3, 17}, {0, 2, 1, 0, 5}});
      store.log_step(made.id, {{"loss", 1, 2.25, 1001.25}}, {span(1, 2)}, {{1, 2, 0, "inter_node", 1}},
                     {{1, 5, 3, 7, 9}});
    }
    RunStore store(path, RunStore::Mode::read_only);
    RunInfo back = store.find_run(std::to_string(made.id));
    QCOMPARE(back.id, made.id);
    QCOMPARE(back.uuid, made.uuid);
    QCOMPARE(back.name, in.name);
    QCOMPARE(back.experiment, in.experiment);
    QCOMPARE(back.status, RunStatus::running);
    QCOMPARE(back.strategy, in.strategy);
    QCOMPARE(back.config_json, in.config_json);
    QCOMPARE(back.topology, in.topology);
    QCOMPARE(back.git_rev, in.git_rev);
    QCOMPARE(back.host, made.host);
    QCOMPARE(back.pid, made.pid);
    QCOMPARE(back.start_time, made.start_time);
    QCOMPARE(back.end_time, 0.0);
    QCOMPARE(back.ranks, 4);
    QCOMPARE(store.list_runs().size(), size_t(1));
    QCOMPARE(store.list_runs("exp-a").size(), size_t(1));
    QCOMPARE(store.list_runs("other").size(), size_t(0));

    using KV = std::vector<std::pair<std::string, std::string>>;
    QVERIFY(store.params(made.id) == (KV{{"batch", "8"}, {"lr", "0.001"}}));
    QVERIFY(store.tags(made.id) == (KV{{"note", "x'); DROP TABLE runs; --"}, {"owner", "me"}}));
    QVERIFY(store.metric_keys(made.id) == (std::vector<std::string>{"grad_norm", "inf", "loss"}));
    auto loss = store.metrics(made.id, "loss");
    QCOMPARE(loss.size(), size_t(2));
    QCOMPARE(loss[0].key, std::string("loss"));
    QCOMPARE(loss[0].step, int64_t(0));
    QCOMPARE(loss[0].value, 2.5);
    QCOMPARE(loss[0].timestamp, 1000.25);
    QCOMPARE(loss[1].step, int64_t(1));
    QCOMPARE(loss[1].value, 2.25);
    QVERIFY(std::isnan(store.metrics(made.id, "grad_norm").at(0).value));  // NaN survives (stored as NULL)
    QCOMPARE(store.metrics(made.id, "inf").at(0).value, (double)INFINITY);
    auto all = store.metrics(made.id);
    QCOMPARE(all.size(), size_t(4));
    QCOMPARE(all.back().step, int64_t(1));

    using Steps = std::vector<int64_t>;
    QVERIFY(store.steps_with(made.id, RecordTable::spans) == (Steps{0, 1}));
    QVERIFY(store.steps_with(made.id, RecordTable::traffic) == (Steps{0, 1}));
    QVERIFY(store.steps_with(made.id, RecordTable::routing) == (Steps{0, 1}));
    auto spans = store.spans(made.id);
    QCOMPARE(spans.size(), size_t(3));
    for (size_t i = 0; i < spans.size(); ++i) {
      SpanRow want = span(i < 2 ? 0 : 1, (int)i);
      const SpanRow& got = spans[i];
      QCOMPARE(got.step, want.step);
      QCOMPARE(got.rank, want.rank);
      QCOMPARE(got.stream, want.stream);
      QCOMPARE(got.name, want.name);
      QCOMPARE(got.category, want.category);
      QCOMPARE(got.start, want.start);
      QCOMPARE(got.duration, want.duration);
      QCOMPARE(got.bytes, want.bytes);
      QCOMPARE(got.peer, want.peer);
      QCOMPARE(got.layer, want.layer);
      QCOMPARE(got.expert, want.expert);
      QCOMPARE(got.flops, want.flops);
      QCOMPARE(got.chunk, want.chunk);
    }
    QCOMPARE(store.spans(made.id, 1, 1).size(), size_t(1));
    QCOMPARE(store.spans(made.id, 0, 0).size(), size_t(2));
    QCOMPARE(store.spans(made.id, 2).size(), size_t(0));

    auto traffic = store.traffic(made.id);
    QCOMPARE(traffic.size(), size_t(3));
    QCOMPARE(traffic[1].step, int64_t(0));
    QCOMPARE(traffic[1].rank, 1);
    QCOMPARE(traffic[1].peer, 3);
    QCOMPARE(traffic[1].link, std::string("inter_node"));
    QCOMPARE(traffic[1].bytes, int64_t(8192));
    QCOMPARE(store.traffic(made.id, 1).size(), size_t(1));

    auto routing = store.routing(made.id);
    QCOMPARE(routing.size(), size_t(3));
    QCOMPARE(routing[2].step, int64_t(1));
    QCOMPARE(routing[2].layer, 5);
    QCOMPARE(routing[2].source_rank, 3);
    QCOMPARE(routing[2].expert, 7);
    QCOMPARE(routing[2].tokens, int64_t(9));
    QCOMPARE(store.routing(made.id, 0, 0).size(), size_t(2));

    RunStore writer(path);
    writer.set_status(made.id, RunStatus::finished, 0);  // 0: now
    RunInfo done = store.find_run(made.uuid);
    QCOMPARE(done.status, RunStatus::finished);
    QVERIFY(done.end_time >= made.start_time);
  }

  void errors_for_unknown_runs_and_read_only() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    RunStore store(path);
    RunInfo run = store.create_run(RunInfo{});
    QVERIFY(contains(error_message<StoreError>([&] { store.log_step(999, {{"loss", 0, 1, 0}}, {}, {}, {}); }),
                     "no run 999 in " + path));
    QVERIFY(contains(error_message<StoreError>([&] { store.set_tag(999, "a", "b"); }), "no run 999 in"));
    QVERIFY(contains(error_message<StoreError>([&] { store.set_status(999, RunStatus::failed, 1); }), "no run 999"));
    QVERIFY(contains(error_message<StoreError>([&] { store.params(999); }), "no run 999"));
    QVERIFY(contains(error_message<StoreError>([&] { store.spans(999); }), "no run 999"));
    QVERIFY(contains(error_message<StoreError>([&] { store.delete_run(999); }), "no run 999"));
    RunInfo dup;
    dup.uuid = run.uuid;
    QVERIFY(contains(error_message<StoreError>([&] { store.create_run(dup); }), "UNIQUE constraint failed"));

    RunStore reader(path, RunStore::Mode::read_only);
    QVERIFY(contains(error_message<StoreError>([&] { reader.set_tag(run.id, "a", "b"); }), "open read-only"));
    QVERIFY(contains(error_message<StoreError>([&] { reader.create_run(RunInfo{}); }), "open read-only"));
    QCOMPARE(reader.list_runs().size(), size_t(1));
  }

  void schema_layout() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    { RunStore store(path); store.create_run(RunInfo{}); }
    QCOMPARE(raw_one(path, "PRAGMA journal_mode"), QString("wal"));
    QCOMPARE(raw_one(path, "PRAGMA user_version").toInt(), RunStore::schema_version());
    QStringList indexes = raw_rows(path, "SELECT name FROM sqlite_master WHERE type = 'index'");
    for (const char* want : {"metrics_run_step", "metrics_run_key_step", "spans_run_step", "traffic_run_step",
                             "routing_run_step"})
      QVERIFY2(indexes.contains(want), want);
    for (const char* table : {"params", "tags", "metrics", "spans", "traffic", "routing"}) {
      QString on_delete = raw_one(path, std::string("SELECT on_delete FROM pragma_foreign_key_list('") + table + "')");
      QVERIFY2(on_delete == "CASCADE", table);
    }
    // Reads by (run, step range) walk the index in order: no sort.
    QString plan = raw_rows(path, "EXPLAIN QUERY PLAN SELECT * FROM spans WHERE run = 1 AND step >= 0 AND step <= 9 "
                                  "ORDER BY step, rowid", 3).join(" | ");
    QVERIFY2(plan.contains("spans_run_step") && !plan.contains("TEMP B-TREE"), qPrintable(plan));
  }

  void migrations() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    int64_t id = fill_store(path, 3, 2);
    {
      RunStore again(path);  // already at the current version: opens as it is
      QCOMPARE(again.find_run(std::to_string(id)).id, id);
    }
    QCOMPARE(raw_one(path, "PRAGMA user_version").toInt(), RunStore::schema_version());

    const int newer = RunStore::schema_version() + 5;
    raw_rows(path, "PRAGMA user_version = " + std::to_string(newer));
    const std::string before = read_bytes(path);
    for (auto mode : {RunStore::Mode::read_write, RunStore::Mode::read_only}) {
      QString msg = error_message<StoreError>([&] { RunStore s(path, mode); });
      QVERIFY2(contains(msg, path + " has schema version " + std::to_string(newer) + "; this moebench knows up to " +
                                 std::to_string(RunStore::schema_version()) + ": upgrade moebench"),
               qPrintable(msg));
      QVERIFY(read_bytes(path) == before);
    }
  }

  void wal_reader_beside_writer() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    int64_t run = 0;
    { RunStore store(path); run = store.create_run(RunInfo{}).id; }
    constexpr int kSteps = 300, kSpans = 20;
    std::atomic<bool> done{false};
    std::string writer_error;
    std::jthread writer([&] {
      try {
        RunStore w(path);
        for (int s = 0; s < kSteps; ++s) {
          std::vector<SpanRow> spans;
          for (int i = 0; i < kSpans; ++i) spans.push_back(span(s, i));
          w.log_step(run, {{"loss", s, 1.0 / (1 + s), 0}}, spans, {}, {});
        }
      } catch (const std::exception& e) {
        writer_error = e.what();
      }
      done = true;
    });
    std::string reader_error;
    size_t seen = 0, reads = 0;
    try {
      RunStore r(path, RunStore::Mode::read_only);
      bool last = false;
      while (!last && reader_error.empty()) {
        last = done.load();
        auto loss = r.metrics(run, "loss");
        for (size_t i = 0; i < loss.size(); ++i)
          if (loss[i].step != (int64_t)i) reader_error = "steps not contiguous at " + std::to_string(i);
        if (loss.size() < seen) reader_error = "committed steps went backwards";
        seen = loss.size();
        size_t n_spans = r.spans(run).size();  // a later snapshot: at least as many whole steps
        if (n_spans % kSpans != 0 || n_spans / kSpans < seen) reader_error = "a step was seen half written";
        ++reads;
      }
    } catch (const std::exception& e) {
      reader_error = e.what();
    }
    writer.join();
    QVERIFY2(writer_error.empty(), writer_error.c_str());
    QVERIFY2(reader_error.empty(), reader_error.c_str());
    QCOMPARE(seen, size_t(kSteps));
    qInfo("reader made %zu consistent reads while the writer logged %d steps", reads, kSteps);
  }

  // Ending a run moves the WAL into the main file even while a reader keeps the store open:
  // a copy of the main file alone (what scp fetches from a remote host) holds the whole run.
  void ended_run_is_in_the_main_file() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    RunStore writer(path);
    RunStore reader(path, RunStore::Mode::read_only);
    const int64_t run = writer.create_run(RunInfo{}).id;
    for (int s = 0; s < 5; ++s) writer.log_step(run, {{"loss", s, 1.0, 0}}, {span(s, 0)}, {}, {});
    QCOMPARE(reader.metrics(run, "loss").size(), size_t(5));  // the reader has read (and let go)
    const std::string copy = dir.filePath("copy.db").toStdString();
    auto copy_main_file = [&] {
      std::filesystem::remove(copy);
      std::filesystem::copy_file(path, copy);
    };
    copy_main_file();
    bool complete_before = false;  // while running, the copy lacks what is still in the WAL
    try {
      RunStore before(copy, RunStore::Mode::read_only);
      complete_before = before.metrics(run, "loss").size() == 5;
    } catch (const StoreError&) {  // here: even the schema is still in the WAL
    }
    QVERIFY(!complete_before);
    writer.set_status(run, RunStatus::finished, 0);
    copy_main_file();
    RunStore after(copy, RunStore::Mode::read_only);
    QCOMPARE(after.metrics(run, "loss").size(), size_t(5));
    QCOMPARE(after.find_run(std::to_string(run)).status, RunStatus::finished);
  }

  void vanished_runs_are_marked_failed() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    const pid_t dead = dead_pid();
    RunInfo gone, alive, elsewhere, finished;
    {
      RunStore store(path);
      RunInfo g;
      g.name = "gone";
      g.pid = dead;
      gone = store.create_run(g);
      for (int s = 0; s < 4; ++s) store.log_step(gone.id, {{"loss", s, 1.0, 100.0 + s}}, {span(s, 0)}, {}, {});
      RunInfo a;
      a.name = "alive";  // our own pid
      alive = store.create_run(a);
      RunInfo e;
      e.name = "elsewhere";
      e.pid = dead;
      e.host = "another-host.invalid";
      elsewhere = store.create_run(e);
      RunInfo f;
      f.name = "finished";
      f.pid = dead;
      f.status = RunStatus::finished;
      f.end_time = 77;
      finished = store.create_run(f);
    }
    {
      RunStore reader(path, RunStore::Mode::read_only);  // readers never change runs...
      QCOMPARE(reader.find_run("gone").status, RunStatus::failed);  // ...but show the vanished one failed,
      QCOMPARE(reader.find_run("gone").end_time, 103.0);            // ended at its last metric
      QCOMPARE(reader.find_run("alive").status, RunStatus::running);
      QCOMPARE(reader.find_run("alive").end_time, 0.0);
    }
    {
      sqlite3* raw = nullptr;  // and nothing was written: the row still says RUNNING
      QCOMPARE(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
      sqlite3_stmt* st = nullptr;
      sqlite3_prepare_v2(raw, "SELECT status FROM runs WHERE name = 'gone'", -1, &st, nullptr);
      QCOMPARE(sqlite3_step(st), SQLITE_ROW);
      QCOMPARE(QString((const char*)sqlite3_column_text(st, 0)), QString("RUNNING"));
      sqlite3_finalize(st);
      sqlite3_close(raw);
    }
    RunStore store(path);
    RunInfo g = store.find_run("gone");
    QCOMPARE(g.status, RunStatus::failed);
    QCOMPARE(g.end_time, 103.0);  // the last metric's timestamp
    QCOMPARE(store.metrics(g.id, "loss").size(), size_t(4));
    QCOMPARE(store.spans(g.id).size(), size_t(4));
    QCOMPARE(store.find_run("alive").status, RunStatus::running);
    QCOMPARE(store.find_run("elsewhere").status, RunStatus::running);
    QCOMPARE(store.find_run("finished").status, RunStatus::finished);
    QCOMPARE(store.find_run("finished").end_time, 77.0);
    QCOMPARE(store.mark_vanished_runs(), 0);

    RunInfo quiet;  // no metrics: end_time falls back to start_time
    quiet.name = "quiet";
    quiet.pid = dead;
    quiet.start_time = 50;
    store.create_run(quiet);
    QCOMPARE(store.mark_vanished_runs(), 1);
    QCOMPARE(store.find_run("quiet").status, RunStatus::failed);
    QCOMPARE(store.find_run("quiet").end_time, 50.0);
  }

  void bad_files_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("random bytes") << "random" << "is not a moebench run database (file is not a database)";
    QTest::newRow("text file") << "text" << "is not a moebench run database (file is not a database)";
    QTest::newRow("truncated store") << "truncated" << "is corrupt";
    QTest::newRow("damaged pages") << "damaged" << "is corrupt";
    QTest::newRow("other application") << "other" << "is a SQLite database but not a moebench run store";
    QTest::newRow("other app, user_version 3") << "other_v3" << "is a SQLite database but not a moebench run store";
    QTest::newRow("other application_id") << "other_id" << "is a SQLite database but not a moebench run store";
    QTest::newRow("other app, WAL not checkpointed") << "other_wal"
                                                     << "is a SQLite database but not a moebench run store";
  }

  void bad_files() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    std::mt19937 rng(42);
    auto random_bytes = [&](size_t n) {
      std::string s(n, '\0');
      for (char& c : s) c = (char)(rng() & 0xff);
      return s;
    };
    if (kind == "random") {
      write_bytes(path, random_bytes(8192));
    } else if (kind == "text") {
      write_bytes(path, "step,loss\n0,2.5\n1,2.25\n");
    } else if (kind == "truncated" || kind == "damaged") {
      fill_store(path, 200, 20);
      std::string bytes = read_bytes(path);
      QVERIFY(bytes.size() > 64 * 4096);
      if (kind == "truncated") {
        bytes.resize(bytes.size() * 2 / 5);
      } else {
        size_t at = bytes.size() / 2 / 4096 * 4096;
        bytes.replace(at, 8 * 4096, random_bytes(8 * 4096));
      }
      write_bytes(path, bytes);
    } else if (kind == "other") {
      raw_rows(path, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)");
      raw_rows(path, "INSERT INTO notes (body) VALUES ('keep me')");
    } else if (kind == "other_v3") {
      raw_rows(path, "CREATE TABLE runs (id INTEGER PRIMARY KEY, what TEXT)");
      raw_rows(path, "PRAGMA user_version = 3");
    } else if (kind == "other_id") {
      raw_rows(path, "PRAGMA application_id = 42");
    } else if (kind == "other_wal") {  // its last rows only in the -wal file, as after a crash
      sqlite3* db = nullptr;
      QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
      sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int*)nullptr);
      QCOMPARE(sqlite3_exec(db, "PRAGMA journal_mode = WAL; CREATE TABLE notes (body TEXT); "
                                "INSERT INTO notes VALUES ('only in the wal')", nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_close(db);
      QVERIFY(!read_bytes(path + "-wal").empty());
    }
    const std::string before = read_bytes(path), before_wal = read_bytes(path + "-wal");
    QVERIFY(!before.empty());
    for (auto mode : {RunStore::Mode::read_write, RunStore::Mode::read_only}) {
      QString msg = error_message<StoreError>([&] { RunStore s(path, mode); });
      QVERIFY2(msg.contains(expected) && contains(msg, path), qPrintable(msg));
      QVERIFY2(read_bytes(path) == before, "the file was changed");
      QVERIFY2(read_bytes(path + "-wal") == before_wal, "its WAL was changed");
      if (mode == RunStore::Mode::read_write) qInfo("%s", qPrintable(msg));
    }
  }

  void empty_and_missing_files() {
    QTemporaryDir dir;
    // An empty file is a valid empty SQLite database: a reader refuses it, a writer makes it a store.
    const std::string empty = dir.filePath("empty.db").toStdString();
    write_bytes(empty, "");
    QVERIFY(contains(error_message<StoreError>([&] { RunStore s(empty, RunStore::Mode::read_only); }),
                     empty + " is empty"));
    QVERIFY(read_bytes(empty).empty());
    {
      RunStore s(empty);
      s.create_run(RunInfo{});
    }
    QCOMPARE(RunStore(empty, RunStore::Mode::read_only).list_runs().size(), size_t(1));

    const std::string missing = dir.filePath("missing.db").toStdString();
    QVERIFY(contains(error_message<StoreError>([&] { RunStore s(missing, RunStore::Mode::read_only); }),
                     missing + " does not exist"));
    QVERIFY(!QFile::exists(QString::fromStdString(missing)));
    const std::string nodir = dir.filePath("no/such/dir/runs.db").toStdString();
    QVERIFY(contains(error_message<StoreError>([&] { RunStore s(nodir); }), "does not exist"));
    QVERIFY(contains(error_message<StoreError>([&] { RunStore s(dir.path().toStdString()); }), "is a directory"));
  }

  void find_run() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    RunStore store(path);
    auto make = [&](const char* name, const char* uuid) {
      RunInfo r;
      r.name = name;
      r.uuid = uuid;
      return store.create_run(r);
    };
    RunInfo alpha = make("alpha", "abcd0000000000000000000000000001");
    RunInfo beta1 = make("beta", "abcd0000000000000000000000000002");
    RunInfo beta2 = make("beta", "abce0000000000000000000000000003");
    RunInfo digits = make("gamma", "99990000000000000000000000000004");
    QCOMPARE(store.find_run("1").id, alpha.id);
    QCOMPARE(store.find_run(std::to_string(beta2.id)).id, beta2.id);
    QCOMPARE(store.find_run(beta1.uuid).id, beta1.id);
    QCOMPARE(store.find_run("abce").id, beta2.id);
    QCOMPARE(store.find_run("ABCE0000").id, beta2.id);
    QCOMPARE(store.find_run("9999").id, digits.id);  // no run with id 9999: a uuid prefix
    QCOMPARE(store.find_run("alpha").id, alpha.id);
    QCOMPARE(error_message<StoreError>([&] { store.find_run("abcd"); }),
             QString("'abcd' matches 2 runs: use more of the uuid"));
    QVERIFY(error_message<StoreError>([&] { store.find_run("beta"); }).contains("'beta' matches 2 runs by name"));
    QCOMPARE(error_message<StoreError>([&] { store.find_run("zzz"); }),
             QString::fromStdString("no run 'zzz' in " + path));
    QVERIFY(error_message<StoreError>([&] { store.find_run("abc"); }).contains("no run 'abc'"));  // < 4 chars
    QVERIFY(error_message<StoreError>([&] { store.find_run("999"); }).contains("no run '999'"));
    QVERIFY(error_message<StoreError>([&] { store.find_run(""); }).contains("no run ''"));
    QVERIFY(error_message<StoreError>([&] { store.find_run("ab%_"); }).contains("no run 'ab%_'"));
  }

  void delete_run_cascades() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    int64_t first = 0, second = 0;
    {
      RunStore store(path);
      for (int64_t* id : {&first, &second}) {
        *id = store.create_run(RunInfo{}).id;
        store.log_params(*id, {{"lr", "0.1"}});
        store.set_tag(*id, "t", "v");
        store.log_step(*id, {{"loss", 0, 1, 0}}, {span(0, 0), span(0, 1)}, {{0, 0, 1, "intra_node", 5}},
                       {{0, 0, 0, 1, 3}});
      }
      store.delete_run(first);
      QVERIFY(error_message<StoreError>([&] { store.find_run(std::to_string(first)); }).contains("no run"));
      QCOMPARE(store.list_runs().size(), size_t(1));
      QVERIFY(store.create_run(RunInfo{}).id > second);  // ids are not reused
    }
    for (const char* table : {"params", "tags", "metrics", "spans", "traffic", "routing"}) {
      QCOMPARE(raw_one(path, std::string("SELECT count(*) FROM ") + table + " WHERE run = " + std::to_string(first)),
               QString("0"));
      QVERIFY2(raw_one(path, std::string("SELECT count(*) FROM ") + table + " WHERE run = " +
                                 std::to_string(second)).toInt() > 0, table);
    }
  }

  void log_step_is_fast() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    RunStore store(path);
    int64_t run = store.create_run(RunInfo{}).id;
    constexpr int kSteps = 20, kSpans = 2000;
    QElapsedTimer timer;
    timer.start();
    for (int s = 0; s < kSteps; ++s) {
      std::vector<SpanRow> spans;
      for (int i = 0; i < kSpans; ++i) spans.push_back(span(s, i));
      store.log_step(run, {{"loss", s, 1, 0}}, spans, {}, {});
    }
    double sec = (double)timer.nsecsElapsed() / 1e9;
    qInfo("log_step: %d steps x %d spans in %.3f s (%.0f spans/s)", kSteps, kSpans, sec, kSteps * kSpans / sec);
    QCOMPARE(store.spans(run, 7, 8).size(), size_t(2 * kSpans));
    QVERIFY2(sec < 20, "log_step is far too slow");
  }
};

QTEST_APPLESS_MAIN(TestStore)
#include "tst_store.moc"
