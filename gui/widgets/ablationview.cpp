#include "ablationview.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <exception>

#include "models/ablationmodel.h"
#include "moebench/store/run_store.h"
#include "widgets/chartclear.h"

AblationView::AblationView(QWidget* parent) : QWidget(parent) {
  m_model = new AblationModel(this);
  m_controls = new QWidget(this);
  auto* bar = new QHBoxLayout(m_controls);
  bar->setContentsMargins(0, 0, 0, 0);
  m_metric = new QComboBox(m_controls);
  m_metric->setObjectName("metricChooser");
  m_metric->addItem(tr("ms/step"), int(StepMs));
  m_metric->addItem(tr("tokens/s"), int(TokensPerS));
  m_baseline = new QComboBox(m_controls);
  m_baseline->setObjectName("baselineChooser");
  m_baseline->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  bar->addWidget(new QLabel(tr("Metric:"), m_controls));
  bar->addWidget(m_metric);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Baseline:"), m_controls));
  bar->addWidget(m_baseline);
  bar->addStretch(1);

  m_stack = new QStackedWidget(this);
  m_message = new QLabel(m_stack);
  m_message->setObjectName("message");
  m_message->setAlignment(Qt::AlignCenter);
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* page = new QSplitter(Qt::Vertical, m_stack);
  m_chart = new QChartView(new QChart, page);
  m_chart->setRenderHint(QPainter::Antialiasing);
  m_chart->setMinimumHeight(220);
  m_table = new QTableView(page);
  m_table->setModel(m_model);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setStretchLastSection(true);
  page->addWidget(m_chart);
  page->addWidget(m_table);
  page->setStretchFactor(0, 3);
  page->setStretchFactor(1, 1);
  m_stack->addWidget(m_message);
  m_stack->addWidget(page);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_controls);
  layout->addWidget(m_stack, 1);

  connect(m_metric, &QComboBox::currentIndexChanged, this, &AblationView::updateChart);
  connect(m_baseline, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0) return;
    try {
      m_model->setBaseline(m_baseline->itemData(i).toLongLong());
    } catch (const std::exception& e) {
      showMessage(tr("Cannot use that baseline: %1").arg(QString::fromUtf8(e.what())));
    }
  });
  connect(m_model, &AblationModel::baselineChanged, this, &AblationView::updateChart);
  setRuns(nullptr, {});
}

AblationView::~AblationView() = default;

void AblationView::showMessage(const QString& text) {
  m_message->setText(text);
  m_stack->setCurrentWidget(m_message);
}

QString AblationView::message() const { return m_stack->currentWidget() == m_message ? m_message->text() : QString(); }

void AblationView::setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  m_store = std::move(store);
  {
    const QSignalBlocker block(m_baseline);
    m_baseline->clear();
  }
  if (!m_store || runIds.empty()) {
    m_model->clear();
    updateChart();
    m_controls->setVisible(false);
    showMessage(m_store ? tr("Select the runs of an experiment (for example the variants made by `moebench ablate`) "
                             "to compare them.")
                        : tr("Open a run store (File > Open) and select the runs of an experiment."));
    return;
  }
  try {
    m_model->setRuns(m_store, runIds);
  } catch (const std::exception& e) {
    m_model->clear();
    updateChart();
    m_controls->setVisible(false);
    showMessage(tr("Cannot compare the selected runs: %1").arg(QString::fromUtf8(e.what())));
    return;
  }
  {
    const QSignalBlocker block(m_baseline);
    for (int r = 0; r < m_model->rowCount(); ++r)
      m_baseline->addItem(tr("%1 (%2)").arg(m_model->labelAt(r), m_model->runNameAt(r)), qint64(m_model->runIdAt(r)));
    m_baseline->setCurrentIndex(m_model->baselineRow());
  }
  m_controls->setVisible(true);
  m_stack->setCurrentIndex(1);
  updateChart();
}

void AblationView::setMetric(Metric metric) { m_metric->setCurrentIndex(m_metric->findData(int(metric))); }

AblationView::Metric AblationView::metric() const { return Metric(m_metric->currentData().toInt()); }

bool AblationView::setBaseline(int64_t runId) {
  const int i = m_baseline->findData(qint64(runId));
  if (i < 0) return false;
  m_baseline->setCurrentIndex(i);
  return true;
}

QStringList AblationView::categoryLabels() const {
  for (QAbstractAxis* axis : m_chart->chart()->axes(Qt::Horizontal))
    if (auto* cats = qobject_cast<QBarCategoryAxis*>(axis)) return cats->categories();
  return {};
}

void AblationView::updateChart() {
  QChart* chart = m_chart->chart();
  clearChart(chart);
  m_speedups.clear();
  const int rows = m_model->rowCount();
  if (rows == 0) {
    chart->setTitle(QString());
    return;
  }
  const Metric which = metric();
  const QString name = which == StepMs ? tr("ms/step") : tr("tokens/s");
  chart->setTitle(tr("%1 per variant (mean over steps; speedup vs %2 under each bar)")
                      .arg(name, m_model->labelAt(m_model->baselineRow())));
  auto* set = new QBarSet(name);
  set->setLabelColor(palette().color(QPalette::WindowText));
  QStringList categories;
  double hi = 0;
  for (int r = 0; r < rows; ++r) {
    const double v = which == StepMs ? m_model->stepMsAt(r) : m_model->tokensPerSAt(r);
    set->append(std::isfinite(v) ? v : 0.0);
    if (std::isfinite(v)) hi = std::max(hi, v);
    const double s = m_model->speedupAt(r);
    const QString speedup = std::isfinite(s) ? AblationModel::formatSpeedup(s) : tr("no ms/step");
    m_speedups << speedup;
    QString label = m_model->labelAt(r);
    // Category labels must be unique: two runs with the same label get their run id.
    for (int o = 0; o < rows; ++o)
      if (o != r && m_model->labelAt(o) == label) {
        label += tr(" #%1").arg(m_model->runIdAt(r));
        break;
      }
    categories << label + QLatin1Char('\n') + speedup + (r == m_model->baselineRow() ? tr(" (baseline)") : QString());
  }
  auto* series = new QBarSeries;
  series->append(set);
  series->setLabelsVisible(true);
  series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
  series->setLabelsFormat(QStringLiteral("@value"));
  series->setLabelsPrecision(which == StepMs ? 4 : 6);
  chart->addSeries(series);
  auto* x = new QBarCategoryAxis;
  x->append(categories);
  auto* y = new QValueAxis;
  y->setTitleText(name);
  y->setRange(0, hi > 0 ? hi * 1.15 : 1);
  y->applyNiceNumbers();
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  chart->legend()->setVisible(false);
}
