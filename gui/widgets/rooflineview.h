#pragma once
// RooflineView: the DDL-roofline (FasterMoE §3.3, Fig. 5) of the selected runs.
//   chart: x = R_CC (log scale), y = achieved GFLOP/s per worker (log scale, as roofline plots
//          are drawn: the ideal bound is then a polyline); per run a scatter series named after
//          the run holding its whole-run point (large marker, in the legend) and one named
//          "<run> (MoE layers)" holding its per-layer points (small, same colour, hidden from
//          the legend; Qt 6.4's scatter item ignores per-point sizes); per distinct peak P_w
//          the ideal curve P_w min(1, R) (solid) and the semi-ideal curve P_w R / (R + 1)
//          (dashed), named "ideal <P_w> GFLOP/s" / "semi-ideal <P_w> GFLOP/s" (not measured).
//   a spin box "peak GFLOP/s per worker" used for runs without a stored peak, a line saying
//   which runs use a stored and which an entered peak, and RooflineModel's table underneath.
// Numbers and definitions: models/rooflinemodel.h and moebench/perf/ddl_roofline.h.
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

#include "moebench/store/run_store.h"

class QChart;
class QChartView;
class QDoubleSpinBox;
class QLabel;
class QTableView;
class RooflineModel;

class RooflineView : public QWidget {
  Q_OBJECT

 public:
  explicit RooflineView(QWidget* parent = nullptr);
  ~RooflineView() override;

  // Shows the runs' points. Errors (StoreError, any std::exception) become the view's message.
  void setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);

  RooflineModel* model() const { return m_model; }
  QChart* chart() const;
  QDoubleSpinBox* peakSpinBox() const { return m_peakSpin; }
  QTableView* table() const { return m_table; }
  QString message() const;   // hint, error or reasons why runs have no point ("" when none)
  QString peakInfoText() const;  // which runs use a stored / an entered peak

 private:
  void rebuild();
  void updateTexts();

  RooflineModel* m_model = nullptr;
  QLabel* m_message = nullptr;
  QDoubleSpinBox* m_peakSpin = nullptr;
  QLabel* m_peakInfo = nullptr;
  QChartView* m_chartView = nullptr;
  QTableView* m_table = nullptr;
  QString m_error;
  bool m_empty = true;
};
