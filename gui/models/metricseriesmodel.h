#pragma once
// MetricSeriesModel: one metric of several runs as a table for charts.
//   rows    = steps, the sorted union of the steps at which any selected run logged the metric
//   columns = the selected runs, in the order given
//   Qt::DisplayRole / Qt::UserRole = the value (double; NaN when NaN was logged), an invalid
//   QVariant where the run has no value at that step.
// headerData: horizontal = run name (UserRole: run id), vertical = step number (qint64).
// read() does the store reads and touches no model (the live refresh calls it off the GUI
// thread); setData() shows what it read.
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

  struct Data {
    QString key;
    std::vector<int64_t> runIds;
    std::vector<QString> runNames;
    std::vector<bool> predicted;  // per run: tag "predicted" (a simulated run)
    std::vector<int64_t> steps;
    std::vector<std::vector<std::optional<double>>> values;  // [row][column]
  };
  // Reads the runs' `key` metric. Throws StoreError for an unknown run id. Thread-safe.
  static Data read(const moebench::RunStore& store, std::vector<int64_t> runIds, const QString& key);
  // Shows `data` (model reset).
  void setData(std::shared_ptr<moebench::RunStore> store, Data data);
  // read() and setData(); on a StoreError the model is unchanged. A null store or no runs empties
  // the model.
  void setRuns(std::shared_ptr<moebench::RunStore> store, std::vector<int64_t> runIds, QString key);
  void clear();
  bool isPredicted(int column) const;

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
  std::vector<bool> m_predicted;
  std::vector<int64_t> m_steps;
  std::vector<std::vector<std::optional<double>>> m_values;  // [row][column]
};
