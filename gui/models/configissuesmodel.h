#pragma once
// ConfigIssuesModel: the problems the core's validator found in a config (ConfigIssue: file,
// line, key, message), one row each, in the validator's order (by line). Columns Line (empty
// when the issue is not tied to a line, e.g. a default value that conflicts), Key, Message.
// LineRole: the 1-based line (0 = none), for moving the editor's cursor to it.
#include <QAbstractTableModel>

#include <vector>

#include "moebench/config/config_loader.h"

class ConfigIssuesModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { LineColumn, KeyColumn, MessageColumn, ColumnCount };
  enum Role { LineRole = Qt::UserRole + 1 };

  explicit ConfigIssuesModel(QObject* parent = nullptr);

  void setIssues(const std::vector<moebench::ConfigIssue>& issues);  // model reset
  const std::vector<moebench::ConfigIssue>& issues() const { return m_issues; }
  int lineAt(int row) const;  // 0 when out of range or not tied to a line

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

 private:
  std::vector<moebench::ConfigIssue> m_issues;
};
