#include "phasebreakdownview.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QtConcurrent/QtConcurrentRun>
#include <QChartView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHorizontalStackedBarSeries>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <exception>
#include <set>
#include <tuple>

#include "models/phasebreakdownmodel.h"
#include "models/phaserunsmodel.h"
#include "models/timelinegeometry.h"
#include "widgets/chartclear.h"

namespace {
// A row of the chart across runs: layers first (ascending), then "other", then "whole step".
using RowKey = std::pair<int, int>;  // (kind, layer)
RowKey keyOf(const PhaseBreakdownModel& m, int row) { return {int(m.rowKind(row)), m.layerAt(row)}; }
}  // namespace

PhaseBreakdownView::PhaseBreakdownView(QWidget* parent)
    : RunPanelsView(tr("Select runs in the run browser to see where their step time goes."), false, parent) {
  m_runsModel = new PhaseRunsModel(this);
  connect(&m_live, &QFutureWatcher<std::vector<LiveRun>>::finished, this, [this] { applyLive(m_live.result()); });
  auto* page = new QWidget;
  auto* layout = new QVBoxLayout(page);
  layout->setContentsMargins(0, 0, 0, 0);
  m_chart = new QChartView(new QChart, page);
  m_chart->setObjectName("phaseChart");
  m_chart->setRenderHint(QPainter::Antialiasing);
  m_chart->setMinimumHeight(220);
  auto* scroll = new QScrollArea(page);
  scroll->setObjectName("phaseChartScroll");
  scroll->setWidgetResizable(true);
  scroll->setWidget(m_chart);
  m_table = new QTableView(page);
  m_table->setObjectName("phaseTable");
  m_table->setModel(m_runsModel);
  m_table->setMinimumHeight(80);
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setStretchLastSection(true);
  auto* split = new QSplitter(Qt::Vertical, page);
  split->addWidget(scroll);
  split->addWidget(m_table);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);
  split->setSizes({440, 160});
  m_problemsLabel = new QLabel(page);
  m_problemsLabel->setObjectName("problems");
  m_problemsLabel->setWordWrap(true);
  m_problemsLabel->setTextFormat(Qt::RichText);
  m_problemsLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_problemsLabel->hide();
  m_note = new QLabel(page);
  m_note->setObjectName("note");
  m_note->setWordWrap(true);
  layout->addWidget(split, 1);
  layout->addWidget(m_problemsLabel);
  layout->addWidget(m_note);
  setContent(page);
}

PhaseBreakdownView::~PhaseBreakdownView() { m_live.waitForFinished(); }

QString PhaseBreakdownView::noteText() const { return m_note->text(); }

QString PhaseBreakdownView::problemsText() const {
  QStringList lines;
  for (int64_t id : shownRuns())
    if (const auto it = m_problems.find(id); it != m_problems.end())
      lines << tr("%1: %2").arg(runTitle(id), it->second);
  return lines.join(u'\n');
}

QString PhaseBreakdownView::chartTitle() const { return m_chart->chart()->title(); }

QStringList PhaseBreakdownView::categoryLabels() const { return m_plainCategories; }

QString PhaseBreakdownView::barLabel(int64_t runId, const QString& rowLabel) const {
  return tr("%1 · %2").arg(rowLabel, runTitle(runId));
}

PhaseBreakdownModel* PhaseBreakdownView::model(int64_t runId) const {
  const auto it = m_models.find(runId);
  return it == m_models.end() ? nullptr : it->second;
}

void PhaseBreakdownView::clearRuns() {
  m_runsModel->clear();
  for (auto& [id, m] : m_models) delete m;
  m_models.clear();
  m_problems.clear();
  m_note->clear();
  m_problemsLabel->clear();
  m_problemsLabel->hide();
  updateChart();
}

void PhaseBreakdownView::loadRuns() {
  for (int64_t id : runs()) {
    auto* m = new PhaseBreakdownModel(this);
    try {
      m->setRun(store(), id);
      if (m->rowCount() == 0) m_problems[id] = m->emptyReason();
    } catch (const std::exception& e) {
      m->clear();
      m_problems[id] = tr("cannot show run %1: %2").arg(id).arg(QString::fromUtf8(e.what()));
    }
    m_models[id] = m;
  }
  shownRunsChanged();
}

