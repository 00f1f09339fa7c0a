#pragma once
// RooflineView: the DDL-roofline (FasterMoE §3.3, Fig. 5) of the selected runs.
//   chart: x = R_CC (log scale), y = GFLOP/s per worker P-bar (log scale, as roofline plots
//          are drawn: the ideal bound is then a polyline). Per run and point kind
//          (RooflineModel::RowKind) a scatter series holding its whole-run point (large marker,
//          in the legend) and one named "<name> (MoE layers)" holding its per-layer points
//          (small, same colour and shape, hidden from the legend; Qt 6.4's scatter item ignores
//          per-point sizes), where <name> is
//            "<run>"                         measured points: circles in the run's colour
//            "<run> simulated (predicted)"   a run the simulator wrote: diamonds
//            "<run> predicted"               FasterMoE eq. 1-4 for the run: triangles, light fill
//          (a series with no point is left out); per layer with both a predicted and a measured
//          (or simulated) point an arrow from the predicted to the measured one: a line series
//          "<run> predicted -> measured, layer L" / "..., whole run" (hidden from the legend)
//          whose points are moebench::gui::arrowPolyline's (models/rooflinegeometry.h: shaft
//          from marker edge to marker edge and a two-stroke head, kept the same size in pixels
//          when the plot area changes; when the markers overlap, a plain segment between the
//          two points);
//          per distinct peak P_w the ideal curve P_w min(1, R) (solid) and the semi-ideal curve
//          P_w R / (R + 1) (dashed), named "ideal <P_w> GFLOP/s" / "semi-ideal <P_w> GFLOP/s".
//   a spin box "peak GFLOP/s per worker" used for runs without a stored peak, a line saying
//   which runs use a stored and which an entered peak, and RooflineModel's table underneath.
// Numbers and definitions: models/rooflinemodel.h and moebench/perf/ddl_roofline.h.
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

#include "models/rooflinegeometry.h"
#include "moebench/store/run_store.h"

class QChart;
class ChartLegendList;
class QChartView;
class QDoubleSpinBox;
class QLabel;
class QLineSeries;
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
  ChartLegendList* legendList() const { return m_legend; }
  QDoubleSpinBox* peakSpinBox() const { return m_peakSpin; }
  QTableView* table() const { return m_table; }
  QString message() const;   // hint, error or reasons why runs have no point ("" when none)
  QString peakInfoText() const;  // which runs use a stored / an entered peak
  int arrowCount() const;        // predicted -> measured arrows drawn

 private:
  void rebuild();
  void updateTexts();
  void updateArrows();  // the arrows' heads for the current plot area

  struct Arrow {
    QLineSeries* series = nullptr;  // owned by the chart
    QPointF from, to;               // predicted, measured (R_CC, GFLOP/s)
    double fromGap = 0, toGap = 0;  // pixels the arrow stays away from them (the markers)
  };
  std::vector<Arrow> m_arrows;
  moebench::gui::LogPlotFrame m_frame;

  RooflineModel* m_model = nullptr;
  QLabel* m_message = nullptr;
  QDoubleSpinBox* m_peakSpin = nullptr;
  QLabel* m_peakInfo = nullptr;
  QChartView* m_chartView = nullptr;
  ChartLegendList* m_legend = nullptr;  // the legend, whole run names (beside the chart)
  QTableView* m_table = nullptr;
  QString m_error;
  bool m_empty = true;
};
