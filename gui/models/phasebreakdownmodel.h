#pragma once
// PhaseBreakdownModel: where one run's step time goes, per MoE layer (issue: "per-phase
// breakdown bars (compute / comm / idle per layer)").
//
// Rows: "layer L" for each layer L that has spans (layer >= 0: the MoE blocks and, in runs of the
// task-graph runtime and of `moebench simulate`, the dense blocks too: both record the tasks of
// the same step graph with their layer), ascending; then "other"; then "whole step".
// The side-by-side Phases view holds one model per run (PhaseRunsModel lists their rows).
// Columns: compute ms, comm ms, idle ms, total ms.
// Every number is a mean per (step, rank) in milliseconds, over exactly the (step, rank) pairs
// summarize_run averages its phases over: those with a stream "host" span "step", the first such
// step left out as warm-up when more than 2 steps have one.
//   layer L     compute = sum of the stream "compute" spans with layer L (moe.experts,
//                         moe.experts_backward, ...)
//               comm    = sum of the category "comm" spans with layer L (summarize_run's
//                         layer_phases: moe.dispatch, moe.combine, their _grad twins,
//                         moe.counts, the gradient buckets labelled with L, and L's experts'
//                         all-reduce over their replicas, expert.allreduce)
//               idle    = empty (idle is only defined for the whole step)
//               total   = compute + comm
//   other       compute = summarize_run's phase compute - the layers' compute (embeddings,
//                         head, optimizer, gradient norm, ...; the dense blocks of runs recorded
//                         before the task-graph runtime, whose spans had no layer)
//               comm    = summarize_run's phase comm - the layers' comm (grad.wait: waiting for
//                         the gradient all-reduce, and any comm without a layer)
//               idle    = empty;  total = compute + comm
//   whole step  compute, comm, idle = summarize_run's phases (compute = forward + backward +
//               optimizer minus the compute.comm waits inside them; idle = step - compute -
//               comm); total = the mean step time (the stream "host" span "step")
// So the compute and comm of the layer rows and "other", plus the whole-step idle, add up to the
// step time. A layer's compute is the plain duration of its spans: when a layer's compute span
// contains a compute.comm wait, that time counts in both the layer's compute and comm, and
// "other" compute is smaller by it (the column sums stay exact).
// Roles: DisplayRole "%.3f" text; Qt::UserRole the value in ms (double); invalid where empty.
// Vertical header: the row label; horizontal header: the column name.
#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <memory>
#include <vector>

#include "moebench/store/run_store.h"

class PhaseBreakdownModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { ComputeColumn, CommColumn, IdleColumn, TotalColumn, ColumnCount };
  enum RowKind { LayerRow, OtherRow, WholeStepRow };

  explicit PhaseBreakdownModel(QObject* parent = nullptr);
  ~PhaseBreakdownModel() override;

  // Reads the run (model reset). Throws StoreError for an unknown run id (the model unchanged).
  // A run without "step" spans gives an empty model and emptyReason() says so. A null store
  // empties the model.
  void setRun(std::shared_ptr<moebench::RunStore> store, int64_t runId);
  struct Row {
    RowKind kind = LayerRow;
    int layer = -1;
    double ms[ColumnCount] = {};  // NaN = empty
  };
  // What setRun reads, without a model: the live refresh reads it on a worker thread.
  struct Data {
    int64_t runId = -1;
    std::vector<Row> rows;
    QString name, reason;
    int64_t samples = 0;
    bool warmup = false;
  };
  static Data read(const moebench::RunStore& store, int64_t runId);  // throws StoreError
  void setData(Data data);  // model reset
  void clear();

  int64_t runId() const { return m_runId; }  // -1 when empty
  QString runName() const { return m_runName; }
  // Why the model has no rows although a run is set ("run 'x' has no step spans..."); else empty.
  QString emptyReason() const { return m_emptyReason; }
  int64_t samples() const { return m_samples; }  // (step, rank) pairs averaged
  bool warmupExcluded() const { return m_warmupExcluded; }

  QString rowLabel(int row) const;          // "layer 0", "other", "whole step"; empty out of range
  RowKind rowKind(int row) const;
  int layerAt(int row) const;               // the layer of a LayerRow, else -1
  double valueMs(int row, int column) const;  // NaN where the cell is empty or out of range

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<Row> m_rows;
  int64_t m_runId = -1;
  QString m_runName, m_emptyReason;
  int64_t m_samples = 0;
  bool m_warmupExcluded = false;
};
