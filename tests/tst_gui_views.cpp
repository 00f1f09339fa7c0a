// ctest-labels: gui
// The main window rendered headless on the fixture store (tests/gui_fixture.h): the run browser
// lists experiments and runs, selecting an experiment stands for its runs, every run view shows
// data for the selection, only the visible view reads the store, the launcher and config editor
// are wired, a bad file is reported, and `moebench-gui --screenshot-all` saves every view.
#include <QtTest>

#include <QChartView>
#include <QLineSeries>
#include <QProcess>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTreeView>

#include "gui_fixture.h"
#include "mainwindow.h"
#include "models/launchsession.h"
#include "widgets/ablationview.h"
#include "widgets/configeditor.h"
#include "widgets/expertloadview.h"
#include "widgets/launcherwindow.h"
#include "widgets/metricchartview.h"
#include "widgets/phasebreakdownview.h"
#include "widgets/rooflineview.h"
#include "widgets/timelineview.h"
#include "widgets/trafficview.h"

using namespace moebench;
namespace fx = moebench::test::gui_fixture;

namespace {
// The ids of the fixture's runs by name.
int64_t runId(MainWindow& w, const char* name) {
  RunStore store(w.storePath().toStdString(), RunStore::Mode::read_only);
  return store.find_run(name).id;
}
}  // namespace

class TestGuiViews : public QObject {
  Q_OBJECT

 private slots:
  void browser_lists_experiments_and_runs() {
    QTemporaryDir dir;
    MainWindow w;
    QVERIFY2(w.openStore(fx::write(dir)), qPrintable(w.errorText()));
    w.show();
    QAbstractItemModel* model = w.runView()->model();
    QCOMPARE(model->rowCount(), 2);  // "ablation" and "default"
    int runs = 0;
    for (int r = 0; r < model->rowCount(); ++r) runs += model->rowCount(model->index(r, 0));
    QCOMPARE(runs, 4);
    QVERIFY(w.selectExperiment("ablation"));
    // Browser order: sorted by name.
    const std::vector<int64_t> want = {runId(w, "dc"), runId(w, "ec"), runId(w, "hier")};
    QVERIFY(w.selectedRunIds() == want);
    QVERIFY(!w.selectExperiment("nope"));
  }

  void every_view_shows_the_selection() {
    QTemporaryDir dir;
    MainWindow w;
    QVERIFY(w.openStore(fx::write(dir)));
    w.show();
    QVERIFY(w.selectExperiment("ablation"));
    // Metrics (the visible view): refreshed once control returns to the event loop, one line per
    // run, one point per step.
    auto* metrics = w.findChild<MetricChartView*>();
    QTRY_COMPARE(metrics->chartView()->chart()->series().size(), 3);
    QCOMPARE(qobject_cast<QLineSeries*>(metrics->chartView()->chart()->series().first())->count(), fx::kSteps);
    // Each other view: no hint or error once it is shown with the three runs selected.
    QVERIFY(w.showTab("Phases"));
    QCOMPARE(w.findChild<PhaseBreakdownView*>()->message(), QString());
    QVERIFY(w.showTab("Ablation"));
    QCOMPARE(w.findChild<AblationView*>()->message(), QString());
    QVERIFY(w.showTab("Traffic"));
    QCOMPARE(w.findChild<TrafficView*>()->message(), QString());
    QVERIFY(w.showTab("expert load"));
    QCOMPARE(w.findChild<ExpertLoadView*>()->message(), QString());
    QVERIFY(w.showTab("Timeline"));
    auto* timeline = w.findChild<TimelineView*>();
    QCOMPARE(timeline->message(), QString());
    QCOMPARE(timeline->currentRun(), runId(w, "dc"));
    QVERIFY(w.showTab("Roofline"));
    auto* roofline = w.findChild<RooflineView*>();
    QVERIFY2(!roofline->message().contains("Select"), qPrintable(roofline->message()));
    QVERIFY(!w.showTab("No such view"));
    const QImage shot = w.grab().toImage();
    QVERIFY(!shot.isNull() && shot.width() > 100);

    // A new selection reaches the visible view at once and the others when they are shown.
    w.runView()->clearSelection();
    QTRY_VERIFY2(roofline->message().contains("Select"), qPrintable(roofline->message()));
    QCOMPARE(timeline->currentRun(), runId(w, "dc"));  // hidden: not refreshed yet
    QVERIFY(w.showTab("Timeline"));
    QVERIFY(!timeline->message().isEmpty());
  }

