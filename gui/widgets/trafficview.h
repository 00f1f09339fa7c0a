#pragma once
// TrafficView: the traffic tab. A HeatmapView over TrafficMatrixModel (rank x rank bytes as
// TrafficMeter counted them; inter-node cells hatched), a step chooser ("all steps (mean per
// step)" plus every step with traffic rows) and a totals line: the intra-node and inter-node
// bytes of the shown filter (sums of the cells, so per step for "all steps").
// Run chooser, hints and errors: SingleRunView.
#include <cstdint>

#include "singlerunview.h"

class HeatmapView;
class TrafficMatrixModel;

class TrafficView : public SingleRunView {
  Q_OBJECT

 public:
  explicit TrafficView(QWidget* parent = nullptr);
  ~TrafficView() override;

  // TrafficMatrixModel::kAllSteps or a step with traffic rows; false when the chooser lacks it.
  bool selectStep(int64_t step);
  int64_t currentStep() const;
  QString totalsText() const;

  TrafficMatrixModel* model() const { return m_model; }
  HeatmapView* heatmap() const { return m_heatmap; }
  QComboBox* stepChooser() const { return m_stepCombo; }

 protected:
  void loadRun(int64_t runId) override;
  void clearRun() override;

 private:
  void updateTotals();

  TrafficMatrixModel* m_model = nullptr;
  HeatmapView* m_heatmap = nullptr;
  QComboBox* m_stepCombo = nullptr;
  QLabel* m_totals = nullptr;
};
