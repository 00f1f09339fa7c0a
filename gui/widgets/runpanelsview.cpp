#include "runpanelsview.h"

#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>

#include "models/runcolors.h"
#include "models/runkind.h"
#include "moebench/store/run_store.h"
#include "widgets/runpanel.h"

RunPanelsView::RunPanelsView(const QString& emptyHint, bool panels, QWidget* parent)
    : QWidget(parent), m_emptyHint(emptyHint), m_panels(panels) {
  m_controls = new QWidget(this);
  auto* controls = new QVBoxLayout(m_controls);
  controls->setContentsMargins(0, 0, 0, 0);
  m_toolbar = new QHBoxLayout;
  m_toolbar->setContentsMargins(0, 0, 0, 0);
  m_legend = new QWidget(m_controls);
  m_legend->setObjectName("runLegend");
  m_legendLayout = new QGridLayout(m_legend);
  m_legendLayout->setContentsMargins(0, 0, 0, 0);
  controls->addLayout(m_toolbar);
  controls->addWidget(m_legend);
  m_stack = new QStackedWidget(this);
  m_message = new QLabel(m_stack);
  m_message->setObjectName("message");
  m_message->setAlignment(Qt::AlignCenter);
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_stack->addWidget(m_message);
  if (m_panels) {
    auto* page = new QWidget(m_stack);
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 0, 0, 0);
    m_caption = new QLabel(page);
    m_caption->setObjectName("caption");
    m_caption->setWordWrap(true);
    m_scroll = new QScrollArea(page);
    m_scroll->setObjectName("panels");
    m_scroll->setWidgetResizable(true);
    m_grid = new QWidget;
    m_gridLayout = new QGridLayout(m_grid);
    m_gridLayout->setContentsMargins(0, 0, 0, 0);
    m_scroll->setWidget(m_grid);
    m_scale = new QLabel(page);
    m_scale->setObjectName("scale");
    m_scale->setWordWrap(true);
    m_scale->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_caption);
    layout->addWidget(m_scroll, 1);
    layout->addWidget(m_scale);
    m_content = page;
    m_stack->addWidget(page);
  }
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_controls);
  layout->addWidget(m_stack, 1);
  showMessage(tr("Open a run store (File > Open) and select a run."));
  m_controls->setVisible(false);
}

RunPanelsView::~RunPanelsView() = default;

void RunPanelsView::setContent(QWidget* content) {
  content->setParent(m_stack);
  m_stack->addWidget(content);
  m_content = content;
}

void RunPanelsView::setCaption(const QString& text) {
  if (m_caption) m_caption->setText(text);
}

void RunPanelsView::setScaleText(const QString& text) {
  if (m_scale) m_scale->setText(text);
}

QString RunPanelsView::scaleText() const { return m_scale ? m_scale->text() : QString(); }

QString RunPanelsView::message() const { return m_stack->currentWidget() == m_message ? m_message->text() : QString(); }

void RunPanelsView::showMessage(const QString& text) {
  m_message->setText(text);
  m_stack->setCurrentWidget(m_message);
}

void RunPanelsView::showContent() {
  if (m_content) m_stack->setCurrentWidget(m_content);
}

void RunPanelsView::showError(const char* what) {
  showMessage(tr("Cannot show the selected runs: %1").arg(QString::fromUtf8(what)));
}

std::vector<int64_t> RunPanelsView::shownRuns() const {
  std::vector<int64_t> out;
  for (int64_t id : m_runIds)
    if (!m_hidden.count(id)) out.push_back(id);
  return out;
}

bool RunPanelsView::isRunShown(int64_t runId) const { return m_runs.count(runId) && !m_hidden.count(runId); }

bool RunPanelsView::setRunVisible(int64_t runId, bool visible) {
  const auto it = m_runs.find(runId);
  if (it == m_runs.end()) return false;
  it->second.toggle->setChecked(visible);  // applies
  return true;
}

QCheckBox* RunPanelsView::runToggle(int64_t runId) const {
  const auto it = m_runs.find(runId);
  return it == m_runs.end() ? nullptr : it->second.toggle;
}

QString RunPanelsView::runTitle(int64_t runId) const {
  const auto it = m_runs.find(runId);
  return it == m_runs.end() ? QString() : it->second.title;
}

QColor RunPanelsView::runColour(int64_t runId) const { return moebench::gui::runColor(runId); }

