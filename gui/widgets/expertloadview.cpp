#include "expertloadview.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>
#include <set>

#include "heatmapview.h"
#include "models/expertloadmodel.h"
#include "runpanel.h"

ExpertLoadView::ExpertLoadView(QWidget* parent)
    : RunPanelsView(tr("Select runs in the run browser to see how many tokens each expert received."), true,
                    parent) {
  m_allSteps = new QCheckBox(tr("all steps"), this);
  m_allSteps->setObjectName("allSteps");
  m_allSteps->setChecked(true);
  m_slider = new QSlider(Qt::Horizontal, this);
  m_slider->setObjectName("stepSlider");
  m_slider->setMinimumWidth(160);
  m_slider->setEnabled(false);
  m_stepLabel = new QLabel(this);
  m_stepLabel->setObjectName("stepLabel");
  toolbar()->addWidget(new QLabel(tr("Step (all panels):"), this));
  toolbar()->addWidget(m_allSteps);
  toolbar()->addWidget(m_slider, 1);
  toolbar()->addWidget(m_stepLabel);
  setCaption(tr("Tokens routed to each expert (rows = MoE layers), summed over the source ranks; one panel per run."));
  connect(m_allSteps, &QCheckBox::toggled, this, [this] { guarded([this] { applyStep(); }); });
  connect(m_slider, &QSlider::valueChanged, this, [this] { guarded([this] { applyStep(); }); });
}

ExpertLoadView::~ExpertLoadView() = default;

void ExpertLoadView::clearRuns() {
  for (auto& [id, p] : m_panels) delete p.model;
  m_panels.clear();
  m_scaleMax = 0;
  setScaleText(QString());
}

void ExpertLoadView::loadRuns() {
  for (int64_t id : runs()) {
    RunPanel* frame = panel(id);
    Panel p;
    p.model = new ExpertLoadModel(this);
    auto* content = new QWidget;
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(0, 0, 0, 0);
    p.heatmap = new HeatmapView(content);
    p.heatmap->setObjectName(QStringLiteral("heatmap-run%1").arg(id));
    p.heatmap->setModel(p.model);
    p.imbalance = new QLabel(content);
    p.imbalance->setObjectName("imbalance");
    p.imbalance->setWordWrap(true);
    p.imbalance->setTextInteractionFlags(Qt::TextSelectableByMouse);
    p.shadowed = new QLabel(content);
    p.shadowed->setObjectName("shadowed");
    p.shadowed->setWordWrap(true);
    p.shadowed->setTextInteractionFlags(Qt::TextSelectableByMouse);
    p.shadowed->hide();
    layout->addWidget(p.heatmap, 1);
    layout->addWidget(p.imbalance);
    layout->addWidget(p.shadowed);
    frame->setContent(content);
    try {
      p.model->setRun(store(), id);
      p.ok = p.model->rowCount() > 0;
      if (!p.ok) frame->setMessage(p.model->emptyReason());
    } catch (const std::exception& e) {
      p.model->clear();
      frame->setMessage(tr("Cannot show run %1: %2").arg(id).arg(QString::fromUtf8(e.what())));
    }
    m_panels[id] = p;
  }
  rebuildSteps(m_step);
  applyStep();
}

void ExpertLoadView::shownRunsChanged() {
  rebuildSteps(m_step);
  applyStep();
}

void ExpertLoadView::rebuildSteps(int64_t keep) {
  std::set<int64_t> steps;
  for (int64_t id : shownRuns())
    if (const auto it = m_panels.find(id); it != m_panels.end() && it->second.ok)
      steps.insert(it->second.model->steps().begin(), it->second.model->steps().end());
  m_steps.assign(steps.begin(), steps.end());
  const QSignalBlocker b1(m_slider), b2(m_allSteps);
  m_slider->setRange(0, std::max(0, int(m_steps.size()) - 1));
  const auto it = std::find(m_steps.begin(), m_steps.end(), keep);
  if (keep != ExpertLoadModel::kAllSteps && it != m_steps.end()) {
    m_allSteps->setChecked(false);
    m_slider->setValue(int(it - m_steps.begin()));
  } else {
    m_allSteps->setChecked(true);
  }
}

void ExpertLoadView::applyStep() {
  const bool all = m_allSteps->isChecked() || m_steps.empty();
  m_slider->setEnabled(!all && m_steps.size() > 1);
  const int i = std::clamp(m_slider->value(), 0, std::max(0, int(m_steps.size()) - 1));
  m_step = all ? ExpertLoadModel::kAllSteps : m_steps[size_t(i)];
  m_stepLabel->setText(all ? tr("all steps summed (%1 steps in the panels)").arg(m_steps.size())
                           : tr("step %1 (%2 of %3)").arg(m_step).arg(i + 1).arg(m_steps.size()));
  int64_t top = 0;
  for (int64_t id : shownRuns()) {
    const auto found = m_panels.find(id);
    if (found == m_panels.end() || !found->second.ok) continue;
    Panel& p = found->second;
    const auto& steps = p.model->steps();
    if (m_step != ExpertLoadModel::kAllSteps && std::find(steps.begin(), steps.end(), m_step) == steps.end()) {
      panel(id)->setMessage(tr("Run '%1' has no routing rows in step %2.").arg(p.model->runName()).arg(m_step));
      continue;
    }
    p.model->setStep(m_step);
    panel(id)->setMessage(QString());
    updateLabels(p);
    top = std::max(top, p.model->maxTokens());
  }
  m_scaleMax = top;
  for (auto& [id, p] : m_panels)
    if (p.ok) p.model->setScaleMax(top);
  setScaleText(top > 0 ? tr("One colour scale for all panels: 0 (white) to %1 tokens (dark blue), the largest cell "
                            "of the shown panels; equal colours are equal token counts across runs.")
                             .arg(top)
                       : QString());
}

