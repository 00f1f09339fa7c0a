// ctest-labels: gui slow
// Reading a run store that a run is writing (issue 35, point 1 and 2): the GUI's reads go
// through SQLite's locking WAL path, so a store in use is never reported corrupt, while a
// damaged copy still is, once, naming the file, and the error clears when the store reads fine
// again. LiveStore's reads run off the GUI thread and bring RUNNING runs in as they are written;
// the main window keeps the selection and the collapsed experiments across live refreshes.
#include <QtTest>

#include <QFile>
#include <QLabel>
#include <QProcess>
#include <QComboBox>
#include <QTreeView>

#include <set>

#include "gui_fixture.h"
#include "mainwindow.h"
#include "models/livestore.h"
#include "models/metricseriesmodel.h"
#include "models/runlistmodel.h"
#include "models/phasebreakdownmodel.h"
#include "widgets/metricchartview.h"
#include "widgets/phasebreakdownview.h"
#include "widgets/timelinecanvas.h"
#include "widgets/timelineview.h"

using namespace moebench;
namespace fx = moebench::test::gui_fixture;

namespace {

// The quickstart model (4 ranks through mpirun, as a user runs it) for `steps` steps into `db`.
QStringList trainArgs(const QString& db, const QString& out, const QString& name, int steps) {
  return {QStringLiteral("run"), QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml"),
          QStringLiteral("--db"), db, QStringLiteral("--out"), out, QStringLiteral("--steps"), QString::number(steps),
          QStringLiteral("--set"), QStringLiteral("run.name=\"%1\"").arg(name), QStringLiteral("--set"),
          QStringLiteral("train.eval_every=0")};
}

// Overwrites `bytes` bytes at `offset` of `path` with 0xA5.
void damage(const QString& path, qint64 offset, int bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadWrite));
  QVERIFY(f.seek(offset));
  QCOMPARE(f.write(QByteArray(bytes, char(0xA5))), qint64(bytes));
}

// A finished run of `steps` steps with `spansPerStep` spans each: a store of tens of MB, as a
// researcher's store becomes (a full check of it takes long enough for a run to start and end).
void addBulkRun(const QString& db, int steps, int spansPerStep) {
  RunStore store(db.toStdString());
  RunInfo info;
  info.name = "bulk";
  const int64_t id = store.create_run(info).id;
  for (int step = 1; step <= steps; ++step) {
    std::vector<SpanRow> spans(static_cast<size_t>(spansPerStep));
    for (int i = 0; i < spansPerStep; ++i) {
      spans[size_t(i)].step = step;
      spans[size_t(i)].rank = i % 4;
      spans[size_t(i)].stream = "compute";
      spans[size_t(i)].name = "moe.experts." + std::to_string(i % 16);
      spans[size_t(i)].category = "compute";
      spans[size_t(i)].start = 1e-4 * i;
      spans[size_t(i)].duration = 5e-5;
    }
    store.log_step(id, {{"loss", step, 4.0, 0}}, spans, {}, {});
  }
  store.set_status(id, RunStatus::finished, 0);
}

const RunListModel::RunRow* findRun(const std::vector<RunListModel::Experiment>& exps, const std::string& name) {
  for (const auto& e : exps)
    for (const auto& r : e.runs)
      if (r.info.name == name) return &r;
  return nullptr;
}

}  // namespace

class TestGuiLiveStore : public QObject {
  Q_OBJECT

 private slots:
  // Two runs, one after the other, write the store (each `moebench run` opens and closes it more
  // than once: the check before the launch, the launcher, rank 0) while the GUI's three ways of
  // reading it loop: a new read-only RunStore with the run list (Reload, F5), LiveStore's read
  // through a kept connection, and the metric series of the run being written.
  void reads_while_runs_write_report_no_corruption() {
    QTemporaryDir dir;
    const QString db = dir.filePath("runs.db");
    addBulkRun(db, 100, 4000);
    QVERIFY2(QFileInfo(db).size() > (int64_t(20) << 20), qPrintable(QString::number(QFileInfo(db).size())));
    std::vector<std::pair<QString, int>> runs = {{"first", 30}, {"second", 30}, {"third", 30}, {"fourth", 30}};
    QStringList errors;
    std::set<int64_t> runningSteps;  // steps seen for a RUNNING run
    int reads = 0;
    std::shared_ptr<RunStore> kept;
    for (const auto& [name, steps] : runs) {
      QProcess train;
      train.setProcessChannelMode(QProcess::MergedChannels);
      train.start(QStringLiteral(MOEBENCH_CLI), trainArgs(db, dir.filePath("out-" + name), name, steps));
      QVERIFY(train.waitForStarted());
      while (train.state() != QProcess::NotRunning) {
        train.waitForFinished(20);
        if (!QFile::exists(db)) continue;
        try {
          auto store = std::make_shared<RunStore>(db.toStdString(), RunStore::Mode::read_only);
          RunListModel model;
          model.setStore(store);
          const auto* row = findRun(model.experiments(), name.toStdString());
          if (row) {
            MetricSeriesModel series;
            series.setRuns(store, {row->info.id}, QStringLiteral("loss"));
            if (row->info.status == RunStatus::running) runningSteps.insert(series.rowCount());
          }
          ++reads;
        } catch (const std::exception& e) {
          errors << QString::fromUtf8(e.what());
        }
        const LiveStore::Snapshot s = LiveStore::read(db, kept);
        if (s.error.isEmpty()) kept = s.store;
        else if (!s.error.contains("does not exist")) errors << s.error;
      }
      QVERIFY2(train.exitCode() == 0, train.readAll().constData());
    }
    QVERIFY2(errors.isEmpty(), qPrintable(errors.join('\n')));
    QVERIFY2(reads > 8, qPrintable(QString::number(reads)));
    // Live: a RUNNING run was read with a growing number of steps.
    QVERIFY2(runningSteps.size() >= 2, qPrintable(QString::number(runningSteps.size())));
    RunStore store(db.toStdString(), RunStore::Mode::read_only);
    QCOMPARE(store.list_runs().size(), runs.size() + 1);
    for (const auto& r : store.list_runs()) QCOMPARE(r.status, RunStatus::finished);
  }

