#include "trafficview.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "heatmapview.h"
#include "models/byteformat.h"
#include "models/trafficmatrixmodel.h"

TrafficView::TrafficView(QWidget* parent)
    : SingleRunView(tr("Select a run in the run browser to see the bytes its ranks sent to each other."), parent) {
  m_model = new TrafficMatrixModel(this);
  m_stepCombo = new QComboBox(this);
  m_stepCombo->setObjectName("stepChooser");
  m_stepCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  toolbar()->addSpacing(12);
  toolbar()->addWidget(new QLabel(tr("Step:"), this));
  toolbar()->addWidget(m_stepCombo);
  toolbar()->addStretch(1);

  auto* page = new QWidget;
  auto* layout = new QVBoxLayout(page);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* caption = new QLabel(tr("Bytes sent: rows = sending rank, columns = receiving rank."), page);
  m_heatmap = new HeatmapView;
  m_heatmap->setModel(m_model);
  auto* scroll = new QScrollArea(page);
  scroll->setWidgetResizable(true);
  scroll->setWidget(m_heatmap);
  m_totals = new QLabel(page);
  m_totals->setObjectName("totals");
  m_totals->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(caption);
  layout->addWidget(scroll, 1);
  layout->addWidget(m_totals);
  setContent(page);

  connect(m_stepCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0) return;
    guarded([&] {
      m_model->setStep(m_stepCombo->itemData(i).toLongLong());
      updateTotals();
    });
  });
}

TrafficView::~TrafficView() = default;

void TrafficView::loadRun(int64_t runId) {
  const int64_t previous = currentStep();
  m_model->setRun(store(), runId);
  const QSignalBlocker block(m_stepCombo);
  m_stepCombo->clear();
  if (m_model->steps().empty()) {
    showMessage(tr("Run '%1' has no traffic recorded (single rank, or recorded without the traffic meter).")
                    .arg(m_model->runName()));
    return;
  }
  m_stepCombo->addItem(tr("all steps (mean per step)"), qint64(TrafficMatrixModel::kAllSteps));
  for (int64_t s : m_model->steps()) m_stepCombo->addItem(tr("step %1").arg(s), qint64(s));
  const int keep = m_stepCombo->findData(qint64(previous));
  m_stepCombo->setCurrentIndex(keep < 0 ? 0 : keep);
  m_model->setStep(m_stepCombo->currentData().toLongLong());
  updateTotals();
}

void TrafficView::clearRun() {
  m_model->clear();
  const QSignalBlocker block(m_stepCombo);
  m_stepCombo->clear();
  m_totals->clear();
}

bool TrafficView::selectStep(int64_t step) {
  const int i = m_stepCombo->findData(qint64(step));
  if (i < 0) return false;
  m_stepCombo->setCurrentIndex(i);
  return true;
}

int64_t TrafficView::currentStep() const {
  return m_stepCombo->currentIndex() < 0 ? TrafficMatrixModel::kAllSteps : m_stepCombo->currentData().toLongLong();
}

QString TrafficView::totalsText() const { return m_totals->text(); }

void TrafficView::updateTotals() {
  const double intra = m_model->intraBytes(), inter = m_model->interBytes();
  const QString scope = m_model->step() == TrafficMatrixModel::kAllSteps
                            ? tr("per step (mean over %1 steps)").arg(m_model->stepsPerMean())
                            : tr("in step %1").arg(m_model->step());
  m_totals->setText(tr("All ranks: intra-node %1 + inter-node %2 = %3 %4")
                        .arg(moebench::gui::compactBytes(intra), moebench::gui::compactBytes(inter),
                             moebench::gui::compactBytes(intra + inter), scope));
}
