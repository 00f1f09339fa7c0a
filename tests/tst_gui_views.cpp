// ctest-labels: gui
// The main window rendered headless on a fixture run store: the run browser lists the runs,
// selecting runs plots their metric, a bad file is reported instead of crashing.
#include <QtTest>

#include <QChartView>
#include <QLineSeries>
#include <QTreeView>

#include "mainwindow.h"
#include "moebench/store/run_store.h"

using namespace moebench;

namespace {
QString fixture(const QTemporaryDir& dir) {
  const QString path = dir.filePath("runs.db");
  RunStore store(path.toStdString());
  for (int r = 0; r < 3; ++r) {
    RunInfo info;
    info.name = "run" + std::to_string(r);
    info.experiment = r < 2 ? "ablation" : "default";
    info.strategy = r == 1 ? "hier_a2a" : "expert_centric";
    const RunInfo run = store.create_run(info);
    for (int step = 0; step < 5; ++step)
      store.log_step(run.id,
                     {{"loss", step, 4.0 - 0.3 * step - 0.1 * r, 0}, {"step_ms", step, 10.0 + r, 0},
                      {"tokens_per_s", step, 1000.0 * (r + 1), 0}},
                     {}, {}, {});
    store.set_status(run.id, RunStatus::finished, 0);
  }
  return path;
}
}  // namespace

class TestGuiViews : public QObject {
  Q_OBJECT

 private slots:
  void main_window_browses_and_plots() {
    QTemporaryDir dir;
    MainWindow w;
    QVERIFY2(w.openStore(fixture(dir)), qPrintable(w.errorText()));
    w.show();
    QTreeView* view = w.runView();
    QAbstractItemModel* model = view->model();
    QCOMPARE(model->rowCount(), 2);  // two experiments
    int runs = 0;
    for (int r = 0; r < model->rowCount(); ++r) runs += model->rowCount(model->index(r, 0));
    QCOMPARE(runs, 3);
    view->selectAll();
    auto* chart = w.findChild<QChartView*>();
    QVERIFY(chart);
    QCOMPARE(chart->chart()->series().size(), 3);
    auto* series = qobject_cast<QLineSeries*>(chart->chart()->series().first());
    QVERIFY(series);
    QCOMPARE(series->count(), 5);
    const QImage shot = w.grab().toImage();
    QVERIFY(!shot.isNull() && shot.width() > 100);
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
};

QTEST_MAIN(TestGuiViews)
#include "tst_gui_views.moc"
