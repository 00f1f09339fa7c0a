// ctest-labels: unit slow
// store/run_store under a real kill -9: a child process logs steps until the parent SIGKILLs
// it mid-run; reopening marks the run FAILED, every committed step is whole and the database
// passes integrity_check.
#include <QTemporaryDir>
#include <QtTest>

#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>

#include "moebench/store/run_store.h"

using namespace moebench;

namespace {

constexpr int kSpans = 200, kTraffic = 8, kRouting = 16;

// The child: opens the store, creates a run, logs steps forever; after step 5 is committed it
// sends the run id through the pipe. Never returns.
[[noreturn]] void child_main(const std::string& path, int round, int fd) {
  try {
    RunStore store(path);
    RunInfo info;
    info.name = "crash-" + std::to_string(round);
    int64_t run = store.create_run(info).id;
    for (int64_t step = 0; step < 1000000; ++step) {
      std::vector<SpanRow> spans(kSpans);
      for (int i = 0; i < kSpans; ++i) {
        spans[i].step = step;
        spans[i].rank = i % 4;
        spans[i].stream = "compute";
        spans[i].name = "task" + std::to_string(i);
        spans[i].category = "compute";
        spans[i].duration = 1e-3;
      }
      std::vector<TrafficRow> traffic(kTraffic, TrafficRow{step, 0, 1, "intra_node", 64});
      std::vector<RoutingRow> routing(kRouting, RoutingRow{step, 0, 0, 1, 10});
      store.log_step(run, {{"loss", step, 1.0 / (double)(step + 1), 0}}, spans, traffic, routing);
      if (step == 5 && write(fd, &run, sizeof(run)) != (ssize_t)sizeof(run)) _exit(4);
    }
    _exit(3);  // the parent should have killed us long before
  } catch (...) {
    _exit(2);
  }
}

// Kills the child if the test leaves early.
struct ChildGuard {
  pid_t pid = -1;
  ~ChildGuard() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

QString integrity(const std::string& path) {
  sqlite3* db = nullptr;
  QString out = "<open failed>";
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    out = "<query failed>";
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
      out = QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

}  // namespace

class TestStoreCrash : public QObject {
  Q_OBJECT

 private slots:
  void kill_9_mid_run() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.db").toStdString();
    std::mt19937 rng(7);
    for (int round = 0; round < 3; ++round) {
      int fds[2];
      QVERIFY(pipe(fds) == 0);
      ChildGuard child;
      child.pid = fork();
      QVERIFY(child.pid >= 0);
      if (child.pid == 0) {
        close(fds[0]);
        child_main(path, round, fds[1]);
      }
      close(fds[1]);
      pollfd p{fds[0], POLLIN, 0};
      int ready = poll(&p, 1, 60000);
      int64_t run = 0;
      ssize_t got = ready > 0 ? read(fds[0], &run, sizeof(run)) : -1;
      close(fds[0]);
      QVERIFY2(got == (ssize_t)sizeof(run), "the child did not report step 5 (it failed or hung)");
      usleep((useconds_t)(rng() % 20000));  // land the kill at a different point each round
      QCOMPARE(kill(child.pid, SIGKILL), 0);
      int status = 0;
      QCOMPARE(waitpid(child.pid, &status, 0), child.pid);
      child.pid = -1;
      QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child exited by itself");

      RunStore store(path);  // reopening marks the vanished run FAILED
      RunInfo info = store.find_run(std::to_string(run));
      QCOMPARE(info.status, RunStatus::failed);
      auto loss = store.metrics(run, "loss");
      const size_t steps = loss.size();
      QVERIFY2(steps >= 6, qPrintable(QString("only %1 steps survived").arg(steps)));
      for (size_t i = 0; i < steps; ++i) QCOMPARE(loss[i].step, (int64_t)i);
      QCOMPARE(info.end_time, loss.back().timestamp);
      // Whole steps only: every committed step has all its rows, nothing of a later one.
      QCOMPARE(store.spans(run).size(), steps * kSpans);
      QCOMPARE(store.traffic(run).size(), steps * kTraffic);
      QCOMPARE(store.routing(run).size(), steps * kRouting);
      QCOMPARE(store.list_runs().size(), size_t(round + 1));
      qInfo("round %d: killed after %zu committed steps", round, steps);
    }
    QCOMPARE(integrity(path), QString("ok"));
  }
};

QTEST_APPLESS_MAIN(TestStoreCrash)
#include "tst_store_crash.moc"
