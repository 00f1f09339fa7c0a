// moebench-gui [DB] [--select-all] [--screenshot FILE]: browse a run store, compare runs'
// metrics. --screenshot saves the window once it has rendered and exits (scripts/screenshots.sh).
#include <QApplication>
#include <QCommandLineParser>
#include <QFile>
#include <QTimer>
#include <QTreeView>

#include <cstdio>

#include "mainwindow.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("moebench");
  QApplication::setApplicationName("moebench-gui");
  QCommandLineParser parser;
  parser.setApplicationDescription("moebench workbench: browse and compare runs of a run store");
  parser.addHelpOption();
  parser.addPositionalArgument("db", "Run store to open (default: runs.db in the current directory)");
  const QCommandLineOption selectAll("select-all", "Select every run (plots all of them)");
  const QCommandLineOption screenshot("screenshot", "Save a PNG of the window to FILE and exit", "FILE");
  parser.addOption(selectAll);
  parser.addOption(screenshot);
  parser.process(app);
  MainWindow window;
  const QStringList args = parser.positionalArguments();
  const QString db = args.isEmpty() ? QStringLiteral("runs.db") : args.first();
  if ((!args.isEmpty() || QFile::exists(db)) && !window.openStore(db) && parser.isSet(screenshot)) {
    std::fprintf(stderr, "moebench-gui: %s\n", qPrintable(window.errorText()));
    return 1;
  }
  if (parser.isSet(selectAll)) window.runView()->selectAll();
  window.show();
  if (parser.isSet(screenshot)) {
    const QString file = parser.value(screenshot);
    QTimer::singleShot(1000, &window, [&window, file] {
      const bool ok = window.grab().save(file);
      std::fprintf(ok ? stdout : stderr, ok ? "saved %s\n" : "cannot write %s\n", qPrintable(file));
      QApplication::exit(ok ? 0 : 1);
    });
  }
  return app.exec();
}
