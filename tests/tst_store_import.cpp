// ctest-labels: unit slow
// RunStore::import_runs and `moebench runs import` on real runs: the CLI trains into two stores,
// one is imported into the other, and every row of every table that belongs to a run is compared
// (typed values, in order); a second import changes nothing; a copy taken while a run was
// RUNNING is replaced by the ended run, keeping a note set here; a damaged or foreign file is
// refused naming it, the store left as it was.
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>
#include <signal.h>

#include <thread>

#include "cli_support.h"
#include "moebench/store/run_store.h"
#include "store_support.h"

using moebench::ImportedRun;
using moebench::RunInfo;
using moebench::RunStatus;
using moebench::RunStore;
using moebench::StoreError;
using moebench::test::read_bytes;
using moebench::test::run_cli;
using moebench::test::run_cli_into_db;
using moebench::test::write_bytes;

namespace {

const QString kTiny = QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml");

QString value_text(sqlite3_stmt* st, int c) {
  switch (sqlite3_column_type(st, c)) {
    case SQLITE_NULL: return QStringLiteral("null");
    case SQLITE_INTEGER: return QStringLiteral("i:%1").arg(sqlite3_column_int64(st, c));
    case SQLITE_FLOAT: return QStringLiteral("r:%1").arg(sqlite3_column_double(st, c), 0, 'g', 17);
    case SQLITE_TEXT: return QStringLiteral("t:") + QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, c)));
    default: return QStringLiteral("b:") + QByteArray(static_cast<const char*>(sqlite3_column_blob(st, c)), sqlite3_column_bytes(st, c)).toHex();
  }
}

QStringList query(sqlite3* db, const QString& sql, const QString& bind = {}) {
  sqlite3_stmt* st = nullptr;
  QStringList rows;
  if (sqlite3_prepare_v2(db, sql.toUtf8().constData(), -1, &st, nullptr) != SQLITE_OK)
    return {QStringLiteral("<error: %1>").arg(sqlite3_errmsg(db))};
  if (!bind.isNull()) sqlite3_bind_text(st, 1, bind.toUtf8().constData(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(st) == SQLITE_ROW) {
    QStringList cols;
    for (int c = 0; c < sqlite3_column_count(st); ++c)
      cols << QString::fromUtf8(sqlite3_column_name(st, c)) + QLatin1Char('=') + value_text(st, c);
    rows << cols.join(QLatin1Char('|'));
  }
  sqlite3_finalize(st);
  return rows;
}

// Every row of the run `uuid` in the store `path`, read-only: the runs row (its experiment by
// name, no local ids), then each table with a `run` column in rowid order
// (primary-key order for tables without rowid), the run column left out. Generic: a table or
// column added to the schema is compared too.
QStringList run_rows(const std::string& path, const QString& uuid) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return {QStringLiteral("<open failed>")};
  }
  QStringList out;
  QStringList runCols;
  for (const QString& row : query(db, QStringLiteral("SELECT name FROM pragma_table_info('runs')")))
    if (row != QLatin1String("name=t:id") && row != QLatin1String("name=t:experiment_id")) runCols << "r." + row.mid(7);
  const QStringList runRow =
      query(db, "SELECT " + runCols.join(", ") + ", e.name AS experiment FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE r.uuid = ?1", uuid);
  out << runRow;
  const QStringList ids = query(db, QStringLiteral("SELECT id FROM runs WHERE uuid = ?1"), uuid);
  const QString id = ids.value(0).mid(5);  // "id=i:N"
  for (const QString& t : query(db, QStringLiteral("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"))) {
    const QString table = t.mid(7);
    QStringList cols;
    for (const QString& c : query(db, QStringLiteral("SELECT name FROM pragma_table_info('%1')").arg(table))) cols << c.mid(7);
    if (!cols.contains(QStringLiteral("run")) || table == QLatin1String("runs")) continue;
    cols.removeAll(QStringLiteral("run"));
    const bool withoutRowid = query(db, QStringLiteral("SELECT wr FROM pragma_table_list WHERE name = '%1'").arg(table)).value(0) == "wr=i:1";
    const QStringList rows = query(db, QStringLiteral("SELECT %1 FROM %2 WHERE run = %3 %4")
                                           .arg(cols.join(", "), table, id, withoutRowid ? QString() : QStringLiteral("ORDER BY rowid")));
    out << QStringLiteral("%1: %2 rows").arg(table).arg(rows.size());
    for (const QString& r : rows) out << table + ": " + r;
  }
  sqlite3_close(db);
  return out;
}

// Every run of a store, as run_rows, by uuid order: the whole store's content.
QStringList store_rows(const std::string& path) {
  QStringList out;
  RunStore s(path, RunStore::Mode::read_only);
  std::vector<std::string> uuids;
  for (const RunInfo& r : s.list_runs()) uuids.push_back(r.uuid);
  std::sort(uuids.begin(), uuids.end());
  for (const auto& u : uuids) out << run_rows(path, QString::fromStdString(u));
  return out;
}

