// ctest-labels: unit
// store/run_store: a store whose tables do not match the schema version it claims is refused
// and left byte for byte as it was; a version 1 store (0-based steps) is migrated to 1-based
// steps; version 1 and 2 stores get the spans' flops and chunk (schema 3) with their defaults
// on old rows; a reader in a directory it cannot write, or of another user's store, creates no -wal
// or -shm file and the owner can still write afterwards.
#include <QTemporaryDir>
#include <QtTest>

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <set>

#include "moebench/store/run_store.h"

#include "store_support.h"
#include "test_support.h"

using namespace moebench;
using namespace moebench::test;

namespace {

bool exists(const std::string& path) { return std::filesystem::exists(path); }

// tests/data/<fixture> (an old store as SQL) loaded into a new file at `path` (no -wal:
// rollback journal mode).
bool load_fixture(const std::string& path, const std::string& fixture) {
  const std::string sql = read_bytes(MOEBENCH_SOURCE_DIR "/tests/data/" + fixture);
  sqlite3* db = nullptr;
  char* err = nullptr;
  const bool ok = !sql.empty() && sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
                  sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK;
  if (err) qWarning("%s: %s", fixture.c_str(), err);
  sqlite3_free(err);
  sqlite3_close(db);
  return ok;
}
bool load_v1_fixture(const std::string& path) { return load_fixture(path, "store_v1.sql"); }

// Runs `fn` in a child process as `uid` (this process's own uid: no switch; else root drops
// to it, supplementary groups included) and returns what it returned, or "<error: ...>".
std::string run_as(uid_t uid, const std::function<std::string()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return "<pipe failed>";
  const pid_t pid = fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    if (uid != ::geteuid() && (setgroups(0, nullptr) != 0 || setgid(uid) != 0 || setuid(uid) != 0)) {
      out = "<cannot become uid " + std::to_string(uid) + ">";
    } else {
      try {
        out = fn();
      } catch (const std::exception& e) {
        out = std::string("<error: ") + e.what() + ">";
      }
    }
    if (::write(fds[1], out.data(), out.size()) < 0) _exit(1);
    _exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  ::close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return out;
}

// "<runs> <loss values of run 1>" as a reader sees the store.
std::string read_summary(const std::string& path) {
  RunStore reader(path, RunStore::Mode::read_only);
  return std::to_string(reader.list_runs().size()) + " " + std::to_string(reader.metrics(1, "loss").size());
}

uid_t owner_of(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_uid;
}

}  // namespace

class TestStoreSchema : public QObject {
  Q_OBJECT

 private slots:
  void damaged_schema_is_refused_data() {
    QTest::addColumn<bool>("v1");         // a version 1 store (the fixture) instead of a new one
    QTest::addColumn<QString>("damage");  // SQL another program ran on it
    QTest::addColumn<QString>("expected");
    QTest::newRow("dropped table") << false << "DROP TABLE metrics"
                                   << "schema damaged (table metrics missing); left unchanged";
    QTest::newRow("dropped column") << false << "ALTER TABLE spans DROP COLUMN expert"
                                    << "schema damaged (column spans.expert missing); left unchanged";
    QTest::newRow("added column") << false << "ALTER TABLE runs ADD COLUMN note TEXT"
                                  << "schema damaged (column runs.note unexpected); left unchanged";
    QTest::newRow("changed column")
        << false
        << "ALTER TABLE tags RENAME TO old_tags; CREATE TABLE tags (run INTEGER NOT NULL, key TEXT NOT NULL, "
           "value TEXT); DROP TABLE old_tags"
        << "schema damaged (column tags.run is INTEGER NOT NULL, not INTEGER NOT NULL PRIMARY KEY; column tags.key "
           "is TEXT NOT NULL, not TEXT NOT NULL PRIMARY KEY; column tags.value is TEXT, not TEXT NOT NULL)";
    QTest::newRow("two tables dropped") << false << "DROP TABLE routing; DROP TABLE traffic"
                                        << "schema damaged (table routing missing; table traffic missing)";
    // A version 1 store is checked against version 1's tables (it has no process_start yet).
    QTest::newRow("version 1, dropped table") << true << "DROP TABLE spans"
                                              << "schema damaged (table spans missing); left unchanged";
  }
  void damaged_schema_is_refused() {
    QFETCH(bool, v1);
    QFETCH(QString, damage);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    if (v1) QVERIFY(load_v1_fixture(path));
    else write_small_store(path);
    QCOMPARE(raw_rows(path, damage.toStdString()), QStringList{});  // no error
    QVERIFY(!exists(path + "-wal") && !exists(path + "-shm"));
    const std::string before = read_bytes(path);
    for (auto mode : {RunStore::Mode::read_write, RunStore::Mode::read_only}) {
      const QString msg = error_message<StoreError>([&] { RunStore s(path, mode); });
      QVERIFY2(msg.startsWith(QString::fromStdString(path + ": ")) && msg.contains(expected), qPrintable(msg));
      QVERIFY2(read_bytes(path) == before, "the file was changed");
      QVERIFY2(!exists(path + "-wal") && !exists(path + "-shm"), "a -wal or -shm file was left beside it");
    }
  }