bool ExpertLoadView::selectStep(int64_t step) {
  if (step == ExpertLoadModel::kAllSteps) {
    if (m_allSteps->isChecked()) guarded([this] { applyStep(); });
    else m_allSteps->setChecked(true);
    return true;
  }
  const auto it = std::find(m_steps.begin(), m_steps.end(), step);
  if (it == m_steps.end()) return false;
  {
    const QSignalBlocker b(m_allSteps);
    m_allSteps->setChecked(false);
  }
  if (m_slider->value() == int(it - m_steps.begin())) guarded([this] { applyStep(); });
  else m_slider->setValue(int(it - m_steps.begin()));  // applies
  return true;
}

int64_t ExpertLoadView::currentStep() const { return m_step; }

QString ExpertLoadView::stepText() const { return m_stepLabel->text(); }

ExpertLoadModel* ExpertLoadView::model(int64_t runId) const {
  const auto it = m_panels.find(runId);
  return it == m_panels.end() ? nullptr : it->second.model;
}

HeatmapView* ExpertLoadView::heatmap(int64_t runId) const {
  const auto it = m_panels.find(runId);
  return it == m_panels.end() ? nullptr : it->second.heatmap;
}

HeatmapView* ExpertLoadView::heatmap() const {
  for (int64_t id : shownRuns())
    if (const auto it = m_panels.find(id); it != m_panels.end() && it->second.ok) return it->second.heatmap;
  return nullptr;
}

QString ExpertLoadView::imbalanceText(int64_t runId) const {
  const auto it = m_panels.find(runId);
  return it == m_panels.end() ? QString() : it->second.imbalance->text();
}

QString ExpertLoadView::shadowedText(int64_t runId) const {
  const auto it = m_panels.find(runId);
  return it == m_panels.end() ? QString() : it->second.shadowed->text();
}

QLabel* ExpertLoadView::shadowedLabel(int64_t runId) const {
  const auto it = m_panels.find(runId);
  return it == m_panels.end() ? nullptr : it->second.shadowed;
}

void ExpertLoadView::updateLabels(Panel& p) {
  const ExpertLoadModel* m = p.model;
  const auto& steps = m->steps();
  QStringList parts;
  for (int r = 0; r < m->rowCount(); ++r) {
    const double imb = m->imbalance(r);
    parts << (std::isfinite(imb) ? tr("layer %1: %2 (expert %3)").arg(m->layerAt(r)).arg(imb, 0, 'f', 2).arg(m->busiestExpert(r))
                                 : tr("layer %1: - (no tokens)").arg(m->layerAt(r)));
  }
  const QString scope = m->step() == ExpertLoadModel::kAllSteps ? tr("all %1 steps").arg(steps.size())
                                                                : tr("step %1").arg(m->step());
  p.imbalance->setText(tr("Imbalance (busiest expert / mean over experts), %1: %2")
                           .arg(scope, parts.join(QStringLiteral(";  "))));

  QStringList shadowed;
  const bool all = m->step() == ExpertLoadModel::kAllSteps;
  for (int r = 0; r < m->rowCount() && m->hasShadowing(); ++r) {
    QStringList experts;
    for (int e = 0; e < m->expertsAt(r); ++e)
      if (const int n = m->shadowedSteps(r, e); n > 0)
        experts << (all ? tr("expert %1 in %2 of %3 steps").arg(e).arg(n).arg(steps.size()) : QString::number(e));
    if (experts.isEmpty()) shadowed << tr("layer %1: none").arg(m->layerAt(r));
    else if (all) shadowed << tr("layer %1: %2").arg(m->layerAt(r)).arg(experts.join(QStringLiteral(", ")));
    else
      shadowed << tr("layer %1: expert%2 %3")
                      .arg(m->layerAt(r))
                      .arg(experts.size() > 1 ? QStringLiteral("s") : QString())
                      .arg(experts.join(QStringLiteral(", ")));
  }
  p.shadowed->setText(shadowed.isEmpty() ? QString()
                                         : tr("Shadowed by FasterMoE (outlined cells): %1").arg(shadowed.join(QStringLiteral(";  "))));
  p.shadowed->setVisible(!shadowed.isEmpty());
}