std::vector<RunInfo> runs_of(const std::string& path) { return RunStore(path, RunStore::Mode::read_only).list_runs(); }

int table_rows(const std::string& path, const QString& uuid, const char* table) {
  for (const QString& line : run_rows(path, uuid))
    if (line.startsWith(QLatin1String(table) + QStringLiteral(": ")) && line.endsWith(QLatin1String(" rows")))
      return line.section(' ', 1, 1).toInt();
  return -1;
}

}  // namespace

class TestStoreImport : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;

  std::string path(const char* name) const { return m_dir.filePath(QString::fromUtf8(name)).toStdString(); }

 private slots:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    // The "remote" store: a 2-rank run (spans, traffic, routing of both ranks) and a tagged one;
    // the local store: a run of its own.
    QCOMPARE(run_cli_into_db({"run", kTiny, "--ranks", "2", "--out", "o1", "--set", "run.name=two ranks"}, "remote.db", m_dir.path()), 0);
    QCOMPARE(run_cli_into_db({"run", kTiny, "--out", "o2", "--experiment", "remote exp", "--set", "run.name=tagged"}, "remote.db", m_dir.path()), 0);
    QCOMPARE(run_cli_into_db({"run", kTiny, "--out", "o3", "--set", "run.name=local"}, "local.db", m_dir.path()), 0);
    RunStore remote(path("remote.db"));
    remote.set_tag(remote.find_run("tagged").id, "note", "from the cluster");
  }

  void importsEveryRowOfEveryRun() {
    const std::string local = path("local.db");
    const QStringList localBefore = store_rows(local);
    const auto remoteRuns = runs_of(path("remote.db"));
    QCOMPARE(remoteRuns.size(), size_t(2));
    const auto r = run_cli({"runs", "import", "remote.db", "--db", "local.db"}, m_dir.path());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("added run 2 (" + QString::fromStdString(remoteRuns[0].uuid.substr(0, 8)) +
                            " 'two ranks') into local.db: FINISHED at step 12\n"),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("added run 3 ("), qPrintable(r.out));
    QVERIFY2(r.out.endsWith("imported 2 runs from remote.db: 2 added, 0 replaced, 0 kept\n"), qPrintable(r.out));
    // Every row of each imported run, as in the remote store; the local run untouched.
    for (const RunInfo& run : remoteRuns) {
      const QString uuid = QString::fromStdString(run.uuid);
      const QStringList want = run_rows(path("remote.db"), uuid);
      QCOMPARE(run_rows(local, uuid), want);
      for (const char* table : {"params", "metrics", "spans", "routing"}) QVERIFY2(table_rows(local, uuid, table) > 0, table);
    }
    QVERIFY(table_rows(local, QString::fromStdString(remoteRuns[0].uuid), "traffic") > 0);
    QCOMPARE(table_rows(local, QString::fromStdString(remoteRuns[1].uuid), "tags"), 1);
    const QStringList localAfter = store_rows(local);
    for (const QString& line : localBefore) QVERIFY2(localAfter.contains(line), qPrintable(line));
    // The readers see the runs: new local ids, the experiment created by name.
    RunStore store(local, RunStore::Mode::read_only);
    QCOMPARE(store.find_run("tagged").experiment, std::string("remote exp"));
    const std::string created = "SELECT created FROM experiments WHERE name = 'remote exp'";
    QCOMPARE(moebench::test::raw_rows(local, created), moebench::test::raw_rows(path("remote.db"), created));
    QCOMPARE(store.find_run("two ranks").id, int64_t(2));
    QCOMPARE(store.metrics(store.find_run("two ranks").id, "loss").size(), size_t(12));
  }

  void importingAgainChangesNothing() {
    const std::string local = path("local.db");
    const QStringList before = store_rows(local);
    RunStore store(local);
    const auto result = store.import_runs(path("remote.db"));
    QCOMPARE(result.size(), size_t(2));
    for (const ImportedRun& r : result) {
      QCOMPARE(r.outcome, ImportedRun::Outcome::unchanged);
      QCOMPARE(r.last_step, int64_t(12));
      QCOMPARE(r.local_last_step, int64_t(12));
    }
    QCOMPARE(store.list_runs().size(), size_t(3));
    QCOMPARE(store_rows(local), before);
  }

  // A copy fetched while the run was RUNNING (a snapshot imported from the live store), then the
  // run fetched again after it ended: the ended copy replaces it under the same local id, with
  // every row of the ended run and the note set here kept; the older copy imported again does not
  // bring it back.
  void runningThenFinishedReplaces() {
    const std::string live = path("live.db"), snapshot = path("snapshot.db"), local = path("local2.db");
    QProcess run;
    run.setWorkingDirectory(m_dir.path());
    run.start(QStringLiteral(MOEBENCH_CLI), {"run", kTiny, "--steps", "1500", "--out", "o4", "--db", "live.db",
                                             "--set", "run.name=long"});
    QVERIFY(run.waitForStarted());
    std::vector<ImportedRun> first;
    QElapsedTimer waited;
    waited.start();
    while (first.empty() && waited.elapsed() < 120000 && run.state() == QProcess::Running) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      try {
        RunStore probe(live, RunStore::Mode::read_only);
        const auto runs = probe.list_runs();
        if (runs.empty() || probe.metrics(runs[0].id, "loss").size() < 3) continue;
      } catch (const StoreError&) {
        continue;  // not created yet
      }
      RunStore snap(snapshot);
      first = snap.import_runs(live);
    }
    QCOMPARE(first.size(), size_t(1));
    QCOMPARE(first[0].run.status, RunStatus::running);
    QVERIFY(first[0].last_step >= 3 && first[0].last_step < 1500);
    {
      RunStore store(local);
      const auto r = store.import_runs(snapshot);
      QCOMPARE(r[0].outcome, ImportedRun::Outcome::added);
      store.set_tag(r[0].run.id, "note", "watched from here");
    }
    QVERIFY(run.waitForFinished(120000));
    QCOMPARE(run.exitCode(), 0);

    RunStore store(local);
    const int64_t id = store.find_run("long").id;
    const auto again = store.import_runs(live);
    QCOMPARE(again.size(), size_t(1));
    QCOMPARE(again[0].outcome, ImportedRun::Outcome::replaced);
    QCOMPARE(again[0].local_last_step, first[0].last_step);
    QCOMPARE(again[0].last_step, int64_t(1500));
    QCOMPARE(again[0].run.id, id);
    QCOMPARE(again[0].run.status, RunStatus::finished);
    QCOMPARE(store.metrics(id, "loss").size(), size_t(1500));
    const auto tags = store.tags(id);
    QVERIFY(std::find(tags.begin(), tags.end(), std::make_pair(std::string("note"), std::string("watched from here"))) != tags.end());
    // Every row but the note is the ended run's.
    const QString uuid = QString::fromStdString(again[0].run.uuid);
    QStringList got = run_rows(local, uuid), want = run_rows(live, uuid);
    got.removeAll(QStringLiteral("tags: 1 rows"));
    got.removeAll(QStringLiteral("tags: key=t:note|value=t:watched from here"));
    want.removeAll(QStringLiteral("tags: 0 rows"));
    QCOMPARE(got, want);
    // The RUNNING snapshot again: older, kept out.
    const auto older = store.import_runs(snapshot);
    QCOMPARE(older[0].outcome, ImportedRun::Outcome::unchanged);
    QCOMPARE(store.find_run("long").status, RunStatus::finished);
    QCOMPARE(store.metrics(id, "loss").size(), size_t(1500));
  }

  // Files that are not a moebench store, or a damaged one: one message naming the file, exit 1,
  // the local store exactly as it was (and not created when missing).
  void badFilesAreRefused() {
    const std::string local = path("local.db");
    const QStringList before = store_rows(local);
    const std::string junk = path("junk.db");
    write_bytes(junk, "this is not a database\n");
    const std::string foreign = path("foreign.db");
    {
      sqlite3* db = nullptr;
      QCOMPARE(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
      QCOMPARE(sqlite3_exec(db, "CREATE TABLE runs (id INTEGER, uuid TEXT); INSERT INTO runs VALUES (1, 'x');", nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_close(db);
    }
    // A real store cut in half (as a failed copy would leave it).
    const std::string remote = read_bytes(path("remote.db"));
    const std::string cut = path("cut.db");
    write_bytes(cut, remote.substr(0, remote.size() / 2));
    const struct {
      std::string file;
      QString message;
    } cases[] = {
        {junk, "moebench: " + QString::fromStdString(junk) + " is not a moebench run database (file is not a database)\n"},
        {foreign, "moebench: " + QString::fromStdString(foreign) + " is a SQLite database but not a moebench run store"},
        {cut, "moebench: " + QString::fromStdString(cut) + " is corrupt"},
        {path("missing.db"), "moebench: " + QString::fromStdString(path("missing.db")) + " does not exist\n"},
    };
    for (const auto& c : cases) {
      for (const char* db : {"local.db", "never created.db"}) {
        const auto r = run_cli({"runs", "import", QString::fromStdString(c.file), "--db", db}, m_dir.path());
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.startsWith(c.message) && r.err.count('\n') == 1, qPrintable(r.err));
        QVERIFY(r.out.isEmpty());
      }
      QVERIFY(!QFile::exists(m_dir.filePath("never created.db")));
      QCOMPARE(store_rows(local), before);
    }
    // Through the API too: StoreError naming the file, nothing imported.
    RunStore store(local);
    try {
      store.import_runs(cut);
      QFAIL("a damaged store was imported");
    } catch (const StoreError& e) {
      QVERIFY2(QString::fromUtf8(e.what()).startsWith(QString::fromStdString(cut)), e.what());
    }
    QCOMPARE(store.list_runs().size(), size_t(3));
  }
};

QTEST_GUILESS_MAIN(TestStoreImport)
#include "tst_store_import.moc"
