#include "models/runfilterproxy.h"

#include "models/runlistmodel.h"

RunFilterProxy::RunFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(Qt::UserRole);
  setRecursiveFilteringEnabled(true);
}

void RunFilterProxy::setRunModel(RunListModel* model) {
  m_runs = model;
  setSourceModel(model);
}

QString RunFilterProxy::setQuery(const QString& text) {
  moebench::gui::RunQuery q(text);
  if (!q.isValid()) return q.error();
  m_query = std::move(q);
  invalidateFilter();
  return {};
}

bool RunFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
  if (!m_runs || m_query.isEmpty()) return true;
  const QModelIndex idx = m_runs->index(sourceRow, 0, sourceParent);
  const RunListModel::RunRow* row = m_runs->runRowAt(idx);
  if (!row) return false;  // an experiment: shown when one of its runs is (recursive filtering)
  return m_query.matches(sourceParent.data().toString(), *row);
}
