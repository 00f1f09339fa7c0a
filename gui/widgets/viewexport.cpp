#include "widgets/viewexport.h"

#include <QAbstractItemView>
#include <QChartView>
#include <QComboBox>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QImage>
#include <QPainter>
#include <QRegularExpression>
#include <QSet>
#include <QStackedWidget>
#include <QSvgGenerator>
#include <QTabWidget>
#include <QWidget>

#include <functional>

#include "models/modelcsv.h"
#include "widgets/heatmapview.h"
#include "widgets/timelinecanvas.h"

namespace moebench::gui {
namespace {

bool isPicture(QWidget* w) {
  return qobject_cast<QChartView*>(w) || qobject_cast<HeatmapView*>(w) || qobject_cast<TimelineCanvas*>(w) ||
         w->property("exportPicture").toBool();
}

bool shown(QWidget* w, QWidget* view) { return (w == view || w->isVisibleTo(view)) && !w->size().isEmpty(); }

// Shown, or hidden only as a page of a QTabWidget that is not the current tab (a table there is
// one click away, and its CSV needs no rendering).
bool shownOrOnTab(QWidget* w, QWidget* view) {
  for (QWidget* a = w; a && a != view; a = a->parentWidget()) {
    if (!a->isHidden()) continue;
    QWidget* stack = a->parentWidget();
    if (!stack || !qobject_cast<QTabWidget*>(stack->parentWidget())) return false;
  }
  return true;
}

bool insideComboBox(QWidget* w, QWidget* view) {
  for (QWidget* p = w->parentWidget(); p && p != view; p = p->parentWidget())
    if (qobject_cast<QComboBox*>(p)) return true;
  return false;
}

QString stripExtension(const QString& base) {
  for (const char* ext : {".png", ".svg", ".csv"})
    if (base.endsWith(QLatin1String(ext), Qt::CaseInsensitive)) return base.chopped(4);
  return base;
}

// "-<objectName>" / "-chart<i>" per widget; nothing when there is one.
QStringList suffixes(const QList<QWidget*>& widgets, const QString& fallback) {
  QStringList out;
  if (widgets.size() == 1) return {QString()};
  QStringList names;
  for (QWidget* w : widgets) names << w->objectName();
  for (int i = 0; i < widgets.size(); ++i) {
    QString name = names[i];
    name.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]")), QStringLiteral("_"));
    if (name.isEmpty() || names.count(names[i]) > 1) name = fallback + QString::number(i + 1);
    out << QLatin1Char('-') + name;
  }
  return out;
}

bool writePng(QWidget* w, const QString& path, QString* error) {
  const qreal dpr = w->devicePixelRatioF();
  QImage image((QSizeF(w->size()) * dpr).toSize(), QImage::Format_ARGB32_Premultiplied);
  image.setDevicePixelRatio(dpr);
  image.fill(Qt::white);
  w->render(&image);
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::NewOnly)) {
    *error = QStringLiteral("%1: %2").arg(path, file.errorString());
    return false;
  }
  if (!image.save(&file, "PNG")) {
    *error = QStringLiteral("%1: could not write the PNG (%2)").arg(path, file.errorString());
    file.remove();
    return false;
  }
  return true;
}

bool writeSvg(QWidget* w, const QString& path, const QString& title, QString* error) {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::NewOnly)) {
    *error = QStringLiteral("%1: %2").arg(path, file.errorString());
    return false;
  }
  QSvgGenerator svg;
  svg.setOutputDevice(&file);
  svg.setSize(w->size());
  svg.setViewBox(QRect(QPoint(0, 0), w->size()));
  svg.setResolution(96);  // the width and height it states (in mm) are the widget's pixels at 96 px/inch, as browsers take them
  svg.setTitle(title);
  svg.setDescription(QStringLiteral("moebench-gui export"));
  QPainter painter;
  if (!painter.begin(&svg)) {
    *error = QStringLiteral("%1: could not start the SVG").arg(path);
    file.remove();
    return false;
  }
  w->render(&painter);
  painter.end();
  if (file.error() != QFileDevice::NoError) {
    *error = QStringLiteral("%1: %2").arg(path, file.errorString());
    file.remove();
    return false;
  }
  return true;
}