bool PhaseBreakdownView::refreshLive(std::shared_ptr<moebench::RunStore> s, const std::vector<int64_t>& ids) {
  if (m_live.isRunning() || !s || s != store() || ids != runs()) return false;
  m_live.setFuture(QtConcurrent::run([s, ids] {
    std::vector<LiveRun> out;
    for (int64_t id : ids) {
      LiveRun r;
      r.id = id;
      try {
        r.data = PhaseBreakdownModel::read(*s, id);
      } catch (const std::exception& e) {
        r.error = QString::fromUtf8(e.what());
      }
      out.push_back(std::move(r));
    }
    return out;
  }));
  return true;
}

void PhaseBreakdownView::applyLive(const std::vector<LiveRun>& read) {
  for (const LiveRun& r : read) {
    const auto it = m_models.find(r.id);
    if (it == m_models.end()) continue;  // deselected meanwhile
    m_problems.erase(r.id);
    if (!r.error.isEmpty()) {
      it->second->clear();
      m_problems[r.id] = tr("cannot show run %1: %2").arg(r.id).arg(r.error);
      continue;
    }
    it->second->setData(r.data);
    if (it->second->rowCount() == 0) m_problems[r.id] = it->second->emptyReason();
  }
  shownRunsChanged();
}

void PhaseBreakdownView::shownRunsChanged() {
  std::vector<PhaseRunsModel::Run> table;
  QStringList notes, problems;
  for (int64_t id : shownRuns()) {
    const PhaseBreakdownModel* m = m_models.at(id);
    const QString title = runTitle(id);
    if (const auto it = m_problems.find(id); it != m_problems.end()) {
      problems << tr("<span style=\"color:%1\"><b>%2</b></span>: %3")
                      .arg(runColour(id).name(), title.toHtmlEscaped(), it->second.toHtmlEscaped());
      continue;
    }
    table.push_back({id, title, runColour(id), m});
    notes << tr("%1 over %2 (step, rank) pairs%3")
                 .arg(title)
                 .arg(m->samples())
                 .arg(m->warmupExcluded() ? tr(", the first step left out as warm-up") : QString());
  }
  m_runsModel->setRuns(std::move(table));
  m_problemsLabel->setText(problems.isEmpty() ? QString() : tr("No bars for: %1").arg(problems.join(QStringLiteral("; "))));
  m_problemsLabel->setVisible(!problems.isEmpty());
  m_note->setText(notes.isEmpty()
                      ? QString()
                      : tr("Mean ms per rank and step: %1. Layer rows: each block's spans labelled with its layer "
                           "(MoE and dense blocks alike: its compute, and its communication: the MoE exchanges "
                           "and the all-reduce of its gradient bucket); \"other\": the rest of the step's compute "
                           "and communication (embeddings, head, optimizer, gradient norm, unlabelled gradient "
                           "buckets, waits for the gradient sync); idle = step - compute - comm. Measured and "
                           "predicted runs book the same tasks to the same rows.")
                            .arg(notes.join(QStringLiteral("; "))));
  updateChart();
  if (m_runsModel->rowCount() == 0 && !shownRuns().empty()) {
    QStringList plain;
    for (int64_t id : shownRuns())
      if (const auto it = m_problems.find(id); it != m_problems.end()) plain << tr("%1: %2").arg(runTitle(id), it->second);
    showMessage(plain.join(u'\n'));
  }
}

