#pragma once
// PhaseRunsModel: the exact numbers under the Phases chart when several runs are shown side by
// side: every row of each run's PhaseBreakdownModel, run after run (in the order given).
// Columns: Run ("#3 hier", Qt::DecorationRole / Qt::ForegroundRole the run's colour), Row
// ("layer 0", "other", "whole step"), then the PhaseBreakdownModel's columns (compute ms, comm
// ms, idle ms, total ms) with its roles: DisplayRole "%.3f", Qt::UserRole the value in ms (double),
// invalid where the cell is empty.
// The models are not owned; setRuns resets this model, and so must a change of any of them (call
// setRuns again).
#include <QAbstractTableModel>
#include <QColor>
#include <QString>

#include <cstdint>
#include <vector>

class PhaseBreakdownModel;

class PhaseRunsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { RunColumn, RowColumn, ComputeColumn, CommColumn, IdleColumn, TotalColumn, ColumnCount };
  struct Run {
    int64_t id = -1;
    QString label;  // "#3 hier"
    QColor colour;
    const PhaseBreakdownModel* model = nullptr;  // rows read from here; nullptr = none
  };

  explicit PhaseRunsModel(QObject* parent = nullptr);
  ~PhaseRunsModel() override;

  void setRuns(std::vector<Run> runs);
  void clear() { setRuns({}); }

  int64_t runIdAt(int row) const;  // -1 out of range
  int sourceRowAt(int row) const;  // the row in that run's PhaseBreakdownModel; -1 out of range

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    size_t run;
    int source;
  };
  std::vector<Run> m_runs;
  std::vector<Row> m_rows;
};
