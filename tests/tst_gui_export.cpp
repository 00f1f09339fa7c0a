// ctest-labels: unit gui
// Export of a view (widgets/viewexport.h) and the CSV writer under it (models/modelcsv.h):
// RFC 4180 quoting and row names on a hand-built model, exact; AblationView (a chart in a
// scroll area, a table on each of two tabs) and MetricChartView and TrafficView (a heatmap, a
// custom-painted widget) of stores with known contents, rendered offscreen and exported: the
// PNG is an image of the widget's size, the SVG a valid picture of that size, the CSVs exactly
// the tables; a second export writes nothing and names the existing file.
#include <QtTest>

#include <QBuffer>
#include <QChartView>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QStandardItemModel>
#include <QSvgRenderer>
#include <QTableView>
#include <QTemporaryDir>

#include <memory>
#include <vector>

#include "gui_fixture.h"
#include "models/modelcsv.h"
#include "moebench/store/run_store.h"
#include "widgets/ablationview.h"
#include "widgets/heatmapview.h"
#include "widgets/metricchartview.h"
#include "widgets/trafficview.h"
#include "widgets/viewexport.h"

using namespace moebench;
namespace fx = moebench::test::gui_fixture;

namespace {

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Two variants: "moe.top_k=1" ms 10 and 12 (mean 11, sd 1.41), "moe.top_k=2" ms 8.
std::vector<int64_t> writeRepeats(const QString& path) {
  RunStore store(path.toStdString());
  const std::vector<std::pair<const char*, double>> runs = {{"moe.top_k=1", 10}, {"moe.top_k=1", 12}, {"moe.top_k=2", 8}};
  std::vector<int64_t> ids;
  for (size_t i = 0; i < runs.size(); ++i) {
    RunInfo info;
    info.name = "abl." + std::to_string(i + 1);
    info.experiment = "abl";
    info.strategy = "expert_centric";
    info.ranks = 1;
    info.start_time = 1700000000.0 + double(i);
    const int64_t id = store.create_run(info).id;
    for (int step = 1; step <= 3; ++step)
      store.log_step(id, {{"loss", step, 3.5, 0}, {"step_ms", step, runs[i].second, 0},
                          {"tokens_per_s", step, 100 * runs[i].second, 0}},
                     {}, {}, {});
    store.set_tag(id, "ablation.variant", runs[i].first);
    store.set_status(id, RunStatus::finished, info.start_time + 1);
    ids.push_back(id);
  }
  return ids;
}

void show(QWidget& w) {
  w.resize(900, 600);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QApplication::processEvents();
}

// The picture files are there, the PNG an image of the widget's pixels, the SVG a picture of its size.
void checkPicture(QWidget* widget, const QString& png, const QString& svg) {
  QVERIFY2(QFileInfo(png).size() > 0, qPrintable(png));
  QVERIFY2(QFileInfo(svg).size() > 0, qPrintable(svg));
  const QImage image(png);
  QVERIFY(!image.isNull());
  QCOMPARE(image.size(), (QSizeF(widget->size()) * widget->devicePixelRatioF()).toSize());
  const QRgb first = image.pixel(0, 0);
  bool varied = false;
  for (int y = 0; y < image.height() && !varied; y += 5)
    for (int x = 0; x < image.width() && !varied; x += 5) varied = image.pixel(x, y) != first;
  QVERIFY2(varied, "the PNG is one flat colour");
  QSvgRenderer renderer(svg);
  QVERIFY2(renderer.isValid(), qPrintable(svg));
  QCOMPARE(renderer.viewBoxF(), QRectF(QPointF(0, 0), QSizeF(widget->size())));
}

}  // namespace

class TestGuiExport : public QObject {
  Q_OBJECT

 private slots:
  void csvQuotingAndRowNames() {
    using moebench::gui::csvField;
    using moebench::gui::modelToCsv;
    QCOMPARE(csvField("plain"), QStringLiteral("plain"));
    QCOMPARE(csvField("a,b"), QStringLiteral("\"a,b\""));
    QCOMPARE(csvField("say \"hi\""), QStringLiteral("\"say \"\"hi\"\"\""));
    QCOMPARE(csvField("two\nlines"), QStringLiteral("\"two\nlines\""));
    QCOMPARE(csvField("cr\r"), QStringLiteral("\"cr\r\""));
    QCOMPARE(csvField(""), QString());
    QStandardItemModel model(2, 3);
    model.setHorizontalHeaderLabels({"Variant", "ms/step", "note"});
    model.setItem(0, 0, new QStandardItem("moe.top_k=1 train.lr=1e-3"));
    model.setItem(0, 1, new QStandardItem("12.00"));
    model.setItem(0, 2, new QStandardItem("a, \"quoted\" one"));
    model.setItem(1, 0, new QStandardItem("ünïcode"));
    model.setItem(1, 2, new QStandardItem("line1\nline2"));
    // row numbers as vertical headers (QStandardItemModel's default): no row-name column
    QCOMPARE(modelToCsv(model), QStringLiteral("Variant,ms/step,note\r\n"
                                               "moe.top_k=1 train.lr=1e-3,12.00,\"a, \"\"quoted\"\" one\"\r\n"
                                               "ünïcode,,\"line1\nline2\"\r\n"));
    // named rows: a first column under an empty header
    model.setVerticalHeaderLabels({"layer 0", "whole step"});
    QCOMPARE(modelToCsv(model), QStringLiteral(",Variant,ms/step,note\r\n"
                                               "layer 0,moe.top_k=1 train.lr=1e-3,12.00,\"a, \"\"quoted\"\" one\"\r\n"
                                               "whole step,ünïcode,,\"line1\nline2\"\r\n"));
    QStandardItemModel empty(0, 2);
    empty.setHorizontalHeaderLabels({"a", "b"});
    QCOMPARE(modelToCsv(empty), QStringLiteral("a,b\r\n"));
    // UTF-8 on a device
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    QVERIFY(moebench::gui::writeModelCsv(model, buffer));
    QCOMPARE(QString::fromUtf8(buffer.data()), modelToCsv(model));
  }

