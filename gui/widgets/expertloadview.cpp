#include "expertloadview.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "heatmapview.h"
#include "models/expertloadmodel.h"

ExpertLoadView::ExpertLoadView(QWidget* parent)
    : SingleRunView(tr("Select a run in the run browser to see how many tokens each expert received."), parent) {
  m_model = new ExpertLoadModel(this);
  m_allSteps = new QCheckBox(tr("all steps"), this);
  m_allSteps->setObjectName("allSteps");
  m_allSteps->setChecked(true);
  m_slider = new QSlider(Qt::Horizontal, this);
  m_slider->setObjectName("stepSlider");
  m_slider->setMinimumWidth(160);
  m_slider->setEnabled(false);
  m_stepLabel = new QLabel(this);
  m_stepLabel->setObjectName("stepLabel");
  toolbar()->addSpacing(12);
  toolbar()->addWidget(m_allSteps);
  toolbar()->addWidget(m_slider, 1);
  toolbar()->addWidget(m_stepLabel);

  auto* page = new QWidget;
  auto* layout = new QVBoxLayout(page);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* caption = new QLabel(tr("Tokens routed to each expert (rows = MoE layers), summed over the source ranks."), page);
  m_heatmap = new HeatmapView;
  m_heatmap->setModel(m_model);
  auto* scroll = new QScrollArea(page);
  scroll->setWidgetResizable(true);
  scroll->setWidget(m_heatmap);
  m_imbalance = new QLabel(page);
  m_imbalance->setObjectName("imbalance");
  m_imbalance->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_shadowed = new QLabel(page);
  m_shadowed->setObjectName("shadowed");
  m_shadowed->setWordWrap(true);
  m_shadowed->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_shadowed->hide();
  layout->addWidget(caption);
  layout->addWidget(scroll, 1);
  layout->addWidget(m_imbalance);
  layout->addWidget(m_shadowed);
  setContent(page);

  connect(m_allSteps, &QCheckBox::toggled, this, [this] { guarded([this] { applyStep(); }); });
  connect(m_slider, &QSlider::valueChanged, this, [this] { guarded([this] { applyStep(); }); });
}

ExpertLoadView::~ExpertLoadView() = default;

void ExpertLoadView::loadRun(int64_t runId) {
  const int64_t previous = m_model->runId() >= 0 ? m_model->step() : ExpertLoadModel::kAllSteps;
  m_model->setRun(store(), runId);
  if (m_model->rowCount() == 0) {
    showMessage(m_model->emptyReason());
    return;
  }
  const auto& steps = m_model->steps();
  {
    const QSignalBlocker b1(m_slider), b2(m_allSteps);
    m_slider->setRange(0, std::max(0, int(steps.size()) - 1));
    const auto it = std::find(steps.begin(), steps.end(), previous);
    if (previous != ExpertLoadModel::kAllSteps && it != steps.end()) {
      m_allSteps->setChecked(false);
      m_slider->setValue(int(it - steps.begin()));
    } else {
      m_allSteps->setChecked(true);
    }
  }
  applyStep();
}

void ExpertLoadView::clearRun() {
  m_model->clear();
  m_stepLabel->clear();
  m_imbalance->clear();
  m_shadowed->clear();
  m_shadowed->hide();
}

void ExpertLoadView::applyStep() {
  const auto& steps = m_model->steps();
  const bool all = m_allSteps->isChecked() || steps.empty();
  m_slider->setEnabled(!all && steps.size() > 1);
  const int i = std::clamp(m_slider->value(), 0, std::max(0, int(steps.size()) - 1));
  m_model->setStep(all ? ExpertLoadModel::kAllSteps : steps[size_t(i)]);
  updateLabels();
}

bool ExpertLoadView::selectStep(int64_t step) {
  if (step == ExpertLoadModel::kAllSteps) {
    m_allSteps->setChecked(true);
    return true;
  }
  const auto& steps = m_model->steps();
  const auto it = std::find(steps.begin(), steps.end(), step);
  if (it == steps.end()) return false;
  {
    const QSignalBlocker b(m_allSteps);
    m_allSteps->setChecked(false);
  }
  if (m_slider->value() == int(it - steps.begin())) guarded([this] { applyStep(); });
  else m_slider->setValue(int(it - steps.begin()));  // applies
  return true;
}

int64_t ExpertLoadView::currentStep() const { return m_model->step(); }

QString ExpertLoadView::imbalanceText() const { return m_imbalance->text(); }

QString ExpertLoadView::shadowedText() const { return m_shadowed->text(); }

void ExpertLoadView::updateLabels() {
  const auto& steps = m_model->steps();
  m_stepLabel->setText(m_model->step() == ExpertLoadModel::kAllSteps
                           ? tr("all %1 steps summed").arg(steps.size())
                           : tr("step %1 (%2 of %3)")
                                 .arg(m_model->step())
                                 .arg(m_slider->value() + 1)
                                 .arg(steps.size()));
  QStringList parts;
  for (int r = 0; r < m_model->rowCount(); ++r) {
    const double imb = m_model->imbalance(r);
    parts << (std::isfinite(imb) ? tr("layer %1: %2 (expert %3)")
                                       .arg(m_model->layerAt(r))
                                       .arg(imb, 0, 'f', 2)
                                       .arg(m_model->busiestExpert(r))
                                 : tr("layer %1: - (no tokens)").arg(m_model->layerAt(r)));
  }
  m_imbalance->setText(tr("Imbalance (busiest expert / mean over experts): %1").arg(parts.join(QStringLiteral(";  "))));

  QStringList shadowed;
  const bool all = m_model->step() == ExpertLoadModel::kAllSteps;
  for (int r = 0; r < m_model->rowCount() && m_model->hasShadowing(); ++r) {
    QStringList experts;
    for (int e = 0; e < m_model->expertsAt(r); ++e)
      if (const int n = m_model->shadowedSteps(r, e); n > 0)
        experts << (all ? tr("expert %1 in %2 of %3 steps").arg(e).arg(n).arg(steps.size()) : QString::number(e));
    if (experts.isEmpty()) shadowed << tr("layer %1: none").arg(m_model->layerAt(r));
    else if (all) shadowed << tr("layer %1: %2").arg(m_model->layerAt(r)).arg(experts.join(QStringLiteral(", ")));
    else
      shadowed << tr("layer %1: expert%2 %3")
                      .arg(m_model->layerAt(r))
                      .arg(experts.size() > 1 ? QStringLiteral("s") : QString())
                      .arg(experts.join(QStringLiteral(", ")));
  }
  m_shadowed->setText(shadowed.isEmpty() ? QString()
                                         : tr("Shadowed by FasterMoE (outlined cells): %1").arg(shadowed.join(QStringLiteral(";  "))));
  m_shadowed->setVisible(!shadowed.isEmpty());
}
