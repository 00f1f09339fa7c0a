// `moebench calibrate` end to end: it starts its own 2 ranks, writes a cluster file that reads
// back as a cluster with the fit of its reference runs, never replaces it without --force, and refuses fewer than 2 ranks, each
// error said once with exit 2 and nothing written.
#include <QtTest>

#include <QTemporaryDir>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "moebench/config/cluster_file.h"
#include "moebench/perf/cluster_model.h"
#include "cli_support.h"

using namespace moebench;

class TestCalibrateCli : public QObject {
  Q_OBJECT

 private slots:
  void writes_and_never_replaces() {
    QTemporaryDir dir;
    const QString out = dir.filePath("clusters/local.toml");
    auto r = moebench::test::run_cli({"calibrate", "--ranks", "2", "--quick", "--out", out});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    QVERIFY(r.out.contains("wrote " + out));
    std::ifstream f(out.toStdString());
    std::stringstream text;
    text << f.rdbuf();
    const ClusterSpec s = cluster_spec(parse_cluster_file(text.str(), out.toStdString()), 4);
    QVERIFY(s.device_flops > 1e8 && s.intra.bandwidth > 1e7);
    // the reference runs' fit: the expert and dense tasks of both strategies got a cost
    QVERIFY2(r.out.contains("reference"), qPrintable(r.out));
    for (const char* name : {"moe.experts", "moe.experts_backward", "attn.forward"}) {
      const auto it = std::find_if(s.task_costs.begin(), s.task_costs.end(), [&](const TaskCostFit& c) { return c.name == name; });
      QVERIFY2(it != s.task_costs.end(), name);
      QVERIFY(it->factor > 0 && it->overhead >= 0);
    }

    r = moebench::test::run_cli({"calibrate", "--ranks", "2", "--quick", "--out", out});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(out + " exists; pass --force"), qPrintable(r.err));
    QCOMPARE(r.err.count("exists"), 1);
    r = moebench::test::run_cli({"calibrate", "--ranks", "2", "--quick", "--force", "--out", out});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));

    r = moebench::test::run_cli({"calibrate", "--ranks", "1", "--out", dir.filePath("x.toml")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("at least 2"), qPrintable(r.err));
    QVERIFY(!QFile::exists(dir.filePath("x.toml")));
  }
};

QTEST_APPLESS_MAIN(TestCalibrateCli)
#include "tst_calibrate_cli.moc"
