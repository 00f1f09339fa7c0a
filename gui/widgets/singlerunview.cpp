#include "singlerunview.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <exception>

#include "moebench/store/run_store.h"

SingleRunView::SingleRunView(const QString& emptyHint, QWidget* parent) : QWidget(parent), m_emptyHint(emptyHint) {
  m_controls = new QWidget(this);
  m_toolbar = new QHBoxLayout(m_controls);
  m_toolbar->setContentsMargins(0, 0, 0, 0);
  m_runCombo = new QComboBox(m_controls);
  m_runCombo->setObjectName("runChooser");
  m_runCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_runName = new QLabel(m_controls);
  m_toolbar->addWidget(new QLabel(tr("Run:"), m_controls));
  m_toolbar->addWidget(m_runCombo);
  m_toolbar->addWidget(m_runName);
  m_stack = new QStackedWidget(this);
  m_message = new QLabel(m_stack);
  m_message->setObjectName("message");
  m_message->setAlignment(Qt::AlignCenter);
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_stack->addWidget(m_message);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_controls);
  layout->addWidget(m_stack, 1);
  connect(m_runCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0) return;
    m_run = m_runCombo->itemData(i).toLongLong();
    load();
  });
  showMessage(tr("Open a run store (File > Open) and select a run."));
  m_controls->setVisible(false);
}

SingleRunView::~SingleRunView() = default;

void SingleRunView::setContent(QWidget* content) {
  content->setParent(m_stack);
  m_stack->addWidget(content);
}

QString SingleRunView::message() const { return m_stack->currentWidget() == m_message ? m_message->text() : QString(); }

void SingleRunView::showMessage(const QString& text) {
  m_message->setText(text);
  m_stack->setCurrentWidget(m_message);
}

void SingleRunView::showContent() {
  if (m_stack->count() > 1) m_stack->setCurrentIndex(1);
}

void SingleRunView::showError(const char* what) {
  clearRun();
  showMessage(tr("Cannot show run %1: %2").arg(m_run).arg(QString::fromUtf8(what)));
}

void SingleRunView::setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  m_store = std::move(store);
  m_runIds = m_store ? runIds : std::vector<int64_t>{};
  const QSignalBlocker block(m_runCombo);
  m_runCombo->clear();
  if (!m_store || m_runIds.empty()) {
    m_run = -1;
    clearRun();
    m_controls->setVisible(false);
    showMessage(m_store ? m_emptyHint : tr("Open a run store (File > Open) and select a run."));
    return;
  }
  int keep = 0;
  for (size_t i = 0; i < m_runIds.size(); ++i) {
    QString label = tr("run %1").arg(m_runIds[i]);
    try {
      const moebench::RunInfo info = m_store->find_run(std::to_string(m_runIds[i]));
      label = tr("%1 (id %2)").arg(QString::fromStdString(info.name)).arg(info.id);
    } catch (const std::exception&) {
      // load() reports it when this run is shown
    }
    m_runCombo->addItem(label, qint64(m_runIds[i]));
    if (m_runIds[i] == m_run) keep = int(i);
  }
  m_runCombo->setCurrentIndex(keep);
  m_run = m_runIds[size_t(keep)];
  m_controls->setVisible(true);
  m_runCombo->setVisible(m_runIds.size() > 1);
  m_runName->setVisible(m_runIds.size() == 1);
  m_runName->setText(m_runCombo->itemText(0));
  load();
}

bool SingleRunView::selectRun(int64_t runId) {
  const int i = m_runCombo->findData(qint64(runId));
  if (i < 0) return false;
  if (i == m_runCombo->currentIndex()) return true;
  m_runCombo->setCurrentIndex(i);  // loads
  return true;
}

void SingleRunView::load() {
  if (!m_store || m_run < 0) return;
  try {
    showContent();
    loadRun(m_run);
  } catch (const std::exception& e) {
    showError(e.what());
  }
}
