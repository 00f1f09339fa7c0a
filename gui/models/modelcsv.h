#pragma once
// CSV of any table model, as the views export it (widgets/viewexport.h), RFC 4180:
//   - the first line is the header: headerData(column, Horizontal, DisplayRole) per column;
//   - then a line per top-level row: data(index, DisplayRole).toString() per column, the text
//     the table shows (units and formatting included: "20.60", "1.24x", "12.0%");
//   - when some row has a vertical header text other than its number (row + 1), as
//     PhaseBreakdownModel's "layer 0", that text is the first column, under an empty header;
//   - a field holding a comma, a double quote, CR or LF is enclosed in double quotes and its
//     double quotes doubled; every line ends with CRLF; UTF-8 (no byte-order mark).
#include <QString>

class QAbstractItemModel;
class QIODevice;

namespace moebench::gui {

QString csvField(const QString& text);  // quoted when needed, as above
QString modelToCsv(const QAbstractItemModel& model);
// Writes modelToCsv's text as UTF-8; false with *error set (naming the device's file when it is
// one) when the write fails.
bool writeModelCsv(const QAbstractItemModel& model, QIODevice& device, QString* error = nullptr);

}  // namespace moebench::gui
