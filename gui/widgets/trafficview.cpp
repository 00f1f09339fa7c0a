#include "trafficview.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>
#include <set>

#include "heatmapview.h"
#include "models/byteformat.h"
#include "models/trafficmatrixmodel.h"
#include "runpanel.h"

TrafficView::TrafficView(QWidget* parent)
    : RunPanelsView(tr("Select runs in the run browser to see the bytes their ranks sent to each other."), true,
                    parent) {
  m_stepCombo = new QComboBox(this);
  m_stepCombo->setObjectName("stepChooser");
  m_stepCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  toolbar()->addWidget(new QLabel(tr("Step (all panels):"), this));
  toolbar()->addWidget(m_stepCombo);
  toolbar()->addStretch(1);
  setCaption(tr("Bytes sent: rows = sending rank, columns = receiving rank; one panel per run."));
  connect(m_stepCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0) guarded([this] { applyStep(); });
  });
}

TrafficView::~TrafficView() = default;

void TrafficView::clearRuns() {
  for (auto& [id, p] : m_panels) delete p.model;
  m_panels.clear();
  m_scaleMax = 0;
  setScaleText(QString());
}

void TrafficView::loadRuns() {
  const int64_t previous = currentStep();
  for (int64_t id : runs()) {
    RunPanel* frame = panel(id);
    Panel p;
    p.model = new TrafficMatrixModel(this);
    auto* content = new QWidget;
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(0, 0, 0, 0);
    p.heatmap = new HeatmapView(content);
    p.heatmap->setObjectName(QStringLiteral("heatmap-run%1").arg(id));
    p.heatmap->setModel(p.model);
    p.totals = new QLabel(content);
    p.totals->setObjectName("totals");
    p.totals->setWordWrap(true);
    p.totals->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(p.heatmap, 1);
    layout->addWidget(p.totals);
    frame->setContent(content);
    try {
      p.model->setRun(store(), id);
      p.ok = !p.model->steps().empty();
      if (!p.ok)
        frame->setMessage(tr("Run '%1' has no traffic recorded (single rank, or recorded without the traffic meter).")
                              .arg(p.model->runName()));
    } catch (const std::exception& e) {
      p.model->clear();
      frame->setMessage(tr("Cannot show run %1: %2").arg(id).arg(QString::fromUtf8(e.what())));
    }
    m_panels[id] = p;
  }
  rebuildSteps();
  const int keep = m_stepCombo->findData(qint64(previous));
  {
    const QSignalBlocker block(m_stepCombo);
    m_stepCombo->setCurrentIndex(keep < 0 ? 0 : keep);
  }
  applyStep();
}

void TrafficView::shownRunsChanged() {
  const int64_t previous = currentStep();
  rebuildSteps();
  const int keep = m_stepCombo->findData(qint64(previous));
  {
    const QSignalBlocker block(m_stepCombo);
    m_stepCombo->setCurrentIndex(keep < 0 ? 0 : keep);
  }
  applyStep();
}

void TrafficView::rebuildSteps() {
  std::set<int64_t> steps;
  for (int64_t id : shownRuns())
    if (const auto it = m_panels.find(id); it != m_panels.end() && it->second.ok)
      steps.insert(it->second.model->steps().begin(), it->second.model->steps().end());
  const QSignalBlocker block(m_stepCombo);
  m_stepCombo->clear();
  m_stepCombo->addItem(tr("all steps (mean per step)"), qint64(TrafficMatrixModel::kAllSteps));
  for (int64_t s : steps) m_stepCombo->addItem(tr("step %1").arg(s), qint64(s));
}

void TrafficView::applyStep() {
  const int64_t step = currentStep();
  double top = 0;
  for (int64_t id : shownRuns()) {
    const auto it = m_panels.find(id);
    if (it == m_panels.end() || !it->second.ok) continue;
    Panel& p = it->second;
    const auto& steps = p.model->steps();
    if (step != TrafficMatrixModel::kAllSteps && std::find(steps.begin(), steps.end(), step) == steps.end()) {
      panel(id)->setMessage(tr("Run '%1' has no traffic rows in step %2.").arg(p.model->runName()).arg(step));
      continue;
    }
    p.model->setStep(step);
    panel(id)->setMessage(QString());
    updateTotals(p);
    top = std::max(top, p.model->maxBytes());
  }
  m_scaleMax = top;
  for (auto& [id, p] : m_panels)
    if (p.ok) p.model->setScaleMax(top);
  setScaleText(top > 0 ? tr("One colour scale for all panels: 0 (white) to %1 (dark blue), the largest cell of the "
                            "shown panels; equal colours are equal bytes across runs.")
                             .arg(moebench::gui::compactBytes(top))
                       : QString());
}

void TrafficView::updateTotals(Panel& p) {
  const double intra = p.model->intraBytes(), inter = p.model->interBytes();
  const QString scope = p.model->step() == TrafficMatrixModel::kAllSteps
                            ? tr("per step (mean over %1 steps)").arg(p.model->stepsPerMean())
                            : tr("in step %1").arg(p.model->step());
  p.totals->setText(tr("All ranks: intra-node %1 + inter-node %2 = %3 %4")
                        .arg(moebench::gui::compactBytes(intra), moebench::gui::compactBytes(inter),
                             moebench::gui::compactBytes(intra + inter), scope));
}

bool TrafficView::selectStep(int64_t step) {
  const int i = m_stepCombo->findData(qint64(step));
  if (i < 0) return false;
  if (i == m_stepCombo->currentIndex()) guarded([this] { applyStep(); });
  else m_stepCombo->setCurrentIndex(i);
  return true;
}

int64_t TrafficView::currentStep() const {
  return m_stepCombo->currentIndex() < 0 ? TrafficMatrixModel::kAllSteps : m_stepCombo->currentData().toLongLong();
}

std::vector<int64_t> TrafficView::steps() const {
  std::vector<int64_t> out;
  for (int i = 1; i < m_stepCombo->count(); ++i) out.push_back(m_stepCombo->itemData(i).toLongLong());
  return out;
}

TrafficMatrixModel* TrafficView::model(int64_t runId) const {
  const auto it = m_panels.find(runId);
  return it == m_panels.end() ? nullptr : it->second.model;
}

HeatmapView* TrafficView::heatmap(int64_t runId) const {
  const auto it = m_panels.find(runId);
  return it == m_panels.end() ? nullptr : it->second.heatmap;
}

HeatmapView* TrafficView::heatmap() const {
  for (int64_t id : shownRuns())
    if (const auto it = m_panels.find(id); it != m_panels.end() && it->second.ok) return it->second.heatmap;
  return nullptr;
}

QString TrafficView::totalsText(int64_t runId) const {
  const auto it = m_panels.find(runId);
  return it == m_panels.end() ? QString() : it->second.totals->text();
}