  void reload_keeps_the_selection() {
    QTemporaryDir dir;
    const QString path = fx::write(dir);
    MainWindow w;
    QVERIFY(w.openStore(path));
    QVERIFY(w.selectExperiment("ablation"));
    const std::vector<int64_t> before = w.selectedRunIds();
    {
      RunStore store(path.toStdString());
      RunInfo extra;
      extra.name = "late";
      extra.experiment = "ablation";
      store.create_run(extra);
    }
    w.reloadStore();
    const std::vector<int64_t> after = w.selectedRunIds();
    QCOMPARE(after.size(), before.size());  // the three runs, not the new one
    QVERIFY(std::equal(before.begin(), before.end(), after.begin()));
    QCOMPARE(w.runView()->model()->rowCount(w.runView()->model()->index(0, 0)), 4);
  }

  void config_editor_feeds_the_launcher() {
    QTemporaryDir dir;
    MainWindow w;
    QVERIFY(w.configEditor()->openFile(QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml")));
    const QString saved = dir.filePath("copy.toml");
    QVERIFY(w.configEditor()->saveFile(saved));
    QCOMPARE(w.launcher()->spec().configPath, QFileInfo(saved).absoluteFilePath());
    QVERIFY(w.showTab("Config"));
    QCOMPARE(w.pages()->currentWidget(), w.configEditor());
    QVERIFY(w.showTab("launch"));
    QCOMPARE(w.pages()->currentWidget(), w.launcher());
  }

  // Quitting with a launched run going cancels it: the run is stopped and marked, not orphaned.
  void closing_cancels_a_launched_run() {
    QTemporaryDir dir;
    MainWindow w;
    w.setAskBeforeClose(false);
    moebench::gui::LaunchSpec spec = w.launcher()->spec();
    spec.moebenchPath = QStringLiteral(MOEBENCH_CLI);
    spec.configPath = QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml");
    spec.steps = 100000;
    spec.db = dir.filePath("runs.db");
    spec.sets = {"run.out_dir=" + dir.filePath("out")};
    w.launcher()->setSpec(spec);
    QSignalSpy progress(w.launcher()->session(), &moebench::gui::LaunchSession::progress);
    QSignalSpy finished(w.launcher()->session(), &moebench::gui::LaunchSession::finished);
    QVERIFY2(w.launcher()->start(), qPrintable(w.launcher()->validationError()));
    QTRY_VERIFY_WITH_TIMEOUT(progress.count() > 0, 60000);
    QVERIFY(w.close());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    QCOMPARE(finished.first().at(1).toString(), QString("killed"));
    RunStore store(spec.db.toStdString(), RunStore::Mode::read_only);
    QCOMPARE(store.list_runs().at(0).status, RunStatus::killed);
  }

  void bad_store_is_reported() {
    QTemporaryDir dir;
    QFile f(dir.filePath("junk.db"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(4096, 'x'));
    f.close();
    MainWindow w;
    QVERIFY(!w.openStore(f.fileName()));
    QVERIFY2(w.errorText().contains("junk.db"), qPrintable(w.errorText()));
  }

  // The executable's screenshot mode (scripts/screenshots.sh) saves one PNG per page and view.
  void screenshot_all_saves_every_view() {
    QTemporaryDir dir;
    const QString db = fx::write(dir);
    QProcess gui;
    gui.start(QStringLiteral(MOEBENCH_BINARY_DIR "/gui/moebench-gui"),
              {db, "--select-experiment", "ablation", "--config", MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml",
               "--screenshot-all", dir.filePath("shots")});
    const bool done = gui.waitForFinished(120000);
    const QByteArray output = gui.readAllStandardOutput() + gui.readAllStandardError();
    QVERIFY2(done && gui.exitStatus() == QProcess::NormalExit && gui.exitCode() == 0, output.constData());
    const QStringList names = {"metrics", "phases", "ablation", "traffic", "expert-load", "timeline",
                               "roofline", "config", "launch"};
    for (const QString& name : names) {
      const QImage image(dir.filePath("shots/" + name + ".png"));
      QVERIFY2(!image.isNull() && image.width() >= 800, qPrintable(name));
    }
    gui.start(QStringLiteral(MOEBENCH_BINARY_DIR "/gui/moebench-gui"), {db, "--select-experiment", "missing"});
    QVERIFY(gui.waitForFinished(60000));
    QCOMPARE(gui.exitCode(), 2);
    QVERIFY(gui.readAllStandardError().contains("no experiment 'missing'"));
  }
};

QTEST_MAIN(TestGuiViews)
#include "tst_gui_views.moc"
