#pragma once
// ExpertLoadView: the expert-load tab. A HeatmapView over ExpertLoadModel (MoE layer x expert:
// tokens routed, summed over the source ranks), an "all steps" check (checked: tokens summed over
// every step) and a slider over the steps with routing rows (one step; enabled when "all steps"
// is unchecked), and a line per layer with its imbalance: the busiest expert's tokens / the mean
// over the layer's experts (1.00 = perfectly balanced), for the shown step(s). For a run of the
// fastermoe strategy with shadowing, the heatmap outlines the shadowed experts' cells
// (ExpertLoadModel's MarkedRole) and a line lists them per layer ("layer 0: expert 3 in 4 of 6
// steps" for all steps, "layer 0: experts 1, 3" for one); hidden for runs without shadowing.
// Run chooser, hints and errors: SingleRunView.
#include <cstdint>

#include "singlerunview.h"

class QCheckBox;
class QSlider;
class HeatmapView;
class ExpertLoadModel;

class ExpertLoadView : public SingleRunView {
  Q_OBJECT

 public:
  explicit ExpertLoadView(QWidget* parent = nullptr);
  ~ExpertLoadView() override;

  // ExpertLoadModel::kAllSteps or a step with routing rows (moves the slider / the check);
  // false when the run has no such step.
  bool selectStep(int64_t step);
  int64_t currentStep() const;  // the model's step
  QString imbalanceText() const;
  QString shadowedText() const;  // "" when the run has no shadowing

  ExpertLoadModel* model() const { return m_model; }
  HeatmapView* heatmap() const { return m_heatmap; }
  QSlider* slider() const { return m_slider; }
  QCheckBox* allStepsCheck() const { return m_allSteps; }

 protected:
  void loadRun(int64_t runId) override;
  void clearRun() override;

 private:
  void applyStep();  // from the check and the slider to the model
  void updateLabels();

  ExpertLoadModel* m_model = nullptr;
  HeatmapView* m_heatmap = nullptr;
  QCheckBox* m_allSteps = nullptr;
  QSlider* m_slider = nullptr;
  QLabel* m_stepLabel = nullptr;
  QLabel* m_imbalance = nullptr;
  QLabel* m_shadowed = nullptr;
};
