#include "widgets/timelineview.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPixmap>
#include <QPushButton>
#include <QShortcut>
#include <QtConcurrent/QtConcurrentRun>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include <exception>

#include "models/timelinegeometry.h"
#include "models/timelinerangesummary.h"
#include "models/timelinetext.h"
#include "models/runkind.h"
#include "moebench/store/run_store.h"
#include "widgets/timelinecanvas.h"

namespace {
// "predicted", "emulated" or "measured" (models/runkind.h).
QString kindText(const moebench::RunStore& store, int64_t runId) { return moebench::gui::runKindText(store.tags(runId)); }

// A colour swatch and its category name (the QLabel holding the name is "legend_<category>").
QWidget* legendEntry(const char* category, const QString& text, QWidget* parent) {
  auto* box = new QWidget(parent);
  auto* row = new QHBoxLayout(box);
  row->setContentsMargins(0, 0, 0, 0);
  row->setSpacing(4);
  QPixmap swatch(12, 12);
  swatch.fill(moebench::gui::categoryColor(category));
  auto* sw = new QLabel(box);
  sw->setPixmap(swatch);
  row->addWidget(sw);
  auto* name = new QLabel(text, box);
  name->setObjectName(QStringLiteral("legend_%1").arg(QLatin1String(category)));
  row->addWidget(name);
  return box;
}
}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  connect(&m_live, &QFutureWatcher<LiveRead>::finished, this, [this] { applyLive(m_live.result()); });
  auto* top = new QHBoxLayout;
  m_runLabelWidget = new QLabel(tr("Run:"), this);
  m_runCombo = new QComboBox(this);
  m_runCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  top->addWidget(m_runLabelWidget);
  top->addWidget(m_runCombo);
  top->addWidget(new QLabel(tr("Step:"), this));
  m_stepCombo = new QComboBox(this);
  m_stepCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  top->addWidget(m_stepCombo);
  top->addSpacing(12);
  top->addWidget(new QLabel(tr("Compare with:"), this));
  m_compareCombo = new QComboBox(this);
  m_compareCombo->setObjectName(QStringLiteral("compareChooser"));
  // Every run of the store is listed: sized for 24 characters (the list shows each whole), so a
  // long run name does not take the run browser's room.
  m_compareCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_compareCombo->setMinimumContentsLength(24);
  m_compareCombo->setToolTip(tr("Stack another run (a prediction, another strategy) below this one on one time axis, "
                                "each run's shown step starting at 0"));
  top->addWidget(m_compareCombo);
  m_compareStepLabel = new QLabel(tr("its step:"), this);
  m_compareStepCombo = new QComboBox(this);
  m_compareStepCombo->setObjectName(QStringLiteral("compareStepChooser"));
  m_compareStepCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  top->addWidget(m_compareStepLabel);
  top->addWidget(m_compareStepCombo);
  top->addStretch(1);

  m_stack = new QStackedWidget(this);
  m_message = new QLabel(m_stack);
  m_message->setAlignment(Qt::AlignCenter);
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_canvas = new TimelineCanvas(m_stack);
  m_stack->addWidget(m_message);
  m_stack->addWidget(m_canvas);

  // the tools row: search, flows, range selection
  auto* tools = new QHBoxLayout;
  m_search = new QLineEdit(this);
  m_search->setObjectName(QStringLiteral("spanSearch"));
  m_search->setPlaceholderText(tr("Search spans (Ctrl+F)"));
  m_search->setClearButtonEnabled(true);
  m_search->setToolTip(tr("Highlights the spans whose name contains the text (any case) and dims the others. "
                          "Enter: next match, Shift+Enter: previous match."));
  m_search->setMinimumWidth(200);
  m_search->installEventFilter(this);
  m_searchPrev = new QToolButton(this);
  m_searchPrev->setObjectName(QStringLiteral("searchPrevious"));
  m_searchPrev->setArrowType(Qt::UpArrow);
  m_searchPrev->setToolTip(tr("Previous match (Shift+Enter)"));
  m_searchNext = new QToolButton(this);
  m_searchNext->setObjectName(QStringLiteral("searchNext"));
  m_searchNext->setArrowType(Qt::DownArrow);
  m_searchNext->setToolTip(tr("Next match (Enter)"));
  m_searchCount = new QLabel(this);
  m_searchCount->setObjectName(QStringLiteral("searchCount"));
  m_searchCount->setMinimumWidth(110);
  m_flows = new QCheckBox(tr("Flows"), this);
  m_flows->setObjectName(QStringLiteral("flowsToggle"));
  m_flows->setChecked(true);
  m_flows->setToolTip(tr("Arrows from each point-to-point send (a span naming a peer rank) to its receive on "
                         "that rank: from the end of the send to the end of the receive"));
  m_selectRange = new QToolButton(this);
  m_selectRange->setObjectName(QStringLiteral("selectRange"));
  m_selectRange->setText(tr("Select range"));
  m_selectRange->setCheckable(true);
  m_selectRange->setToolTip(tr("Left-drag selects a time range (instead of zooming) and summarizes its spans below; "
                               "Shift+left-drag always selects"));
  tools->addWidget(m_search);
  tools->addWidget(m_searchPrev);
  tools->addWidget(m_searchNext);
  tools->addWidget(m_searchCount);
  tools->addSpacing(12);
  tools->addWidget(m_flows);
  tools->addWidget(m_selectRange);
  tools->addStretch(1);
  // the selected range's summary
  m_summary = new TimelineRangeSummaryModel(this);
  m_summaryPanel = new QWidget(this);
  m_summaryPanel->setObjectName(QStringLiteral("rangeSummary"));
  auto* panel = new QVBoxLayout(m_summaryPanel);
  panel->setContentsMargins(0, 0, 0, 0);
  auto* panelTop = new QHBoxLayout;
  m_summaryTitle = new QLabel(m_summaryPanel);
  m_summaryTitle->setObjectName(QStringLiteral("rangeSummaryTitle"));
  m_summaryTitle->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* clearRange = new QPushButton(tr("Clear"), m_summaryPanel);
  clearRange->setObjectName(QStringLiteral("clearRange"));
  panelTop->addWidget(m_summaryTitle, 1);
  panelTop->addWidget(clearRange);
  panel->addLayout(panelTop);
  auto* sorted = new QSortFilterProxyModel(this);
  sorted->setSourceModel(m_summary);
  sorted->setSortRole(Qt::UserRole);
  m_summaryTable = new QTableView(m_summaryPanel);
  m_summaryTable->setObjectName(QStringLiteral("rangeSummaryTable"));
  m_summaryTable->setModel(sorted);
  m_summaryTable->setSortingEnabled(true);
  m_summaryTable->sortByColumn(TimelineRangeSummaryModel::TotalColumn, Qt::DescendingOrder);
  m_summaryTable->verticalHeader()->hide();
  m_summaryTable->horizontalHeader()->setSectionResizeMode(TimelineRangeSummaryModel::NameColumn, QHeaderView::Stretch);
  m_summaryTable->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_summaryTable->setMinimumHeight(140);
  panel->addWidget(m_summaryTable);
  m_summaryPanel->hide();
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_stack);
  split->addWidget(m_summaryPanel);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);

  auto* bottom = new QVBoxLayout;  // the status, then the help line: neither cut by the other
  m_status = new QLabel(this);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* help = new QLabel(tr("wheel: zoom · drag: zoom to range · shift-drag: select range · right-drag: pan · Home: fit"),
                          this);
  help->setEnabled(false);
  help->setToolTip(tr("Wheel or + / -: zoom. Left-drag: zoom to the dragged range. Shift+left-drag: select a time "
                      "range and summarize it (Esc clears). Right- or middle-drag, Ctrl/Shift+wheel, Left / Right: "
                      "pan. Home, 0 or double-click: show everything."));
  m_status->setWordWrap(true);
  help->setWordWrap(true);
  // The category legend under the canvas: the rows above keep their room for the selectors.
  auto* legendRow = new QHBoxLayout;
  const std::pair<const char*, QString> legend[] = {{"compute", tr("compute")}, {"comm", tr("comm")},
                                                    {"copy", tr("copy")},       {"io", tr("io")},
                                                    {"mixed", tr("mixed (merged spans)")}};
  for (const auto& [category, text] : legend) legendRow->addWidget(legendEntry(category, text, this));
  findChild<QLabel*>(QStringLiteral("legend_mixed"))
      ->setToolTip(tr("When zoomed out, spans narrower than a pixel are merged: a merged bar takes the category "
                      "holding over half of its time (else \"mixed\") and is paler the less busy it is."));
  legendRow->addStretch(1);
  bottom->addLayout(legendRow);
  bottom->addWidget(m_status);
  bottom->addWidget(help);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addLayout(tools);
  layout->addWidget(split, 1);
  layout->addLayout(bottom);

  m_runLabelWidget->hide();
  m_runCombo->hide();
  m_compareCombo->addItem(tr("(none)"), QVariant::fromValue<qlonglong>(-1));
  m_compareStepLabel->hide();
  m_compareStepCombo->hide();
  showMessage(tr("Select a run in the run browser to see its per-rank timeline."));

  connect(m_runCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0) return;
    m_run = m_runCombo->itemData(i).toLongLong();
    m_runLabel = m_runCombo->itemText(i);
    loadRun();
  });
  connect(m_stepCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0) return;
    fillCompareSteps(currentStep());
    loadSpans();
  });
  connect(m_compareCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0) return;
    fillCompareSteps(currentStep());
    loadSpans();
  });
  connect(m_compareStepCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0) loadSpans();
  });
  connect(m_canvas, &TimelineCanvas::viewChanged, this, &TimelineView::updateStatus);
  connect(m_search, &QLineEdit::textChanged, m_canvas, &TimelineCanvas::setSearchText);
  connect(m_searchNext, &QToolButton::clicked, m_canvas, &TimelineCanvas::nextMatch);
  connect(m_searchPrev, &QToolButton::clicked, m_canvas, &TimelineCanvas::previousMatch);
  connect(m_canvas, &TimelineCanvas::searchChanged, this, &TimelineView::updateSearchStatus);
  connect(m_flows, &QCheckBox::toggled, m_canvas, &TimelineCanvas::setShowFlows);
  connect(m_selectRange, &QToolButton::toggled, m_canvas, &TimelineCanvas::setRangeSelectMode);
  connect(m_canvas, &TimelineCanvas::selectionChanged, this, &TimelineView::updateRangeSummary);
  connect(clearRange, &QPushButton::clicked, m_canvas, &TimelineCanvas::clearSelection);
  auto* find = new QShortcut(QKeySequence::Find, this);
  find->setContext(Qt::WidgetWithChildrenShortcut);
  connect(find, &QShortcut::activated, this, [this] {
    m_search->setFocus(Qt::ShortcutFocusReason);
    m_search->selectAll();
  });
  updateSearchStatus();
}

