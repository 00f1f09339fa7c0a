// ctest-labels: unit
// What the local launcher of `moebench run` reads to report a failed job once: the ranks'
// failure reports (dist/launch_report.h) and mpirun's stderr (dist/mpirun_output.h), the
// latter on output captured from Open MPI 4.1.4 on Debian 12 (tests/data/mpirun/: a rank
// calling MPI_Abort, a rank exiting with code 3, a rank killed by SIGKILL).
#include <QtTest>

#include <QTemporaryDir>

#include <fstream>
#include <sstream>

#include "moebench/dist/launch_report.h"
#include "moebench/dist/mpirun_output.h"

using namespace moebench;

namespace {

struct Fed {
  std::vector<std::string> shown;
  MpirunOutput out;
};

// Feeds a captured stderr file through the filter, as the launcher does.
Fed feed(const char* name) {
  Fed f;
  std::ifstream in(std::string(MOEBENCH_SOURCE_DIR "/tests/data/mpirun/") + name);
  std::string line;
  while (std::getline(in, line))
    for (auto& s : f.out.on_line(line)) f.shown.push_back(s);
  for (auto& s : f.out.finish()) f.shown.push_back(s);
  return f;
}

QString joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return QString::fromStdString(s);
}

}  // namespace

class TestLaunchReport : public QObject {
  Q_OBJECT

 private slots:
  void reports_round_trip_earliest_first() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    write_rank_failure(d, {3, 1, 100.5, "later"});
    write_rank_failure(d, {1, 2, 100.25, "first\nsecond line"});
    std::ofstream(d + "/rank_7.failed") << "not a report";  // malformed: skipped
    std::ofstream(d + "/rank_x.failed") << "1 1.0\nno rank";
    const auto got = read_rank_failures(d);
    QCOMPARE(got.size(), size_t(2));
    QCOMPARE(got[0].rank, 1);
    QCOMPARE(got[0].exit_code, 2);
    QCOMPARE(got[0].message, std::string("first\nsecond line"));
    QCOMPARE(got[1].rank, 3);
    QVERIFY(!QFile::exists(dir.filePath("rank_1.failed.tmp")));
  }

  void same_message_is_said_once() {
    const std::vector<RankFailure> f = {
        {2, 1, 1.0, "data.bin: truncated"}, {0, 1, 1.1, "data.bin: truncated"},
        {3, 1, 1.2, "peer gone"}, {1, 1, 1.3, "data.bin: truncated"}};
    const auto lines = describe_rank_failures(f, 4);
    QCOMPARE(lines.size(), size_t(2));
    QCOMPARE(lines[0], std::string("rank 2 of 4 failed: data.bin: truncated (ranks 0, 1 failed the same way)"));
    QCOMPARE(lines[1], std::string("rank 3 of 4 failed: peer gone"));
    QCOMPARE(describe_rank_failures({{1, 1, 0, "x"}, {0, 1, 1, "x"}}, 2)[0],
             std::string("rank 1 of 2 failed: x (rank 0 failed the same way)"));
  }

  void abort_banner_is_held_and_rank_lines_pass() {
    Fed f = feed("abort.txt");
    QCOMPARE(joined(f.shown), QString("moebench: rank 0 of 4 failed: boom\n"));
    QVERIFY(f.out.aborted());
    QVERIFY(!f.out.death() && !f.out.exit());
    QVERIFY(joined(f.out.held()).contains("MPI_ABORT was invoked on rank 0"));
    QVERIFY(joined(f.out.held()).contains("ORTE_ERROR_LOG"));
  }

  void exit_code_banner_names_the_rank() {
    Fed f = feed("exit_code.txt");
    QVERIFY(f.shown.empty());
    QVERIFY(f.out.exit());
    QCOMPARE(f.out.exit()->rank, 1);
    QCOMPARE(f.out.exit()->code, 3);
  }

  void peer_loss_noise_is_held_with_or_without_a_process_prefix() {
    MpirunOutput out;
    QVERIFY(out.on_line("[vm:16831] Read -1, expected 8544, errno = 3").empty());  // seen in CI
    QVERIFY(out.on_line("Read -1, expected 17152, errno = 14").empty());
    QCOMPARE(out.held().size(), size_t(2));
    QCOMPARE(out.on_line("[vm:16831] Read the docs"), std::vector<std::string>{"[vm:16831] Read the docs"});
  }

  // Issue 30 item 20: libevent's epoll warnings reached the terminal on failing runs.
  void libevent_epoll_warnings_are_held() {
    MpirunOutput out;
    QVERIFY(out.on_line("[warn] Epoll MOD(1) on fd 26 failed. Old events were 6; read change was 0 (none); write "
                        "change was 2 (del); close change was 0 (none): Bad file descriptor")
                .empty());
    QVERIFY(out.on_line("[warn] Epoll ADD(4) on fd 31 failed. Old events were 0; read change was 0 (none); write "
                        "change was 1 (add); close change was 0 (none): Bad file descriptor")
                .empty());
    QVERIFY(out.on_line("[err] epoll_wait: Bad file descriptor").empty());
    QCOMPARE(out.held().size(), size_t(3));
    QCOMPARE(out.on_line("[warn] the rank's own warning"), std::vector<std::string>{"[warn] the rank's own warning"});
  }

  void signal_banner_names_rank_and_signal() {
    Fed f = feed("signal.txt");
    QVERIFY2(f.shown.empty(), qPrintable(joined(f.shown)));  // peer-loss noise held too
    QVERIFY(f.out.death());
    QCOMPARE(f.out.death()->rank, 2);
    QCOMPARE(f.out.death()->signal, 9);
    QCOMPARE(f.out.death()->signal_name, std::string("Killed"));
    MpirunOutput segv;
    for (const char* l : {"----------------------------------------------------------------------------",
                          "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 11 "
                          "(Segmentation fault).",
                          "----------------------------------------------------------------------------"})
      QVERIFY(segv.on_line(l).empty());
    QCOMPARE(segv.death()->signal_name, std::string("Segmentation fault"));
  }

  void teardown_reports_are_held_only_while_stopping() {
    const std::string report = "[vm:13846] *** Process received signal ***";
    MpirunOutput running;
    QCOMPARE(running.on_line(report).size(), size_t(1));  // a crash while running is shown
    MpirunOutput stopping;
    stopping.set_stopping();
    QVERIFY(stopping.on_line(report).empty());
    QVERIFY(stopping.on_line("[vm:13846] [ 3] /lib/x86_64-linux-gnu/libevent_core-2.1.so.7(event_base_loop+0x49f)").empty());
    QCOMPARE(stopping.on_line("step 3/10 | loss 1.0").size(), size_t(1));
    QCOMPARE(stopping.held().size(), size_t(2));
  }

  void other_banners_pass_whole() {
    Fed f = feed("warning.txt");
    QCOMPARE(f.shown.size(), size_t(7));
    QCOMPARE(f.shown[1], std::string("WARNING: There was an error initializing an OpenFabrics device."));
    QCOMPARE(f.shown.back(), std::string("a rank's own line"));
    QVERIFY(!f.out.death() && !f.out.exit() && f.out.held().empty());
    MpirunOutput cut;  // a banner the stream ends inside is shown, not lost
    QVERIFY(cut.on_line(std::string(74, '-')).empty());
    QVERIFY(cut.on_line("half a banner").empty());
    QCOMPARE(cut.finish().size(), size_t(2));
  }
};

QTEST_APPLESS_MAIN(TestLaunchReport)
#include "tst_launch_report.moc"
