#include "models/phaserunsmodel.h"

#include <cmath>
#include <utility>

#include "models/phasebreakdownmodel.h"

PhaseRunsModel::PhaseRunsModel(QObject* parent) : QAbstractTableModel(parent) {}
PhaseRunsModel::~PhaseRunsModel() = default;

void PhaseRunsModel::setRuns(std::vector<Run> runs) {
  beginResetModel();
  m_runs = std::move(runs);
  m_rows.clear();
  for (size_t i = 0; i < m_runs.size(); ++i)
    if (m_runs[i].model)
      for (int r = 0; r < m_runs[i].model->rowCount(); ++r) m_rows.push_back({i, r});
  endResetModel();
}

int64_t PhaseRunsModel::runIdAt(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() ? m_runs[m_rows[size_t(row)].run].id : -1;
}

int PhaseRunsModel::sourceRowAt(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() ? m_rows[size_t(row)].source : -1;
}

int PhaseRunsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_rows.size()); }

int PhaseRunsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PhaseRunsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this || size_t(index.row()) >= m_rows.size()) return {};
  const Row& row = m_rows[size_t(index.row())];
  const Run& run = m_runs[row.run];
  switch (index.column()) {
    case RunColumn:
      if (role == Qt::DisplayRole) return run.label;
      if (role == Qt::DecorationRole || role == Qt::ForegroundRole) return run.colour;
      if (role == Qt::UserRole) return qint64(run.id);
      return {};
    case RowColumn:
      if (role == Qt::DisplayRole) return run.model->rowLabel(row.source);
      return {};
    default: {
      if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
      if (role != Qt::DisplayRole && role != Qt::UserRole) return {};
      const double v = run.model->valueMs(row.source, index.column() - ComputeColumn);
      if (std::isnan(v)) return {};
      if (role == Qt::UserRole) return v;
      return QString::number(v, 'f', 3);
    }
  }
}

QVariant PhaseRunsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section >= 0 && size_t(section) < m_rows.size() ? QVariant(section + 1) : QVariant();
  switch (section) {
    case RunColumn: return tr("Run");
    case RowColumn: return tr("Row");
    case ComputeColumn: return tr("compute ms");
    case CommColumn: return tr("comm ms");
    case IdleColumn: return tr("idle ms");
    case TotalColumn: return tr("total ms");
    default: return {};
  }
}
