// moebench-gui [DB] [--select-all | --select-experiment NAME] [--metric KEY] [--tab NAME]
//              [--config FILE] [--screenshot FILE | --screenshot-all DIR]: browse a run store, see and compare runs, edit configs,
// launch runs. The screenshot options save the window once it has rendered and exit
// (scripts/screenshots.sh takes docs/gui.md's pictures with them under Xvfb).
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QTabWidget>
#include <QTimer>
#include <QTreeView>

#include <cstdio>
#include <functional>

#include "mainwindow.h"
#include "widgets/configeditor.h"
#include "widgets/metricchartview.h"

namespace {
bool save(QWidget& window, const QString& file) {
  const bool ok = window.grab().save(file);
  std::fprintf(ok ? stdout : stderr, ok ? "saved %s\n" : "cannot write %s\n", qPrintable(file));
  return ok;
}
// "Expert load" -> "expert-load"
QString fileNameFor(QString title) { return title.remove('&').toLower().replace(' ', '-'); }
}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("moebench");
  QApplication::setApplicationName("moebench-gui");
  QCommandLineParser parser;
  parser.setApplicationDescription("moebench workbench: browse, compare and launch runs of a run store");
  parser.addHelpOption();
  parser.addPositionalArgument("db", "Run store to open (default: runs.db in the current directory)");
  const QCommandLineOption selectAll("select-all", "Select every run");
  const QCommandLineOption selectExperiment("select-experiment", "Select the runs of experiment NAME", "NAME");
  const QCommandLineOption tab("tab", "Show the page or run view NAME (Runs, Config, Launch, Metrics, Phases, "
                                      "Ablation, Traffic, Expert load, Timeline, Roofline, Predicted vs measured)", "NAME");
  const QCommandLineOption metric("metric", "Plot metric KEY in the Metrics view (default: loss)", "KEY");
  const QCommandLineOption config("config", "Open FILE in the config editor (and the launcher)", "FILE");
  const QCommandLineOption screenshot("screenshot", "Save a PNG of the window to FILE and exit", "FILE");
  const QCommandLineOption screenshotAll("screenshot-all", "Save a PNG of every page and run view to DIR and exit", "DIR");
  parser.addOptions({selectAll, selectExperiment, metric, tab, config, screenshot, screenshotAll});
  parser.process(app);
  MainWindow window;
  std::function<void(int)> next;  // --screenshot-all: shows and saves view i, then i + 1
  const QStringList args = parser.positionalArguments();
  const QString db = args.isEmpty() ? QStringLiteral("runs.db") : args.first();
  const bool shooting = parser.isSet(screenshot) || parser.isSet(screenshotAll);
  if ((!args.isEmpty() || QFile::exists(db)) && !window.openStore(db) && shooting) {
    std::fprintf(stderr, "moebench-gui: %s\n", qPrintable(window.errorText()));
    return 1;
  }
  if (parser.isSet(config) && !window.configEditor()->openFile(parser.value(config)) && shooting) {
    std::fprintf(stderr, "moebench-gui: cannot open %s\n", qPrintable(parser.value(config)));
    return 1;
  }
  if (parser.isSet(selectAll)) window.runView()->selectAll();
  if (parser.isSet(selectExperiment) && !window.selectExperiment(parser.value(selectExperiment))) {
    std::fprintf(stderr, "moebench-gui: no experiment '%s' in the store\n", qPrintable(parser.value(selectExperiment)));
    return 2;
  }
  if (parser.isSet(metric)) window.findChild<MetricChartView*>()->setMetric(parser.value(metric));
  if (parser.isSet(tab) && !window.showTab(parser.value(tab))) {
    std::fprintf(stderr, "moebench-gui: no page or view named '%s'\n", qPrintable(parser.value(tab)));
    return 2;
  }
  window.show();
  if (parser.isSet(screenshot)) {
    const QString file = parser.value(screenshot);
    QTimer::singleShot(1000, &window, [&window, file] { QApplication::exit(save(window, file) ? 0 : 1); });
  } else if (parser.isSet(screenshotAll)) {
    // Every run view, then the Config and Launch pages; each shown for a moment before the grab.
    QStringList titles;
    for (int i = 0; i < window.viewTabs()->count(); ++i) titles << window.viewTabs()->tabText(i);
    for (int i = 1; i < window.pages()->count(); ++i) titles << window.pages()->tabText(i);
    const QString dir = parser.value(screenshotAll);
    QDir().mkpath(dir);
    next = [&window, &next, titles, dir](int i) {
      if (i == titles.size()) return QApplication::exit(0);
      window.showTab(titles[i]);
      QTimer::singleShot(800, &window, [&window, &next, titles, dir, i] {
        if (!save(window, dir + "/" + fileNameFor(titles[i]) + ".png")) return QApplication::exit(1);
        next(i + 1);
      });
    };
    QTimer::singleShot(500, &window, [&next] { next(0); });
  }
  return app.exec();
}
