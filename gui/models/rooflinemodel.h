#pragma once
// RooflineModel: the DDL-roofline points (FasterMoE §3.3, Fig. 5) of the selected runs as a
// table, one row per MoE layer of each run and one whole-run row ("all"), in the runs' order
// (layers ascending, then "all"). The numbers and their definitions are those of
// moebench/perf/ddl_roofline.h (measured from spans and routing):
//   R_CC         = Lat_comp / Lat_comm (eq. 3)
//   achieved     = P-bar, GFLOP/s per worker (eq. 4)
//   Lat_* ms     = the step means of the per-step latencies (max over ranks), milliseconds
//   peak         = P_w, GFLOP/s per worker: the run's stored param "peak_gflops" when it has one,
//                  else the value entered with setEnteredPeak (> 0), else none
//   ideal        = P_w min(1, R_CC) (eq. 5), semi-ideal = P_w R_CC / (R_CC + 1) (eq. 6): the
//                  curves' values at the point's R_CC (not measured)
//   % of ideal   = 100 * achieved / ideal
//   note         = why a row has no point, or why it has no curves (no peak, malformed peak)
// Rows without a point (missing spans, routing or comm) keep their reason in the note column
// and leave the number cells empty.
// Roles: Qt::DisplayRole = text; Qt::UserRole = the raw value (double, qint64 run id for the run
// column, int layer (-1 = whole run) for the layer column; invalid where there is none);
// Qt::ToolTipRole = the note or the peak's source.
#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "moebench/perf/ddl_roofline.h"
#include "moebench/store/run_store.h"

class RooflineModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    RunColumn,
    LayerColumn,
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
  enum class PeakSource { Stored, Entered, None };
  // The peak one run's curves use.
  struct RunPeak {
    int64_t runId = 0;
    QString runName;
    std::optional<double> gflops;  // the peak used; none when neither stored nor entered
    PeakSource source = PeakSource::None;
    QString sourceText;            // "stored: bench gemm ..." / "stored: param peak_gflops" / "entered"
    QString error;                 // a malformed stored value (then the entered one is used)
    bool hasPoints = false;        // the run has at least one point
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
  QVariant rawValue(int row, int column) const;

  std::vector<int64_t> m_runIds;
  std::vector<moebench::DdlPoint> m_points;
  struct StoredPeak {
    std::optional<double> gflops;
    QString source, error;
  };
  std::vector<StoredPeak> m_stored;  // per run, in the runs' order
  std::vector<RunPeak> m_peaks;
  double m_enteredPeak = 0;
};