  void ablationViewExport() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::vector<int64_t> ids = writeRepeats(dir.filePath("runs.db"));
    auto store = std::make_shared<RunStore>(dir.filePath("runs.db").toStdString(), RunStore::Mode::read_only);
    AblationView view;
    view.setRuns(store, ids);
    show(view);
    const QString base = dir.filePath("ablation");
    const QStringList want = {base + ".png", base + ".svg", base + "-variants.csv", base + "-runs.csv"};
    QCOMPARE(moebench::gui::exportPaths(&view, base), want);
    QCOMPARE(moebench::gui::exportPaths(&view, base + ".png"), want);  // a typed extension is dropped
    QString error;
    const QStringList written = moebench::gui::exportView(&view, base, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(written, want);
    checkPicture(view.chartView(), want[0], want[1]);
    // the tables, exactly (the runs table is on the tab not shown, and is written too)
    QCOMPARE(QString::fromUtf8(readAll(want[2])),
             QStringLiteral("Variant,Runs,ms/step,± ms/step,tokens/s,± tokens/s,Speedup\r\n"
                            "moe.top_k=1,2,11.00,1.41,1100,141,1.00x\r\n"
                            "moe.top_k=2,1,8.00,,800,,1.38x\r\n"));
    QCOMPARE(QString::fromUtf8(readAll(want[3])),
             QStringLiteral("Variant,Strategy,ms/step,tokens/s,Final loss,Speedup,Comm share\r\n"
                            "moe.top_k=1,expert_centric,10.00,1000,3.5000,1.10x,\r\n"
                            "moe.top_k=1,expert_centric,12.00,1200,3.5000,0.92x,\r\n"
                            "moe.top_k=2,expert_centric,8.00,800,3.5000,1.38x,\r\n"));

    // a second export overwrites nothing: it names the first file that exists, writes nothing
    QList<QByteArray> before;
    for (const QString& p : want) before << readAll(p);
    error.clear();
    QCOMPARE(moebench::gui::exportView(&view, base, &error), QStringList());
    QVERIFY2(error.contains(want[0]) && error.contains("exists") && error.contains("nothing was written"),
             qPrintable(error));
    for (int i = 0; i < want.size(); ++i) QCOMPARE(readAll(want[i]), before[i]);
    // only one of the files exists (the last): still nothing written, the others stay absent
    const QString other = dir.filePath("other");
    QVERIFY(QFile(other + "-runs.csv").open(QIODevice::WriteOnly));
    QCOMPARE(moebench::gui::exportView(&view, other, &error), QStringList());
    QVERIFY2(error.contains(other + "-runs.csv"), qPrintable(error));
    QVERIFY(!QFileInfo::exists(other + ".png"));
    QVERIFY(!QFileInfo::exists(other + "-variants.csv"));
    QCOMPARE(QFileInfo(other + "-runs.csv").size(), qint64(0));
    // a folder that does not exist: an error naming the file, nothing left behind
    QCOMPARE(moebench::gui::exportView(&view, dir.filePath("no/such/folder/x"), &error), QStringList());
    QVERIFY2(error.contains("no/such/folder/x.png"), qPrintable(error));
    // a view showing only its message: nothing to export
    AblationView empty;
    show(empty);
    QCOMPARE(moebench::gui::exportView(&empty, dir.filePath("empty"), &error), QStringList());
    QVERIFY2(error.contains("nothing to export"), qPrintable(error));
    QVERIFY(QDir(dir.path()).entryList({"empty*"}).isEmpty());
  }

  void otherViewsExport() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    auto store = std::make_shared<RunStore>(fx::write(dir).toStdString(), RunStore::Mode::read_only);
    const int64_t ec = store->find_run("ec").id, hier = store->find_run("hier").id;
    // MetricChartView: one chart (its combo box's list is not a table; a list beside it is)
    MetricChartView metrics;
    metrics.setRuns(store, {ec, hier});
    show(metrics);
    const QString base = dir.filePath("metrics");
    QString error;
    const QStringList written = moebench::gui::exportView(&metrics, base, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(written.mid(0, 2), (QStringList{base + ".png", base + ".svg"}));
    for (const QString& p : written.mid(2)) QVERIFY2(p.endsWith(".csv") && QFileInfo(p).size() > 0, qPrintable(p));
    QCOMPARE(moebench::gui::exportItems(&metrics).pictures, QList<QWidget*>{metrics.chartView()});
    checkPicture(metrics.chartView(), written[0], written[1]);
    QCOMPARE(moebench::gui::exportView(&metrics, base, &error), QStringList());
    QVERIFY(error.contains(base + ".png"));
    // TrafficView: its heatmap, a custom-painted widget, rendered the same way
    TrafficView traffic;
    traffic.setRuns(store, {ec});
    show(traffic);
    const moebench::gui::ExportItems items = moebench::gui::exportItems(&traffic);
    QVERIFY(items.pictures.contains(traffic.heatmap()));
    const QStringList files = moebench::gui::exportView(&traffic, dir.filePath("traffic"), &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const int at = int(items.pictures.indexOf(traffic.heatmap()));
    checkPicture(traffic.heatmap(), files[2 * at], files[2 * at + 1]);
  }
};

QTEST_MAIN(TestGuiExport)
#include "tst_gui_export.moc"
