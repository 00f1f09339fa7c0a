#pragma once
// RooflineModel: the DDL-roofline points (FasterMoE §3.3, Fig. 5) of the selected runs as a
// table. Rows, in the runs' order, per run by layer (MoE layers ascending, then the whole run
// "all"), and per layer one row of each kind the run has (KindColumn, RowKind):
//   Measured   moebench/perf/ddl_roofline.h from the run's spans and routing
//   Predicted  moebench/perf/ddl_prediction.h: FasterMoE eq. 1-4 for the same run and layer
//              (the fastermoe strategy's stored predictions, else eq. 1-2 on the run's routing
//              and cluster model), right under the measured row of its layer
//   Simulated  ddl_roofline.h on a run the simulator wrote (tag "predicted"): its spans are
//              predicted, so its point is "simulated (predicted)"; such runs get no Predicted
//              row (they store no routing rows to evaluate eq. 1-2 on)
// A second row kind (rather than extra columns) because a predicted point has every quantity a
// measured one has (R_CC, P-bar, latencies, the curves at its R_CC, a reason when missing).
// Columns:
//   R_CC         = Lat_comp / Lat_comm (eq. 3)
//   achieved     = P-bar, GFLOP/s per worker (eq. 4): measured, or predicted on Predicted and
//                  Simulated rows
//   Lat_* ms     = the step means of the per-step latencies, milliseconds (measured: max over
//                  ranks of the step's totals; predicted: the step's 3 rounds of eq. 1 and 4 of
//                  eq. 2, Lat_e2e their sum)
//   peak         = P_w, GFLOP/s per worker: the run's stored param "peak_gflops" when it has one,
//                  else the value entered with setEnteredPeak (> 0), else none
//   ideal        = P_w min(1, R_CC) (eq. 5), semi-ideal = P_w R_CC / (R_CC + 1) (eq. 6): the
//                  curves' values at the row's R_CC (not measured)
//   % of ideal   = 100 * achieved / ideal
//   note         = why a row has no point, or why it has no curves (no peak, malformed peak)
// Rows without a point (missing spans, routing or comm) keep their reason in the note column
// and leave the number cells empty.
// Roles: Qt::DisplayRole = text; Qt::UserRole = the raw value (double, qint64 run id for the run
// column, int layer (-1 = whole run) for the layer column, int RowKind for the kind column;
// invalid where there is none); Qt::ToolTipRole = the note, the peak's source, or for the kind
// column where the numbers come from.
#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "moebench/perf/ddl_prediction.h"
#include "moebench/perf/ddl_roofline.h"
#include "moebench/store/run_store.h"

class RooflineModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    RunColumn,
    LayerColumn,
    KindColumn,
    RccColumn,
    AchievedColumn,
    LatCompColumn,
    LatCommColumn,
    LatE2eColumn,
    PeakColumn,
    IdealColumn,
    SemiIdealColumn,
    PercentOfIdealColumn,
    NoteColumn,
    ColumnCount
  };
  enum class RowKind { Measured = 0, Predicted = 1, Simulated = 2 };
  enum class PeakSource { Stored, Entered, None };
  // The peak one run's curves use.
  struct RunPeak {
    int64_t runId = 0;
    QString runName;
    std::optional<double> gflops;  // the peak used; none when neither stored nor entered
    PeakSource source = PeakSource::None;
    QString sourceText;            // "stored: bench gemm ..." / "stored: param peak_gflops" / "entered"
    QString error;                 // a malformed stored value (then the entered one is used)
    bool hasPoints = false;        // the run has at least one point (of any kind)
    bool simulated = false;        // the simulator wrote the run (tag "predicted")
    bool emulated = false;         // measured under the link emulator (tag "emulated")
  };
  // A predicted row and the measured (or simulated) row of the same run and layer, both with a
  // point: the view draws an arrow from the first to the second.
  struct RowPair {
    int predicted = -1, measured = -1;
  };

  explicit RooflineModel(QObject* parent = nullptr);
  ~RooflineModel() override;

  // Computes the points of the runs (model reset). Throws StoreError for an unknown run id, the
  // model unchanged. A null store or no runs empties the model.
  void setRuns(std::shared_ptr<moebench::RunStore> store, std::vector<int64_t> runIds);
  void clear();

  // The peak (GFLOP/s per worker) used for runs without a valid stored one; <= 0 = none.
  void setEnteredPeak(double gflops);
  double enteredPeak() const { return m_enteredPeak; }

  const std::vector<int64_t>& runIds() const { return m_runIds; }
  const std::vector<moebench::DdlPoint>& points() const { return m_points; }  // one per row
  const moebench::DdlPoint* pointAt(int row) const;                           // null out of range
  RowKind kindAt(int row) const;                                              // Measured out of range
  static QString kindText(RowKind kind);  // "measured", "predicted", "simulated (predicted)"
  // kindText of the row, "emulated (measured)" for a measured row of an emulated run.
  QString rowKindText(int row) const;
  // Predicted rows: the steps whose latencies are fastermoe's stored predictions / were computed
  // from the routing (DdlPredictedPoint); 0 for other rows.
  int64_t stepsFromMetricsAt(int row) const;
  int64_t stepsFromRoutingAt(int row) const;
  std::vector<RowPair> predictedMeasuredPairs() const;
  const std::vector<RunPeak>& runPeaks() const { return m_peaks; }            // in the runs' order
  const RunPeak* peakOf(int64_t runId) const;                                 // null: not selected
  std::optional<double> peakAt(int row) const;        // the peak the row's run uses
  std::optional<double> idealAt(int row) const;       // eq. 5 at the row's R_CC
  std::optional<double> semiIdealAt(int row) const;   // eq. 6 at the row's R_CC

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  // The peak of some run changed (entered value): the curves must be redrawn.
  void peaksChanged();

 private:
  void resolvePeaks();
  QString noteAt(int row) const;
  QString kindToolTip(int row) const;
  QVariant rawValue(int row, int column) const;

  std::vector<int64_t> m_runIds;
  std::vector<moebench::DdlPoint> m_points;  // one per row
  struct RowInfo {
    RowKind kind = RowKind::Measured;
    int64_t fromMetrics = 0, fromRouting = 0;
  };
  std::vector<RowInfo> m_rows;               // one per row
  struct StoredPeak {
    std::optional<double> gflops;
    QString source, error;
  };
  std::vector<StoredPeak> m_stored;  // per run, in the runs' order
  std::vector<RunPeak> m_peaks;
  double m_enteredPeak = 0;
};
