#include "phasebreakdownview.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHorizontalStackedBarSeries>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

#include "models/phasebreakdownmodel.h"
#include "models/timelinegeometry.h"
#include "widgets/chartclear.h"

PhaseBreakdownView::PhaseBreakdownView(QWidget* parent)
    : SingleRunView(tr("Select a run in the run browser to see where its step time goes."), parent) {
  m_model = new PhaseBreakdownModel(this);
  toolbar()->addStretch(1);

  auto* page = new QWidget;
  auto* layout = new QVBoxLayout(page);
  layout->setContentsMargins(0, 0, 0, 0);
  m_chart = new QChartView(new QChart, page);
  m_chart->setRenderHint(QPainter::Antialiasing);
  m_chart->setMinimumHeight(220);
  m_table = new QTableView(page);
  m_table->setModel(m_model);
  m_table->setMinimumHeight(80);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  m_table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  auto* split = new QSplitter(Qt::Vertical, page);
  split->addWidget(m_chart);
  split->addWidget(m_table);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);
  m_note = new QLabel(page);
  m_note->setObjectName("note");
  m_note->setWordWrap(true);
  layout->addWidget(split, 1);
  layout->addWidget(m_note);
  setContent(page);
}

PhaseBreakdownView::~PhaseBreakdownView() = default;

QString PhaseBreakdownView::noteText() const { return m_note->text(); }

void PhaseBreakdownView::loadRun(int64_t runId) {
  m_model->setRun(store(), runId);
  if (m_model->rowCount() == 0) {
    updateChart();
    showMessage(m_model->emptyReason());
    return;
  }
  m_note->setText(tr("Mean ms per rank and step over %1 (step, rank) pairs%2. Layer rows: the layer's compute "
                     "spans and the compute thread's waits on its communication; \"other\": the rest of the "
                     "step's compute and waits (dense layers, optimizer, gradient sync); idle = step - compute "
                     "- comm.")
                      .arg(m_model->samples())
                      .arg(m_model->warmupExcluded() ? tr(", the first step left out as warm-up") : QString()));
  updateChart();
}

void PhaseBreakdownView::clearRun() {
  m_model->clear();
  m_note->clear();
  updateChart();
}

void PhaseBreakdownView::updateChart() {
  QChart* chart = m_chart->chart();
  clearChart(chart);
  const int rows = m_model->rowCount();
  if (rows == 0) {
    chart->setTitle(QString());
    return;
  }
  chart->setTitle(tr("Time split of %1 (mean ms per rank and step)").arg(m_model->runName()));
  auto* series = new QHorizontalStackedBarSeries;
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
  // Bar categories run bottom-up, so the rows go in reversed: "layer 0" on top, "whole step" at
  // the bottom (QBarCategoryAxis::setReverse is not honoured by bar series in Qt 6.4).
  QStringList categories;
  for (int r = rows - 1; r >= 0; --r) categories << m_model->rowLabel(r);
  double lo = 0, hi = 0;
  for (const Part& part : parts) {
    auto* set = new QBarSet(part.name);
    set->setColor(part.color);
    set->setBorderColor(part.color.darker(130));
    for (int r = rows - 1; r >= 0; --r) {
      const double v = m_model->valueMs(r, part.column);
      set->append(std::isfinite(v) ? v : 0.0);
    }
    series->append(set);
  }
  for (int r = 0; r < rows; ++r) {
    double pos = 0, neg = 0;
    for (const Part& part : parts) {
      const double v = m_model->valueMs(r, part.column);
      if (std::isfinite(v)) (v >= 0 ? pos : neg) += v;
    }
    hi = std::max(hi, pos);
    lo = std::min(lo, neg);
  }
  series->setBarWidth(0.6);
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
  // enough height for every row's label (Qt Charts drops labels that do not fit)
  m_chart->setMinimumHeight(std::min(900, 160 + 28 * rows));
  chart->legend()->setAlignment(Qt::AlignBottom);
}
