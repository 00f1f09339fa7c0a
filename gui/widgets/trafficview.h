#pragma once
// TrafficView: the traffic tab. Small multiples: a panel per selected run (RunPanelsView), each
// a HeatmapView over the run's own TrafficMatrixModel (rank x rank bytes as TrafficMeter counted
// them; inter-node cells hatched) and a totals line (the intra-node and inter-node bytes of the
// shown filter: sums of the cells, so per step for "all steps").
// One step chooser for all panels: "all steps (mean per step)" plus every step any shown run has
// traffic rows in; a panel whose run lacks the chosen step says so in place of its heatmap.
// One colour scale for all panels: every model's scale is the largest cell over the panels that
// show a heatmap (scaleMax()), so equal colours mean equal bytes across runs; the line under the
// panels names it. A run without traffic, or that cannot be read, says so in its panel.
#include <QString>

#include <cstdint>
#include <map>
#include <vector>

#include "runpanelsview.h"

class QComboBox;
class HeatmapView;
class TrafficMatrixModel;

class TrafficView : public RunPanelsView {
  Q_OBJECT

 public:
  explicit TrafficView(QWidget* parent = nullptr);
  ~TrafficView() override;

  // TrafficMatrixModel::kAllSteps or a step in the chooser; false when the chooser lacks it.
  bool selectStep(int64_t step);
  int64_t currentStep() const;
  std::vector<int64_t> steps() const;  // the chooser's steps (without kAllSteps)
  double scaleMax() const { return m_scaleMax; }  // the shared scale's top, bytes; 0 without cells

  TrafficMatrixModel* model(int64_t runId) const;  // nullptr for a run that could not be read
  HeatmapView* heatmap(int64_t runId) const;
  HeatmapView* heatmap() const;  // the first shown panel's heatmap (nullptr when none)
  QString totalsText(int64_t runId) const;
  QComboBox* stepChooser() const { return m_stepCombo; }

 protected:
  void loadRuns() override;
  void clearRuns() override;
  void shownRunsChanged() override;

 private:
  struct Panel {
    TrafficMatrixModel* model = nullptr;
    HeatmapView* heatmap = nullptr;
    QLabel* totals = nullptr;
    bool ok = false;  // the run has traffic rows
  };
  void rebuildSteps();
  void applyStep();  // the chooser's step to every panel, then the shared scale
  void updateTotals(Panel& p);

  std::map<int64_t, Panel> m_panels;
  QComboBox* m_stepCombo = nullptr;
  double m_scaleMax = 0;
};
