#pragma once
// ExpertLoadView: the expert-load tab. Small multiples: a panel per selected run (RunPanelsView),
// each a HeatmapView over the run's own ExpertLoadModel (MoE layer x expert: tokens routed,
// summed over the source ranks), a line per layer with its imbalance (the busiest expert's tokens
// / the mean over the layer's experts; 1.00 = perfectly balanced) and, for a run of the fastermoe
// strategy with shadowing, a line listing the shadowed experts per layer ("layer 0: expert 3 in 4
// of 6 steps" for all steps, "layer 0: experts 1, 3" for one; the heatmap outlines their cells,
// ExpertLoadModel's MarkedRole; hidden for runs without shadowing).
// One step control for all panels: an "all steps" check (checked: tokens summed over each run's
// steps) and a slider over every step any shown run has routing rows in (one step; enabled when
// "all steps" is unchecked); a panel whose run lacks the step says so in place of its heatmap.
// One colour scale for all panels (scaleMax(): the largest cell over the panels that show one).
#include <QString>

#include <cstdint>
#include <map>
#include <vector>

#include "runpanelsview.h"

class QCheckBox;
class QSlider;
class HeatmapView;
class ExpertLoadModel;

class ExpertLoadView : public RunPanelsView {
  Q_OBJECT

 public:
  explicit ExpertLoadView(QWidget* parent = nullptr);
  ~ExpertLoadView() override;

  // ExpertLoadModel::kAllSteps or a step of steps() (moves the slider / the check); false
  // otherwise.
  bool selectStep(int64_t step);
  int64_t currentStep() const;
  const std::vector<int64_t>& steps() const { return m_steps; }  // the slider's steps
  int64_t scaleMax() const { return m_scaleMax; }

  ExpertLoadModel* model(int64_t runId) const;  // nullptr for a run not selected
  HeatmapView* heatmap(int64_t runId) const;
  HeatmapView* heatmap() const;  // the first shown panel's heatmap (nullptr when none)
  QString imbalanceText(int64_t runId) const;
  QString shadowedText(int64_t runId) const;  // "" when the run has no shadowing
  QLabel* shadowedLabel(int64_t runId) const;
  QString stepText() const;                   // "all 6 steps summed" / "step 3 (3 of 6)"
  QSlider* slider() const { return m_slider; }
  QCheckBox* allStepsCheck() const { return m_allSteps; }

 protected:
  void loadRuns() override;
  void clearRuns() override;
  void shownRunsChanged() override;

 private:
  struct Panel {
    ExpertLoadModel* model = nullptr;
    HeatmapView* heatmap = nullptr;
    QLabel* imbalance = nullptr;
    QLabel* shadowed = nullptr;
    bool ok = false;  // the run has routing rows
  };
  void rebuildSteps(int64_t keep);
  void applyStep();  // from the check and the slider to every panel, then the shared scale
  void updateLabels(Panel& p);

  std::map<int64_t, Panel> m_panels;
  std::vector<int64_t> m_steps;
  QCheckBox* m_allSteps = nullptr;
  QSlider* m_slider = nullptr;
  QLabel* m_stepLabel = nullptr;
  int64_t m_step = -1;  // ExpertLoadModel::kAllSteps or the slider's step
  int64_t m_scaleMax = 0;
};
