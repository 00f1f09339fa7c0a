#include "models/modelcsv.h"

#include <QAbstractItemModel>
#include <QFileDevice>
#include <QIODevice>
#include <QStringList>

namespace moebench::gui {

QString csvField(const QString& text) {
  if (!text.contains(u',') && !text.contains(u'"') && !text.contains(u'\r') && !text.contains(u'\n')) return text;
  QString quoted = text;
  quoted.replace(QStringLiteral("\""), QStringLiteral("\"\""));
  return u'"' + quoted + u'"';
}

QString modelToCsv(const QAbstractItemModel& model) {
  const int rows = model.rowCount(), columns = model.columnCount();
  bool rowNames = false;
  for (int r = 0; r < rows && !rowNames; ++r) {
    const QString name = model.headerData(r, Qt::Vertical, Qt::DisplayRole).toString();
    rowNames = !name.isEmpty() && name != QString::number(r + 1);
  }
  const auto line = [](const QStringList& fields) {
    QStringList out;
    for (const QString& f : fields) out << csvField(f);
    return out.join(u',') + QStringLiteral("\r\n");
  };
  QStringList header;
  if (rowNames) header << QString();
  for (int c = 0; c < columns; ++c) header << model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
  QString csv = line(header);
  for (int r = 0; r < rows; ++r) {
    QStringList fields;
    if (rowNames) fields << model.headerData(r, Qt::Vertical, Qt::DisplayRole).toString();
    for (int c = 0; c < columns; ++c) fields << model.index(r, c).data(Qt::DisplayRole).toString();
    csv += line(fields);
  }
  return csv;
}

bool writeModelCsv(const QAbstractItemModel& model, QIODevice& device, QString* error) {
  const QByteArray bytes = modelToCsv(model).toUtf8();
  if (device.write(bytes) == bytes.size()) return true;
  if (error) {
    const auto* file = qobject_cast<const QFileDevice*>(&device);
    *error = file ? QStringLiteral("%1: %2").arg(file->fileName(), device.errorString()) : device.errorString();
  }
  return false;
}

}  // namespace moebench::gui