bool writeCsv(QAbstractItemView* table, const QString& path, QString* error) {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::NewOnly)) {
    *error = QStringLiteral("%1: %2").arg(path, file.errorString());
    return false;
  }
  if (writeModelCsv(*table->model(), file, error)) return true;
  file.remove();
  return false;
}

}  // namespace

ExportItems exportItems(QWidget* view) {
  ExportItems items;
  if (!view) return items;
  // The widget tree depth first; a QStackedWidget's pages in their index order (showing a page
  // raises it, which moves it last among its siblings).
  QList<QWidget*> all;
  const std::function<void(QWidget*)> walk = [&](QWidget* w) {
    all << w;
    QList<QWidget*> children;
    if (auto* stack = qobject_cast<QStackedWidget*>(w))
      for (int i = 0; i < stack->count(); ++i) children << stack->widget(i);
    for (QWidget* c : w->findChildren<QWidget*>(Qt::FindDirectChildrenOnly))
      if (!children.contains(c)) children << c;
    for (QWidget* c : children) walk(c);
  };
  walk(view);
  QSet<QWidget*> inPicture;  // a picture's own children are drawn with it
  for (QWidget* w : all) {
    bool nested = false;
    for (QWidget* p = w->parentWidget(); w != view && p && !nested; p = p == view ? nullptr : p->parentWidget())
      nested = inPicture.contains(p);
    if (nested) continue;
    if (isPicture(w)) {
      if (!shown(w, view)) continue;
      items.pictures << w;
      inPicture.insert(w);
    } else if (auto* table = qobject_cast<QAbstractItemView*>(w); table && table->model() &&
                                                                  !qobject_cast<QHeaderView*>(w) &&
                                                                  !insideComboBox(w, view) && shownOrOnTab(w, view)) {
      items.tables << table;
    }
  }
  return items;
}

QStringList exportPaths(QWidget* view, const QString& basePath) {
  const ExportItems items = exportItems(view);
  const QString base = stripExtension(basePath);
  QStringList paths;
  const QStringList pictureSuffixes = suffixes(items.pictures, QStringLiteral("chart"));
  for (int i = 0; i < items.pictures.size(); ++i)
    paths << base + pictureSuffixes[i] + QStringLiteral(".png") << base + pictureSuffixes[i] + QStringLiteral(".svg");
  QList<QWidget*> tables;
  for (QAbstractItemView* t : items.tables) tables << t;
  const QStringList tableSuffixes = suffixes(tables, QStringLiteral("table"));
  for (int i = 0; i < tables.size(); ++i) paths << base + tableSuffixes[i] + QStringLiteral(".csv");
  return paths;
}

QStringList exportView(QWidget* view, const QString& basePath, QString* error) {
  QString message;
  const auto fail = [&](const QStringList& written) {
    for (const QString& p : written) QFile::remove(p);
    if (error) *error = message;
    return QStringList();
  };
  if (!view) {
    message = QStringLiteral("no view to export");
    return fail({});
  }
  const ExportItems items = exportItems(view);
  const QStringList paths = exportPaths(view, basePath);
  if (paths.isEmpty()) {
    message = QStringLiteral("nothing to export: the view shows no chart and no table");
    return fail({});
  }
  for (const QString& p : paths)
    if (QFileInfo::exists(p)) {
      message = QStringLiteral("%1 exists; export writes new files only: choose another name (nothing was written)")
                    .arg(p);
      return fail({});
    }
  QStringList written;
  int next = 0;
  for (QWidget* picture : items.pictures) {
    const QString png = paths[next++], svg = paths[next++];
    if (!writePng(picture, png, &message)) return fail(written);
    written << png;
    if (!writeSvg(picture, svg, QFileInfo(svg).completeBaseName(), &message)) return fail(written);
    written << svg;
  }
  for (QAbstractItemView* table : items.tables) {
    const QString csv = paths[next++];
    if (!writeCsv(table, csv, &message)) return fail(written);
    written << csv;
  }
  if (error) error->clear();
  return written;
}

}  // namespace moebench::gui