  // A damaged copy is reported as corrupt, by the window and by the live read, naming the file
  // once; the error clears when a good store is read again.
  void a_damaged_store_is_reported_once_and_clears() {
    QTemporaryDir dir;
    const QString good = fx::write(dir);
    const QString bad = dir.filePath("damaged.db");
    QVERIFY(QFile::copy(good, bad));
    QVERIFY(!QFile::exists(good + "-wal") || QFileInfo(good + "-wal").size() == 0);  // all in the main file
    damage(bad, 4096 * 3, 4096 * 4);

    const LiveStore::Snapshot s = LiveStore::read(bad, nullptr);
    QVERIFY2(s.error.contains("is corrupt"), qPrintable(s.error));
    QCOMPARE(s.error.count(bad), 1);

    MainWindow w;
    w.setAskBeforeClose(false);
    QVERIFY(!w.openStore(bad));
    QVERIFY2(w.errorText().contains("is corrupt"), qPrintable(w.errorText()));
    QCOMPARE(w.errorText().count(bad), 1);
    QVERIFY(w.openStore(good));
    QCOMPARE(w.errorText(), QString());

    // Live: the store becomes damaged under the window (a copy replaced it), then good again.
    const QString live = dir.filePath("live.db");
    QVERIFY(QFile::copy(good, live));
    QVERIFY(w.openStore(live));
    w.liveStore()->setLive(false);  // refreshes by hand only
    QVERIFY(QFile::remove(live));
    QVERIFY(QFile::copy(bad, live));
    QFile::remove(live + "-wal");
    QFile::remove(live + "-shm");
    // The window's connection still reads the old (unlinked) file; a snapshot read opens anew.
    const LiveStore::Snapshot damaged = LiveStore::read(live, nullptr);
    QVERIFY(damaged.error.contains("is corrupt"));
    QVERIFY(QFile::remove(live));
    QVERIFY(QFile::copy(good, live));
    QVERIFY(w.openStore(live));
    QCOMPARE(w.errorText(), QString());
    QVERIFY(!w.liveText().contains("corrupt"));
  }

