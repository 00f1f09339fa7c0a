// ctest-labels: unit
// store/run_store: when a RUNNING run's process is gone. A process is named by host, boot id,
// pid and start time: a zombie (exited, not reaped), a pid that now names a process started at
// another time, and a reboot all count as vanished; the run then shows (read-only) and is stored
// (read-write open) as FAILED, ended at its last recorded step rather than "now".
#include <QTemporaryDir>
#include <QtTest>

#include "moebench/store/run_store.h"

#include "store_support.h"

using namespace moebench;
using namespace moebench::test;

class TestStoreLiveness : public QObject {
  Q_OBJECT

 private slots:
  void zombie_process_has_vanished() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    ChildProcess child;
    QVERIFY(child.pid() > 0);
    {
      RunStore store(path);
      RunInfo info;
      info.name = "zombie";
      info.pid = child.pid();
      info.start_time = 1000;
      const RunInfo run = store.create_run(info);
      // create_run recorded who the pid is: its start time and the boot.
      QCOMPARE(run.process_start, child.start_ticks());
      QVERIFY(!run.boot_id.empty());
      for (int step = 1; step <= 3; ++step) store.log_step(run.id, {{"loss", step, 1.0, 1000.0 + step}}, {}, {}, {});
      QCOMPARE(store.find_run("zombie").status, RunStatus::running);  // alive
    }
    child.exit_now();
    QVERIFY2(child.wait_for_zombie(), "the child did not become a zombie");
    for (int i = 0; i < 2; ++i) {  // the end time is the last step's, not a clock that keeps running
      RunStore reader(path, RunStore::Mode::read_only);
      const RunInfo r = reader.find_run("zombie");
      QCOMPARE(r.status, RunStatus::failed);
      QCOMPARE(r.end_time, 1003.0);
      QCOMPARE(reader.list_runs().at(0).status, RunStatus::failed);
    }
    QCOMPARE(raw_one(path, "SELECT status || ' ' || end_time FROM runs"), QString("RUNNING 0.0"));  // not written
    {
      RunStore store(path);  // a read-write open stores it
      QCOMPARE(store.find_run("zombie").status, RunStatus::failed);
    }
    QCOMPARE(raw_one(path, "SELECT status || ' ' || end_time FROM runs"), QString("FAILED 1003.0"));
    child.reap();
  }

  void reused_pid_or_reboot_has_vanished() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    ChildProcess child;  // alive throughout
    QVERIFY(child.pid() > 0);
    RunStore store(path);
    auto make = [&](const char* name, int64_t process_start, const std::string& boot_id) {
      RunInfo info;
      info.name = name;
      info.pid = child.pid();
      info.process_start = process_start;
      info.boot_id = boot_id;
      info.start_time = 2000;
      const RunInfo run = store.create_run(info);
      store.log_step(run.id, {{"loss", 1, 1.0, 2001.5}}, {}, {}, {});
    };
    make("same", 0, "");                                    // filled in: this very process
    make("reused", child.start_ticks() + 1, "");            // the pid's process started at another time
    make("rebooted", 0, "00000000-0000-0000-0000-000000000000");  // recorded under another boot
    QCOMPARE(store.find_run("same").status, RunStatus::running);
    QCOMPARE(store.find_run("reused").status, RunStatus::failed);
    QCOMPARE(store.find_run("reused").end_time, 2001.5);
    QCOMPARE(store.find_run("rebooted").status, RunStatus::failed);
    QCOMPARE(store.mark_vanished_runs(), 2);
    QCOMPARE(raw_rows(path, "SELECT name || ' ' || status FROM runs ORDER BY id"),
             (QStringList{"same RUNNING", "reused FAILED", "rebooted FAILED"}));
  }

  // Runs of another host are never judged here; a run without metrics ends at its start.
  void other_hosts_and_runs_without_metrics() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    RunStore store(path);
    RunInfo elsewhere;
    elsewhere.name = "elsewhere";
    elsewhere.host = "another-host.invalid";
    elsewhere.pid = dead_pid();
    elsewhere.boot_id = "00000000-0000-0000-0000-000000000000";
    store.create_run(elsewhere);
    RunInfo quiet;
    quiet.name = "quiet";
    quiet.pid = dead_pid();
    quiet.start_time = 50;
    store.create_run(quiet);
    QCOMPARE(store.find_run("elsewhere").status, RunStatus::running);
    QCOMPARE(store.find_run("quiet").status, RunStatus::failed);
    QCOMPARE(store.find_run("quiet").end_time, 50.0);
  }
};

QTEST_APPLESS_MAIN(TestStoreLiveness)
#include "tst_store_liveness.moc"
