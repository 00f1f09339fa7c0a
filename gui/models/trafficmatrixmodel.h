#pragma once
// TrafficMatrixModel: the bytes one run's ranks sent to each other, as TrafficMeter counted them
// (issue: "traffic heatmap (rank x rank bytes, intra vs inter marked)").
// Rows = sending rank, columns = receiving rank (headers "rank N"); N = the larger of the run's
// rank count and the highest rank or peer in its traffic rows + 1.
// Step filter (setStep):
//   kAllSteps (-1): cell = total bytes rank -> peer over the run / S, the mean per step, with
//     S = summarize_run's per-step divisor: max(the run's steps (steps with a "loss" metric, else
//     with any metric), steps with traffic rows). So the cells of each link class add up to
//     summarize_run's bytes_intra_per_step / bytes_inter_per_step.
//   step s: cell = bytes rank -> peer recorded in step s.
// Roles: DisplayRole human bytes (decimal units, "1.23 kB"; empty on the diagonal);
// Qt::UserRole raw bytes (double; 0 on the diagonal and for pairs without rows);
// Qt::ToolTipRole "rank 0 -> rank 3: 1234 bytes (inter-node)"; HeatmapRoles::IntensityRole =
// cell / scaleMax() (0..1): the largest cell, or a scale shared with other runs (setScaleMax); HeatmapRoles::LinkRole = the pair's link class from the run's
// traffic rows ("intra_node" / "inter_node"; "" on the diagonal and for pairs that never
// exchanged bytes).
#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/heatmaproles.h"
#include "moebench/store/run_store.h"

class TrafficMatrixModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  static constexpr int64_t kAllSteps = -1;

  explicit TrafficMatrixModel(QObject* parent = nullptr);
  ~TrafficMatrixModel() override;

  // Reads the run (model reset) and shows `step`. Throws StoreError for an unknown run id and
  // std::invalid_argument for a step without traffic rows (model unchanged). A null store
  // empties the model.
  void setRun(std::shared_ptr<moebench::RunStore> store, int64_t runId, int64_t step = kAllSteps);
  // kAllSteps or one of steps(); std::invalid_argument otherwise ("run 'x' has no traffic rows
  // in step 9"), the model unchanged. Emits dataChanged over all cells.
  void setStep(int64_t step);
  void clear();

  int64_t runId() const { return m_runId; }
  QString runName() const { return m_runName; }
  int64_t step() const { return m_step; }
  const std::vector<int64_t>& steps() const { return m_steps; }  // steps with traffic rows
  int64_t stepsPerMean() const { return m_divisor; }             // S above
  int ranks() const { return m_ranks; }

  double bytesAt(int rank, int peer) const;     // the cell under the current filter; 0 out of range
  QString linkAt(int rank, int peer) const;     // "intra_node" / "inter_node" / ""
  double intraBytes() const;                    // sum of the intra-node cells, current filter
  double interBytes() const;                    // sum of the inter-node cells, current filter
  double maxBytes() const { return m_max; }   // the largest cell under the current filter
  // A colour scale shared with other runs' models (> 0): IntensityRole = cell / max, clamped to
  // 1, and headerData(0, Horizontal, ScaleTextRole) its text; 0 (the default) = maxBytes().
  // Emits dataChanged over all cells. Kept across setRun / setStep.
  void setScaleMax(double max);
  double scaleMax() const { return m_scale > 0 ? m_scale : m_max; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<double> cellsFor(int64_t step) const;

  std::shared_ptr<moebench::RunStore> m_store;
  int64_t m_runId = -1;
  QString m_runName;
  int64_t m_step = kAllSteps;
  std::vector<int64_t> m_steps;
  int64_t m_divisor = 0;
  int m_ranks = 0;
  std::vector<double> m_meanCells;  // [rank * ranks + peer], all steps
  std::vector<double> m_cells;      // current filter
  std::vector<std::string> m_links;  // [rank * ranks + peer]
  double m_max = 0;
  double m_scale = 0;
};