  // The window follows a store another process writes: a new RUNNING run appears within a
  // refresh, with its steps as they come, without losing the selection or a collapsed
  // experiment; the status bar says when the store was read. Reads run off the GUI thread.
  void window_follows_a_running_run() {
    QTemporaryDir dir;
    const QString path = fx::write(dir);
    MainWindow w;
    w.setAskBeforeClose(false);
    QVERIFY(w.openStore(path));
    w.show();
    w.liveStore()->setInterval(200);
    QVERIFY(w.selectExperiment("ablation"));
    const std::vector<int64_t> selected = w.selectedRunIds();
    // Collapse "default": it stays collapsed across refreshes.
    QAbstractItemModel* m = w.runView()->model();
    QModelIndex def;
    for (int r = 0; r < m->rowCount(); ++r)
      if (m->index(r, 0).data().toString() == "default") def = m->index(r, 0);
    QVERIFY(def.isValid());
    w.runView()->collapse(def);

    RunStore writer(path.toStdString());
    RunInfo info;
    info.name = "live";
    info.experiment = "default";
    info.strategy = "expert_centric";
    const int64_t id = writer.create_run(info).id;  // RUNNING, this process
    writer.log_step(id, {{"loss", 1, 4.0, 0}}, {}, {}, {});
    QTRY_VERIFY_WITH_TIMEOUT(w.runModel()->indexForRun(id).isValid(), 5000);
    const RunListModel::RunRow* row = w.runModel()->runRowAt(w.runModel()->indexForRun(id));
    QCOMPARE(row->info.status, RunStatus::running);
    QCOMPARE(row->steps, int64_t(1));
    QVERIFY(w.selectedRunIds() == selected);
    for (int r = 0; r < m->rowCount(); ++r) {
      const QModelIndex idx = m->index(r, 0);
      QCOMPARE(w.runView()->isExpanded(idx), idx.data().toString() != "default");
    }
    // Select the running run: Metrics and Timeline follow it as steps come (read off the GUI
    // thread), keeping the selection.
    w.selectRuns({id});
    auto* metrics = w.findChild<MetricChartView*>();
    QTRY_COMPARE(metrics->model()->rowCount(), 1);
    QVERIFY(w.showTab("Timeline"));
    auto* timeline = w.findChild<TimelineView*>();
    QTRY_VERIFY(!timeline->message().isEmpty());  // no spans yet
    QVERIFY(w.showTab("Metrics"));
    std::vector<SpanRow> spans = fx::stepSpans(0, 2, 0);
    writer.log_step(id, {{"loss", 2, 3.9, 0}}, spans, {}, {});
    QTRY_COMPARE_WITH_TIMEOUT(w.runModel()->runRowAt(w.runModel()->indexForRun(id))->steps, int64_t(2), 5000);
    QTRY_COMPARE_WITH_TIMEOUT(metrics->model()->rowCount(), 2, 5000);
    QVERIFY(w.selectedRunIds() == std::vector<int64_t>{id});
    QVERIFY(w.showTab("Timeline"));
    QTRY_COMPARE_WITH_TIMEOUT(timeline->stepChooser()->count(), 2, 5000);  // "all steps", "step 2"
    QTRY_COMPARE(timeline->message(), QString());
    writer.log_step(id, {{"loss", 3, 3.8, 0}}, fx::stepSpans(0, 3, 0), {}, {});
    QTRY_COMPARE_WITH_TIMEOUT(timeline->stepChooser()->count(), 3, 5000);
    QCOMPARE(timeline->currentStep(), TimelineView::kAllSteps);
    QTRY_COMPARE(int(timeline->canvas()->spans().size()), int(2 * spans.size()));
    // Phases follows too (read on a worker thread): the step spans give a time split.
    QVERIFY(w.showTab("Phases"));
    auto* phases = w.findChild<PhaseBreakdownView*>();
    QTRY_VERIFY(phases->model(id) && phases->model(id)->rowCount() > 0);
    QVERIFY(!phases->model(id)->warmupExcluded());  // 2 steps: both count
    writer.log_step(id, {{"loss", 4, 3.7, 0}}, fx::stepSpans(0, 4, 0), {}, {});
    QTRY_VERIFY_WITH_TIMEOUT(phases->model(id)->warmupExcluded(), 5000);  // 3 steps: the first is left out
    writer.set_status(id, RunStatus::finished, 0);
    QTRY_COMPARE_WITH_TIMEOUT(w.runModel()->runRowAt(w.runModel()->indexForRun(id))->info.status, RunStatus::finished, 5000);
    QVERIFY(w.liveStore()->readsStarted() >= 3);
    QTRY_VERIFY(w.liveText().startsWith("updated "));
    QVERIFY2(w.liveText().endsWith(" s ago"), qPrintable(w.liveText()));
  }

  // The read itself runs on a worker thread, not the GUI thread.
  void reads_run_off_the_gui_thread() {
    QTemporaryDir dir;
    const QString path = fx::write(dir);
    LiveStore live;
    live.setLive(false);
    live.setStore(path, nullptr);
    QSignalSpy spy(&live, &LiveStore::refreshed);
    QVERIFY(live.refresh());
    QVERIFY(live.isReading());
    // One read at a time: a refresh meanwhile starts nothing now and one more read after it.
    QVERIFY(!live.refresh());
    QVERIFY(!live.refresh());
    QCOMPARE(live.readsStarted(), 1);
    QVERIFY(spy.wait(10000));
    QCOMPARE(live.readsStarted(), 2);  // the queued one (once, however many were asked for)
    QTRY_COMPARE(spy.count(), 2);
    QVERIFY(!live.isReading());
    QCOMPARE(live.readsStarted(), 2);
    const auto s = spy.first().first().value<LiveStore::Snapshot>();
    QCOMPARE(s.error, QString());
    QCOMPARE(int(s.experiments.size()), 2);
    QVERIFY(s.store);
    QVERIFY(s.workerThread);
    QVERIFY(!LiveStore::read(path, nullptr).workerThread);  // called here: the GUI thread
    QCOMPARE(LiveStore::ageText(3400), QString("updated 3 s ago"));
    QCOMPARE(LiveStore::ageText(125000), QString("updated 2 min ago"));
    QCOMPARE(LiveStore::ageText(-1), QString("not read yet"));
  }
};

QTEST_MAIN(TestGuiLiveStore)
#include "tst_gui_live_store.moc"