void PhaseBreakdownView::updateChart() {
  QChart* chart = m_chart->chart();
  clearChart(chart);
  m_plainCategories.clear();
  // the rows over the shown runs that have any
  std::vector<int64_t> ids;
  std::set<RowKey> keys;
  for (int64_t id : shownRuns()) {
    const auto it = m_models.find(id);
    if (it == m_models.end() || it->second->rowCount() == 0) continue;
    ids.push_back(id);
    for (int r = 0; r < it->second->rowCount(); ++r) keys.insert(keyOf(*it->second, r));
  }
  if (ids.empty()) {
    chart->setTitle(QString());
    m_chart->setMinimumSize(0, 220);
    return;
  }
  chart->setTitle(ids.size() == 1 ? tr("Time split of %1 (mean ms per rank and step)").arg(runTitle(ids.front()))
                                   : tr("Time split of %1 runs (mean ms per rank and step), a bar per run").arg(ids.size()));
  struct Part {
    PhaseBreakdownModel::Column column;
    QString name;
    QColor color;
  };
  const Part parts[] = {
      {PhaseBreakdownModel::ComputeColumn, tr("compute"), moebench::gui::categoryColor("compute")},
      {PhaseBreakdownModel::CommColumn, tr("comm"), moebench::gui::categoryColor("comm")},
      {PhaseBreakdownModel::IdleColumn, tr("idle"), QColor(0xc8, 0xc8, 0xc8)},
  };
  // Bars top to bottom: per row key, a bar per run; a blank bar between groups.
  struct Bar {
    QString plain;
    double ms[3] = {0, 0, 0};
  };
  std::vector<Bar> bars;
  int blanks = 0;
  double lo = 0, hi = 0;
  for (const RowKey& key : keys) {
    if (!bars.empty() && ids.size() > 1) {
      Bar blank;
      blank.plain = QString(++blanks, QChar(0x200B));  // unique, drawn as nothing
      bars.push_back(blank);
    }
    for (int64_t id : ids) {
      const PhaseBreakdownModel& m = *m_models.at(id);
      int row = -1;
      for (int r = 0; r < m.rowCount() && row < 0; ++r)
        if (keyOf(m, r) == key) row = r;
      if (row < 0) continue;
      Bar bar;
      bar.plain = barLabel(id, m.rowLabel(row));
      double pos = 0, neg = 0;
      for (int p = 0; p < 3; ++p) {
        const double v = m.valueMs(row, parts[p].column);
        bar.ms[p] = std::isfinite(v) ? v : 0.0;
        (bar.ms[p] >= 0 ? pos : neg) += bar.ms[p];
      }
      hi = std::max(hi, pos);
      lo = std::min(lo, neg);
      bars.push_back(bar);
    }
  }
  // Bar categories run bottom-up, so the bars go in reversed (QBarCategoryAxis::setReverse is
  // not honoured by bar series in Qt 6.4).
  auto* series = new QHorizontalStackedBarSeries;
  QStringList categories;
  for (auto it = bars.rbegin(); it != bars.rend(); ++it) {
    // Plain text: Qt Charts elides a rich-text category label to "..." (seen with Qt 6.4); the
    // run's colour is on its check box and in the table.
    categories << it->plain;
    m_plainCategories << (it->plain.startsWith(QChar(0x200B)) ? QString() : it->plain);
  }
  for (int p = 0; p < 3; ++p) {
    auto* set = new QBarSet(parts[p].name);
    set->setColor(parts[p].color);
    set->setBorderColor(parts[p].color.darker(130));
    for (auto it = bars.rbegin(); it != bars.rend(); ++it) set->append(it->ms[p]);
    series->append(set);
  }
  series->setBarWidth(0.75);
  chart->addSeries(series);
  auto* rowsAxis = new QBarCategoryAxis;
  rowsAxis->append(categories);
  auto* msAxis = new QValueAxis;
  msAxis->setTitleText(tr("ms per step (mean over ranks)"));
  msAxis->setRange(lo, hi > lo ? hi * 1.05 : lo + 1);
  msAxis->applyNiceNumbers();
  chart->addAxis(rowsAxis, Qt::AlignLeft);
  chart->addAxis(msAxis, Qt::AlignBottom);
  series->attachAxis(rowsAxis);
  series->attachAxis(msAxis);
  chart->legend()->setAlignment(Qt::AlignBottom);
  // Room for every label and the title, whole: the chart grows and its scroll area scrolls
  // (Qt Charts elides or drops labels that do not fit).
  const QFontMetricsF labels(rowsAxis->labelsFont());
  qreal widest = 0;
  for (const QString& c : m_plainCategories) widest = std::max(widest, labels.horizontalAdvance(c));
  const QFontMetricsF title(chart->titleFont());
  const int width = int(std::ceil(std::max(widest + 420, title.horizontalAdvance(chart->title()) + 80)));
  // Qt Charts elides every category label to "..." once a row is not clearly taller than a label
  // (seen with Qt 6.4: 27 rows of 22.5 px for 17 px labels): rows of a label and 14 px.
  const qreal rowHeight = std::max<qreal>(labels.height() + 14, 28);
  m_chart->setMinimumSize(width, int(std::ceil(170 + rowHeight * categories.size())));
}
