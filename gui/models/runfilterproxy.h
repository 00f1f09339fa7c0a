#pragma once
// RunFilterProxy: the run browser's sort and filter over a RunListModel. Sorting by Qt::UserRole
// (numbers as numbers); filtering by a RunQuery (runquery.h): an experiment row shows when any of
// its runs matches. An invalid query leaves the last valid one in force.
#include <QSortFilterProxyModel>

#include "models/runquery.h"

class RunListModel;

class RunFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit RunFilterProxy(QObject* parent = nullptr);
  void setRunModel(RunListModel* model);
  // Returns the query's error ("" when it parsed); a valid query filters at once.
  QString setQuery(const QString& text);
  const moebench::gui::RunQuery& query() const { return m_query; }

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

 private:
  RunListModel* m_runs = nullptr;
  moebench::gui::RunQuery m_query;
};
