#include "models/configissuesmodel.h"

ConfigIssuesModel::ConfigIssuesModel(QObject* parent) : QAbstractTableModel(parent) {}

void ConfigIssuesModel::setIssues(const std::vector<moebench::ConfigIssue>& issues) {
  beginResetModel();
  m_issues = issues;
  endResetModel();
}

int ConfigIssuesModel::lineAt(int row) const {
  return row >= 0 && row < int(m_issues.size()) ? m_issues[size_t(row)].line : 0;
}

int ConfigIssuesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_issues.size());
}

int ConfigIssuesModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant ConfigIssuesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const moebench::ConfigIssue& issue = m_issues[size_t(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case LineColumn: return issue.line > 0 ? QVariant(issue.line) : QVariant(QString());
        case KeyColumn: return QString::fromStdString(issue.key);
        case MessageColumn: return QString::fromStdString(issue.message);
      }
      return {};
    case Qt::ToolTipRole: return QString::fromStdString(issue.to_string());
    case LineRole: return issue.line;
  }
  return {};
}

QVariant ConfigIssuesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case LineColumn: return tr("Line");
    case KeyColumn: return tr("Key");
    case MessageColumn: return tr("Problem");
  }
  return {};
}

Qt::ItemFlags ConfigIssuesModel::flags(const QModelIndex& index) const {
  if (!index.isValid() || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return Qt::NoItemFlags;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
}
