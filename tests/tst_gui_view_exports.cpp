// ctest-labels: gui
// Every run view of the main window, rendered offscreen at the default 1280 x 800 with the
// fixture's three ablation runs (long names) and three predicted runs selected (issue 35, point 8): it
// does not widen the window, its charts draw no elided text (no axis says its labels are truncated, no drawn text holds "..." or
// "…"), and File > Export view writes its pictures (PNG that loads at the widget's size, SVG)
// and tables (CSV with a header row) as non-empty files, never over existing ones.
#include <QtTest>

#include <QAbstractAxis>
#include <QChart>
#include <QChartView>
#include <QFile>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>
#include <QImage>
#include <QTabWidget>

#include "gui_fixture.h"
#include "mainwindow.h"

using namespace moebench;
namespace fx = moebench::test::gui_fixture;

namespace {

// A predicted copy of the fixture's "ec" run (tag predicted, its own cluster's ceiling), in the
// same experiment: the views show measured and predicted runs side by side.
void addPredicted(const QString& path, const std::string& name) {
  RunStore store(path.toStdString());
  const RunInfo ec = store.find_run("ec");
  RunInfo info;
  info.name = name;
  info.experiment = "ablation";
  info.strategy = ec.strategy;
  info.config_json = ec.config_json;
  info.ranks = ec.ranks;
  info.start_time = ec.start_time + 1000;
  const int64_t id = store.create_run(info).id;
  store.log_params(id, {{"peak_gflops", "150"}, {"peak_gflops_source", "cluster fixture: the device rate (predicted)"}});
  store.set_tag(id, "predicted", "simulator");
  store.set_tag(id, "cluster", "fixture");
  store.set_tag(id, "rates", "described");
  for (int step = 1; step <= 3; ++step) {
    std::vector<SpanRow> spans;
    for (int rank = 0; rank < fx::kRanks; ++rank)
      for (const SpanRow& s : fx::stepSpans(0, step, rank)) spans.push_back(s);
    store.log_step(id, {{"step_ms", step, 18.0, 0}, {"loss", step, 4.0, 0}}, spans, {}, {});
  }
  store.set_status(id, RunStatus::finished, 0);
}

}  // namespace

class TestGuiViewExports : public QObject {
  Q_OBJECT

 private slots:
  void every_view_renders_whole_labels_and_exports() {
    QTemporaryDir dir;
    const QString path = fx::write(dir);
    for (const char* name : {"ec (predicted)", "ec (predicted) on the calibrated host", "ec (predicted) on defaults"})
      addPredicted(path, name);
    {  // long names, as `ablate --repeats` gives them: labels and check boxes must still fit
      RunStore store(path.toStdString());
      for (const char* n : fx::kRunNames)
        store.rename_run(store.find_run(n).id, std::string("strategies-ablation.") + n + ".repeat-1");
    }
    MainWindow w;
    w.setAskBeforeClose(false);
    QVERIFY2(w.openStore(path), qPrintable(w.errorText()));
    w.liveStore()->setLive(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.selectExperiment("ablation"));
    QCOMPARE(int(w.selectedRunIds().size()), 6);
    QTabWidget* views = w.viewTabs();
    for (int i = 0; i < views->count(); ++i) {
      const QString title = views->tabText(i).remove('&');
      views->setCurrentIndex(i);
      QTest::qWait(50);  // the view reads once control returns to the event loop
      QApplication::processEvents();
      for (QChartView* cv : views->widget(i)->findChildren<QChartView*>()) {
        if (!cv->isVisibleTo(views->widget(i))) continue;
        QChart* chart = cv->chart();
        for (QAbstractAxis* a : chart->axes())
          QVERIFY2(!a->labelsTruncated(), qPrintable(title + ": axis " + a->titleText()));
        for (QGraphicsItem* item : chart->scene()->items()) {
          QString text;
          if (auto* t = dynamic_cast<QGraphicsTextItem*>(item); t && t->isVisible()) text = t->toPlainText();
          if (auto* t = dynamic_cast<QGraphicsSimpleTextItem*>(item); t && t->isVisible()) text = t->text();
          QVERIFY2(!text.contains(u'…') && !text.contains("..."), qPrintable(title + ": " + text));
        }
      }
      // The view fits the default window: it does not widen it (the run browser keeps its room).
      QVERIFY2(w.width() <= 1280, qPrintable(title + ": window " + QString::number(w.width())));
      const QString base = dir.filePath(QString("view%1").arg(i));
      QString error;
      const QStringList files = w.exportCurrentView(base, &error);
      QVERIFY2(!files.isEmpty(), qPrintable(title + ": " + error));
      for (const QString& f : files) {
        QVERIFY2(QFileInfo(f).size() > 0, qPrintable(f));
        if (f.endsWith(".png")) QVERIFY2(!QImage(f).isNull(), qPrintable(f));
        if (f.endsWith(".csv")) {
          QFile csv(f);
          QVERIFY(csv.open(QIODevice::ReadOnly));
          QVERIFY2(csv.readLine().trimmed().size() > 0, qPrintable(f));  // a header row
        }
      }
      // Again: refused, naming a file; nothing replaced.
      QVERIFY(w.exportCurrentView(base, &error).isEmpty());
      QVERIFY2(error.contains("exists"), qPrintable(error));
    }
  }
};

QTEST_MAIN(TestGuiViewExports)
#include "tst_gui_view_exports.moc"