bool TimelineView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_search && event->type() == QEvent::KeyPress) {
    const auto* k = static_cast<QKeyEvent*>(event);
    if (k->key() == Qt::Key_Return || k->key() == Qt::Key_Enter) {
      if (k->modifiers() & Qt::ShiftModifier) m_canvas->previousMatch();
      else m_canvas->nextMatch();
      return true;
    }
    if (k->key() == Qt::Key_Escape && !m_search->text().isEmpty()) {
      m_search->clear();
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

QString TimelineView::searchStatus() const { return m_searchCount->text(); }

void TimelineView::updateSearchStatus() {
  const int n = m_canvas->matchCount(), i = m_canvas->currentMatch();
  m_searchPrev->setEnabled(n > 0);
  m_searchNext->setEnabled(n > 0);
  if (m_canvas->searchText().isEmpty()) m_searchCount->clear();
  else if (n == 0) m_searchCount->setText(tr("no match"));
  else if (i < 0) m_searchCount->setText(n == 1 ? tr("1 match") : tr("%1 matches").arg(n));
  else m_searchCount->setText(tr("%1 / %2 matches").arg(i + 1).arg(n));
}

QString TimelineView::rangeSummaryTitle() const { return m_summaryTitle->text(); }

void TimelineView::updateRangeSummary() {
  if (!m_canvas->hasSelection()) {
    m_summary->clear();
    m_summaryTitle->clear();
    m_summaryPanel->hide();
    return;
  }
  namespace tg = moebench::gui;
  const double t0 = m_canvas->selectionStart(), t1 = m_canvas->selectionEnd();
  m_summary->setRange(m_canvas->spans(), t0, t1);
  int spans = 0;
  for (const tg::RangeSummaryRow& r : m_summary->rows()) spans += r.count;
  m_summaryTitle->setText(tr("Range %1 – %2 (%3)%4: %5 spans of %6 names overlap it; times clipped to the range")
                              .arg(tg::formatTimeMs(t0), tg::formatTimeMs(t1), tg::formatDuration(t1 - t0),
                                   m_canvas->isStacked() ? tr(" of the top run") : QString())
                              .arg(spans)
                              .arg(m_summary->rowCount()));
  m_summaryPanel->show();
}

TimelineView::~TimelineView() { m_live.waitForFinished(); }

void TimelineView::showMessage(const QString& text) {
  m_canvas->clear();
  m_message->setText(text);
  m_stack->setCurrentWidget(m_message);
  m_status->clear();
}

QString TimelineView::message() const { return m_stack->currentWidget() == m_message ? m_message->text() : QString(); }
QString TimelineView::statusText() const { return m_status->text(); }

int64_t TimelineView::currentStep() const {
  const int i = m_stepCombo->currentIndex();
  return i < 0 ? kNoStep : m_stepCombo->itemData(i).toLongLong();
}

bool TimelineView::selectStep(int64_t step) {
  const int i = m_stepCombo->findData(QVariant::fromValue<qlonglong>(step));
  if (i < 0) return false;
  if (i == m_stepCombo->currentIndex()) loadSpans();  // reload (the store may have grown)
  else m_stepCombo->setCurrentIndex(i);
  return true;
}

bool TimelineView::refreshLive(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  if (m_live.isRunning() || !store || store != m_store || runIds != m_runIds || m_run < 0) return false;
  const int64_t run = m_run;
  const bool all = currentStep() == kAllSteps;
  m_live.setFuture(QtConcurrent::run([store, run, all] {
    LiveRead r;
    r.allSteps = all;
    try {
      r.steps = store->steps_with(run, moebench::RecordTable::spans);
      if (all) r.spans = store->spans(run);
    } catch (const std::exception& e) {
      r.error = QString::fromUtf8(e.what());
    }
    return r;
  }));
  return true;
}

void TimelineView::applyLive(LiveRead r) {
  if (!r.error.isEmpty()) {
    showMessage(tr("Could not load the timeline of %1: %2").arg(m_runLabel, r.error));
    return;
  }
  std::vector<int64_t> shown;
  for (int i = 0; i < m_stepCombo->count(); ++i)
    if (m_stepCombo->itemData(i).toLongLong() != kAllSteps) shown.push_back(m_stepCombo->itemData(i).toLongLong());
  if (shown == r.steps) return;  // nothing new: a recorded step's spans never change
  const int64_t step = currentStep();
  {
    const QSignalBlocker block(m_stepCombo);
    m_stepCombo->clear();
    m_stepCombo->addItem(tr("all steps (%1)").arg(r.steps.size()), QVariant::fromValue<qlonglong>(kAllSteps));
    for (int64_t s : r.steps) m_stepCombo->addItem(tr("step %1").arg(s), QVariant::fromValue<qlonglong>(s));
    const int keep = m_stepCombo->findData(QVariant::fromValue<qlonglong>(step));
    m_stepCombo->setCurrentIndex(keep >= 0 ? keep : (r.steps.size() <= size_t(kAllStepsByDefault) ? 0 : 1));
  }
  if (r.allSteps && currentStep() == kAllSteps && comparedRun() < 0 && !r.spans.empty()) {
    m_stack->setCurrentWidget(m_canvas);
    m_canvas->setSpans(std::move(r.spans));
  } else if (shown.empty()) {
    loadSpans();  // the run had no spans before
  }
  updateStatus();
}

void TimelineView::setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  m_runIds = runIds;
  const bool sameStore = store == m_store;
  m_store = std::move(store);
  fillCompareChooser();
  const QSignalBlocker block(m_runCombo);
  m_runCombo->clear();
  const bool several = runIds.size() > 1;
  m_runLabelWidget->setVisible(several);
  m_runCombo->setVisible(several);
  if (!m_store) {
    m_run = -1;
    m_stepCombo->clear();
    showMessage(tr("No run store is open: use File > Open run store."));
    return;
  }
  if (runIds.empty()) {
    m_run = -1;
    m_stepCombo->clear();
    showMessage(tr("Select a run in the run browser to see its per-rank timeline."));
    return;
  }
  std::vector<moebench::RunInfo> infos;
  try {
    infos = m_store->list_runs();
  } catch (const std::exception& e) {
    m_run = -1;
    m_stepCombo->clear();
    showMessage(tr("Could not list the runs of %1: %2").arg(QString::fromStdString(m_store->path()), e.what()));
    return;
  }
  int keep = 0;
  for (size_t i = 0; i < runIds.size(); ++i) {
    QString label = tr("run #%1").arg(runIds[i]);
    for (const moebench::RunInfo& info : infos)
      if (info.id == runIds[i]) label = QStringLiteral("%1 (#%2)").arg(QString::fromStdString(info.name)).arg(info.id);
    m_runCombo->addItem(label, QVariant::fromValue<qlonglong>(runIds[i]));
    if (sameStore && runIds[i] == m_run) keep = int(i);
  }
  const bool sameRun = sameStore && runIds[size_t(keep)] == m_run;
  const int64_t previousStep = currentStep();
  m_runCombo->setCurrentIndex(keep);
  m_run = runIds[size_t(keep)];
  m_runLabel = m_runCombo->itemText(keep);
  loadRun(sameRun ? previousStep : kNoStep);
}

void TimelineView::loadRun(int64_t preferredStep) {
  std::vector<int64_t> steps;
  try {
    steps = m_store->steps_with(m_run, moebench::RecordTable::spans);
  } catch (const std::exception& e) {
    m_stepCombo->clear();
    showMessage(tr("Could not load the timeline of %1: %2").arg(m_runLabel, e.what()));
    return;
  }
  {
    const QSignalBlocker block(m_stepCombo);
    m_stepCombo->clear();
    if (!steps.empty()) {
      m_stepCombo->addItem(tr("all steps (%1)").arg(steps.size()), QVariant::fromValue<qlonglong>(kAllSteps));
      for (int64_t s : steps) m_stepCombo->addItem(tr("step %1").arg(s), QVariant::fromValue<qlonglong>(s));
      const int preferred = preferredStep == kNoStep ? -1 : m_stepCombo->findData(QVariant::fromValue<qlonglong>(preferredStep));
      m_stepCombo->setCurrentIndex(preferred >= 0 ? preferred : steps.size() <= size_t(kAllStepsByDefault) ? 0 : 1);
    }
  }
  if (steps.empty()) {
    showMessage(tr("%1 recorded no spans: there is no timeline to show.").arg(m_runLabel));
    return;
  }
  fillCompareSteps(currentStep());
  loadSpans();
}

int64_t TimelineView::comparedRun() const {
  const int i = m_compareCombo->currentIndex();
  return i < 0 ? -1 : m_compareCombo->itemData(i).toLongLong();
}

bool TimelineView::compareWith(int64_t runId) {
  const int i = m_compareCombo->findData(QVariant::fromValue<qlonglong>(runId));
  if (i < 0) return false;
  m_compareCombo->setCurrentIndex(i);
  return true;
}

void TimelineView::fillCompareChooser() {
  const int64_t keep = comparedRun();
  const QSignalBlocker block(m_compareCombo);
  m_compareCombo->clear();
  m_compareCombo->addItem(tr("(none)"), QVariant::fromValue<qlonglong>(-1));
  try {
    if (m_store)
      for (const moebench::RunInfo& info : m_store->list_runs())
        m_compareCombo->addItem(QStringLiteral("%1 (#%2) · %3")
                                    .arg(QString::fromStdString(info.name), QString::number(info.id),
                                         kindText(*m_store, info.id)),
                                QVariant::fromValue<qlonglong>(info.id));
  } catch (const std::exception&) {
    // the run list's own error is shown by setRuns; nothing to compare with
  }
  const int i = m_compareCombo->findData(QVariant::fromValue<qlonglong>(keep));
  m_compareCombo->setCurrentIndex(i >= 0 ? i : 0);
  fillCompareSteps(currentStep());  // hides its step selector when the comparison is gone
}

void TimelineView::fillCompareSteps(int64_t step) {
  const int64_t other = comparedRun();
  const QSignalBlocker block(m_compareStepCombo);
  m_compareStepCombo->clear();
  m_compareStepLabel->setVisible(other >= 0);
  m_compareStepCombo->setVisible(other >= 0);
  if (other < 0 || !m_store) return;
  std::vector<int64_t> steps;
  try {
    steps = m_store->steps_with(other, moebench::RecordTable::spans);
  } catch (const std::exception&) {
    return;  // loadSpans shows the run with no spans
  }
  if (steps.empty()) return;
  m_compareStepCombo->addItem(tr("all steps (%1)").arg(steps.size()), QVariant::fromValue<qlonglong>(kAllSteps));
  for (int64_t s : steps) m_compareStepCombo->addItem(tr("step %1").arg(s), QVariant::fromValue<qlonglong>(s));
  const int same = m_compareStepCombo->findData(QVariant::fromValue<qlonglong>(step));
  m_compareStepCombo->setCurrentIndex(same >= 0 ? same : 1);
}

QString TimelineView::runTitle(int64_t runId, const QComboBox* steps) const {
  const moebench::RunInfo info = m_store->find_run(std::to_string(runId));
  return QStringLiteral("#%1 %2 · %3 · %4")
      .arg(QString::number(runId), QString::fromStdString(info.name), kindText(*m_store, runId),
           steps->currentIndex() < 0 ? tr("no spans") : steps->currentText());
}

void TimelineView::loadSpans() {
  if (!m_store || m_run < 0 || m_stepCombo->currentIndex() < 0) return;
  const int64_t step = currentStep();
  try {
    std::vector<moebench::SpanRow> spans =
        step == kAllSteps ? m_store->spans(m_run) : m_store->spans(m_run, step, step);
    if (spans.empty()) {
      showMessage(tr("%1 has no spans in %2.").arg(m_runLabel, m_stepCombo->currentText()));
      return;
    }
    m_stack->setCurrentWidget(m_canvas);
    const int64_t other = comparedRun();
    if (other < 0) {
      m_canvas->setSpans(std::move(spans));
      return;
    }
    const int64_t otherStep =
        m_compareStepCombo->currentIndex() < 0 ? kNoStep : m_compareStepCombo->currentData().toLongLong();
    std::vector<moebench::SpanRow> otherSpans;
    if (otherStep == kAllSteps) otherSpans = m_store->spans(other);
    else if (otherStep != kNoStep) otherSpans = m_store->spans(other, otherStep, otherStep);
    std::vector<TimelineCanvas::Track> tracks(2);
    tracks[0] = {runTitle(m_run, m_stepCombo), std::move(spans)};
    tracks[1] = {runTitle(other, m_compareStepCombo), std::move(otherSpans)};
    m_canvas->setTracks(std::move(tracks));
  } catch (const std::exception& e) {
    showMessage(tr("Could not load the spans of %1 (%2): %3").arg(m_runLabel, m_stepCombo->currentText(), e.what()));
  }
}

void TimelineView::updateStatus() {
  if (m_stack->currentWidget() != m_canvas || m_canvas->spans().empty()) {
    m_status->clear();
    return;
  }
  namespace tg = moebench::gui;
  const tg::TimeAxis& a = m_canvas->axis();
  const QString compared = m_canvas->isStacked()
                               ? tr(" · compared with %1 spans below").arg(m_canvas->spans(1).size())
                               : QString();
  m_status->setText(tr("%1 spans · %2 ranks · %3 streams · visible %4 – %5 (%6) of %7 – %8%9")
                        .arg(m_canvas->spans().size())
                        .arg(m_canvas->laneLayout().laneCount())
                        .arg(m_canvas->laneLayout().subLaneCount())
                        .arg(tg::formatTimeMs(a.t0), tg::formatTimeMs(a.t1), tg::formatDuration(a.span()),
                             tg::formatTimeMs(m_canvas->dataStart()), tg::formatTimeMs(m_canvas->dataEnd()),
                             compared));
}
