#pragma once
// Export of a view: its pictures as PNG and SVG, its tables as CSV (issue 35).
//   pictures  the view's QChartView, HeatmapView and TimelineCanvas descendants (or the view
//             itself when it is one), and any descendant whose property "exportPicture" is true
//             (how a custom-painted widget opts in), each rendered with QWidget::render at its
//             on-screen size: into a QImage (PNG; pixels = widget size x device pixel ratio,
//             white behind the widget) and into a QSvgGenerator (SVG; viewBox = widget size,
//             width and height in mm at 96 px per inch).
//             A chart inside a scroll area is drawn whole, not only its scrolled-in part.
//   tables    every QAbstractItemView descendant with a model (headers and combo box popups
//             excluded), as moebench::gui::modelToCsv writes it (models/modelcsv.h: header
//             row, the text each cell shows, RFC 4180 quoting, CRLF).
//   Only widgets the view shows count (QWidget::isVisibleTo: a stacked page not on top, a
//   hidden table are left out), except that a table on a QTabWidget page that is not the current
//   tab is exported too; pictures of no size are left out.
// Files: basePath with ".png"/".svg"/".csv" appended (a ".png", ".svg" or ".csv" basePath ends
// with is dropped first). With several pictures (or tables) each gets "-<name>" before the
// extension: the widget's objectName when set and unique among them, else "chart<i>" /
// "table<i>" (i from 1, in the order of the widget tree: depth first, a QStackedWidget's or a
// QTabWidget's pages in their index order).
// Never overwrites: when any of the files exists nothing is written and *error names it ("... 
// exists; export writes new files only: choose another name"); each file is also created with
// QIODevice::NewOnly, so one that appears meanwhile is not replaced either. On any failure the
// files this call wrote are removed, the list returned is empty and *error says why.
#include <QList>
#include <QString>
#include <QStringList>

class QAbstractItemView;
class QWidget;

namespace moebench::gui {

struct ExportItems {
  QList<QWidget*> pictures;
  QList<QAbstractItemView*> tables;
};
// What exportView would write for `view`, in order.
ExportItems exportItems(QWidget* view);
// The paths exportView would write, in order: per picture PNG then SVG, then the CSVs.
QStringList exportPaths(QWidget* view, const QString& basePath);
// Writes them; returns the paths written (empty on failure or when the view shows nothing to
// export, with *error set).
QStringList exportView(QWidget* view, const QString& basePath, QString* error = nullptr);

}  // namespace moebench::gui