  void version_1_store_is_migrated_to_1_based_steps() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    QVERIFY(load_v1_fixture(path));
    const std::string before = read_bytes(path);
    const QString msg = error_message<StoreError>([&] { RunStore s(path, RunStore::Mode::read_only); });
    QVERIFY2(msg.contains(QString::fromStdString(path + " has schema version 1; this moebench needs " +
                                                 std::to_string(RunStore::schema_version()))) &&
                 msg.contains("open it once read-write"),
             qPrintable(msg));
    QVERIFY(read_bytes(path) == before);
    {
      RunStore store(path);
      QCOMPARE(raw_one(path, "PRAGMA user_version").toInt(), RunStore::schema_version());
      const RunInfo old = store.find_run("old");
      QCOMPARE(old.status, RunStatus::finished);
      QCOMPARE(old.process_start, int64_t(0));  // unknown for runs of version 1
      QCOMPARE(old.boot_id, std::string());
      std::vector<int64_t> loss, eval;
      for (const auto& m : store.metrics(old.id)) (m.key == "loss" ? loss : eval).push_back(m.step);
      QCOMPARE(loss, (std::vector<int64_t>{1, 2, 3}));
      QCOMPARE(eval, (std::vector<int64_t>{3}));  // "eval after step 3", stored at 2 by version 1
      std::multiset<int64_t> spans, traffic, routing;
      for (const auto& s : store.spans(old.id)) spans.insert(s.step);
      for (const auto& t : store.traffic(old.id)) traffic.insert(t.step);
      for (const auto& r : store.routing(old.id)) routing.insert(r.step);
      QCOMPARE(spans, (std::multiset<int64_t>{1, 2, 3, 3}));
      QCOMPARE(traffic, (std::multiset<int64_t>{1, 2, 3}));
      QCOMPARE(routing, (std::multiset<int64_t>{1, 2, 3}));
      QCOMPARE(store.spans(old.id, 3, 3).size(), size_t(2));
      QCOMPARE(store.metrics(store.find_run("crashed").id, "loss").at(0).step, int64_t(1));
      QCOMPARE(store.find_run("crashed").status, RunStatus::running);  // of another host: not judged here
    }
    RunStore reader(path, RunStore::Mode::read_only);  // the migrated tables are the current version's exactly
    QCOMPARE(reader.list_runs().size(), size_t(2));
  }

  // Schema 3 adds spans.flops and spans.chunk: an old store's spans keep flops 0 and chunk -1,
  // new spans store theirs, and the migrated tables are the current version's exactly.
  void old_store_gets_span_flops_and_chunk_data() {
    QTest::addColumn<QString>("fixture");
    QTest::addColumn<int>("version");
    QTest::addColumn<int>("old_spans");
    QTest::newRow("1 -> 3") << "store_v1.sql" << 1 << 4;
    QTest::newRow("2 -> 3") << "store_v2.sql" << 2 << 3;
  }
  void old_store_gets_span_flops_and_chunk() {
    QFETCH(QString, fixture);
    QFETCH(int, version);
    QFETCH(int, old_spans);
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    QVERIFY(load_fixture(path, fixture.toStdString()));
    const std::string before = read_bytes(path);
    const QString msg = error_message<StoreError>([&] { RunStore s(path, RunStore::Mode::read_only); });
    QVERIFY2(msg.contains(QString::fromStdString(path + " has schema version " + std::to_string(version) +
                                                 "; this moebench needs " + std::to_string(RunStore::schema_version()))),
             qPrintable(msg));
    QVERIFY(read_bytes(path) == before);
    QCOMPARE(RunStore::schema_version(), 3);
    {
      RunStore store(path);
      QCOMPARE(raw_one(path, "PRAGMA user_version").toInt(), 3);
      const RunInfo run = store.list_runs().front();  // the fixture's first run
      const auto spans = store.spans(run.id);
      QCOMPARE((int)spans.size(), old_spans);
      for (const SpanRow& s : spans) {
        QCOMPARE(s.flops, 0.0);
        QCOMPARE(s.chunk, -1);
      }
      SpanRow added = spans.front();
      added.step = 9;
      added.flops = 1.5e9;
      added.chunk = 2;
      store.log_step(run.id, {}, {added}, {}, {});
      const auto again = store.spans(run.id, 9, 9);
      QCOMPARE(again.size(), size_t(1));
      QCOMPARE(again[0].flops, 1.5e9);
      QCOMPARE(again[0].chunk, 2);
      QCOMPARE(again[0].name, spans.front().name);
    }
    RunStore reader(path, RunStore::Mode::read_only);  // the migrated tables are version 3's exactly
    QCOMPARE(reader.spans(reader.list_runs().front().id).size(), size_t(old_spans + 1));
  }

  // A reader in a directory it cannot write reads the store, leaves no -wal or -shm file, and
  // the store stays writable for its owner: whether nobody has the store open (the main file is
  // read as it is) or a writer has (its WAL is read through the existing -wal and -shm). As
  // root, the reader is a child process switched to the user nobody.
  void reader_in_a_directory_it_cannot_write() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString(), path = dir + "/runs.db";
    const bool root = ::geteuid() == 0;
    const uid_t reader = root ? 65534 : ::geteuid();
    const mode_t closed = root ? 0755 : 0555;  // not writable by the reader
    write_small_store(path);
    QVERIFY(!exists(path + "-wal") && !exists(path + "-shm"));
    const std::string before = read_bytes(path);

    QCOMPARE(::chmod(dir.c_str(), closed), 0);
    QCOMPARE(run_as(reader, [&] { return read_summary(path); }), std::string("1 2"));
    QVERIFY2(!exists(path + "-wal") && !exists(path + "-shm"), "the reader left a -wal or -shm file");
    QVERIFY(read_bytes(path) == before);

    QCOMPARE(::chmod(dir.c_str(), 0755), 0);
    {
      RunStore writer(path);  // holds the store open: -wal and -shm exist, the last step only in the WAL
      writer.log_step(1, {{"loss", 3, 1.0, 0}}, {}, {}, {});
      QCOMPARE(::chmod(dir.c_str(), closed), 0);
      QCOMPARE(run_as(reader, [&] { return read_summary(path); }), std::string("1 3"));
      QCOMPARE(owner_of(path + "-wal"), ::geteuid());
      QCOMPARE(owner_of(path + "-shm"), ::geteuid());
      QCOMPARE(::chmod(dir.c_str(), 0755), 0);
    }
    QVERIFY(!exists(path + "-wal"));  // the writer, last to close, removed its WAL
    RunStore again(path);             // and the owner writes on
    again.create_run(RunInfo{});
    QCOMPARE(again.list_runs().size(), size_t(2));
  }

  // A reader of another user's store in a directory both may write (as /tmp) would create -wal
  // and -shm files of its own that the owner cannot write: it reads the main file instead.
  void reader_of_another_users_store() {
    if (::geteuid() != 0) QSKIP("needs root to act as two users (verified by hand as a non-root user)");
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString(), path = dir + "/runs.db";
    QCOMPARE(::chmod(dir.c_str(), 01777), 0);
    const uid_t owner = 65534, other = 65533;
    QCOMPARE(run_as(owner, [&] { write_small_store(path); return std::string("ok"); }), std::string("ok"));
    QCOMPARE(owner_of(path), owner);
    QCOMPARE(run_as(other, [&] { return read_summary(path); }), std::string("1 2"));
    QVERIFY2(!exists(path + "-wal") && !exists(path + "-shm"), "the other user left a -wal or -shm file");
    const std::string written = run_as(owner, [&] {
      RunStore store(path);
      store.log_step(1, {{"loss", 3, 1.0, 0}}, {}, {}, {});
      return std::to_string(store.metrics(1, "loss").size());
    });
    QCOMPARE(written, std::string("3"));
  }
};

QTEST_APPLESS_MAIN(TestStoreSchema)
#include "tst_store_schema.moc"
