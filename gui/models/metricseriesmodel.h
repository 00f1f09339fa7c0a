#pragma once
// MetricSeriesModel: one metric of several runs as a table for charts.
//   rows    = steps, the sorted union of the steps at which any selected run logged the metric
//   columns = the selected runs, in the order given
//   Qt::DisplayRole / Qt::UserRole = the value (double; NaN when NaN was logged), an invalid
//   QVariant where the run has no value at that step.
// headerData: horizontal = run name (UserRole: run id), vertical = step number (qint64).
#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "moebench/store/run_store.h"

class MetricSeriesModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  explicit MetricSeriesModel(QObject* parent = nullptr);
  ~MetricSeriesModel() override;

  // Reads the runs' `key` metric (model reset). Throws StoreError for an unknown run id, the
  // model unchanged. A null store or no runs empties the model.
  void setRuns(std::shared_ptr<moebench::RunStore> store, std::vector<int64_t> runIds, QString key);
  void clear();

  QString metricKey() const { return m_key; }
  const std::vector<int64_t>& runIds() const { return m_runIds; }
  int64_t stepAt(int row) const;        // -1 out of range
  int64_t runIdAt(int column) const;    // -1 out of range
  std::optional<double> valueAt(int row, int column) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<moebench::RunStore> m_store;
  QString m_key;
  std::vector<int64_t> m_runIds;
  std::vector<QString> m_runNames;
  std::vector<int64_t> m_steps;
  std::vector<std::vector<std::optional<double>>> m_values;  // [row][column]
};