RunPanel* RunPanelsView::panel(int64_t runId) const {
  const auto it = m_runs.find(runId);
  return it == m_runs.end() ? nullptr : it->second.panel;
}

QString RunPanelsView::panelMessage(int64_t runId) const {
  const RunPanel* p = panel(runId);
  return p ? p->message() : QString();
}

void RunPanelsView::setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  m_store = std::move(store);
  m_runIds.clear();
  if (m_store)
    for (int64_t id : runIds)
      if (std::find(m_runIds.begin(), m_runIds.end(), id) == m_runIds.end()) m_runIds.push_back(id);
  clearRuns();
  for (auto& [id, run] : m_runs) {
    delete run.toggle;
    delete run.panel;
  }
  m_runs.clear();
  if (!m_store || m_runIds.empty()) {
    m_controls->setVisible(false);
    showMessage(m_store ? m_emptyHint : tr("Open a run store (File > Open) and select a run."));
    return;
  }
  for (int64_t id : m_runIds) {
    Run run;
    run.colour = moebench::gui::runColor(id);
    try {
      const moebench::RunInfo info = m_store->find_run(std::to_string(id));
      run.title = tr("#%1 %2 · %3")
                      .arg(id)
                      .arg(QString::fromStdString(info.name), moebench::gui::runKindText(m_store->tags(id)));
    } catch (const std::exception&) {
      run.title = tr("#%1 · not in the store").arg(id);  // loadRuns() shows the error in its panel
    }
    if (m_panels) run.panel = new RunPanel(id, run.title, run.colour, m_grid);
    m_runs[id] = run;
  }
  rebuildLegend();
  m_controls->setVisible(true);
  layoutPanels();
  showContent();
  try {
    loadRuns();
  } catch (const std::exception& e) {
    showError(e.what());
    return;
  }
  if (shownRuns().empty()) showMessage(hiddenText());
}

void RunPanelsView::rebuildLegend() {
  while (QLayoutItem* item = m_legendLayout->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  // A few runs per row: many selected runs wrap instead of widening the window.
  constexpr int kPerRow = 3;
  m_legendLayout->addWidget(new QLabel(tr("Runs:"), m_legend), 0, 0);
  int n = 0;
  for (int64_t id : m_runIds) {
    Run& run = m_runs[id];
    auto* box = new QCheckBox(run.title, m_legend);
    box->setObjectName(QStringLiteral("runToggle%1").arg(id));
    box->setChecked(!m_hidden.count(id));
    box->setToolTip(tr("Show or hide %1").arg(run.title));
    QPalette pal = box->palette();
    pal.setColor(QPalette::WindowText, run.colour);
    pal.setColor(QPalette::ButtonText, run.colour);
    box->setPalette(pal);
    QFont bold = box->font();
    bold.setBold(true);
    box->setFont(bold);
    connect(box, &QCheckBox::toggled, this, [this, id](bool on) {
      if (on == !m_hidden.count(id)) return;
      if (on) m_hidden.erase(id);
      else m_hidden.insert(id);
      layoutPanels();
      if (shownRuns().empty()) {
        showMessage(hiddenText());
        return;
      }
      showContent();
      guarded([this] { shownRunsChanged(); });
    });
    run.toggle = box;
    m_legendLayout->addWidget(box, n / kPerRow, 1 + n % kPerRow);
    ++n;
  }
  m_legendLayout->setColumnStretch(kPerRow + 1, 1);
}

void RunPanelsView::layoutPanels() {
  if (!m_panels) return;
  while (QLayoutItem* item = m_gridLayout->takeAt(0)) delete item;
  const std::vector<int64_t> shown = shownRuns();
  const int n = int(shown.size());
  const int columns = n <= 1 ? 1 : n <= 4 ? 2 : 3;
  for (int64_t id : m_runIds) {
    RunPanel* p = m_runs[id].panel;
    if (p) p->setVisible(!m_hidden.count(id));
  }
  for (int i = 0; i < n; ++i) m_gridLayout->addWidget(m_runs[shown[size_t(i)]].panel, i / columns, i % columns);
  for (int c = 0; c < 3; ++c) m_gridLayout->setColumnStretch(c, c < columns ? 1 : 0);
}

QString RunPanelsView::hiddenText() const { return tr("Every selected run is hidden: tick a run above to show it."); }
