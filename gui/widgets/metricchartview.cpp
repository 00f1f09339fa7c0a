#include "metricchartview.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QLineSeries>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <exception>
#include <set>

#include "models/metricseriesmodel.h"
#include "moebench/store/run_store.h"
#include "widgets/chartclear.h"

namespace {
// Listed first, in this order, when the runs have them; other keys follow by name.
const char* const kPreferred[] = {"loss", "aux_loss", "step_ms", "tokens_per_s", "comm_ms", "val_loss", "grad_norm"};
}  // namespace

MetricChartView::MetricChartView(QWidget* parent) : QWidget(parent) {
  m_series = new MetricSeriesModel(this);
  m_metric = new QComboBox(this);
  m_metric->setObjectName("metricKey");
  m_chart = new QChartView(new QChart, this);
  m_chart->setRenderHint(QPainter::Antialiasing);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_metric);
  layout->addWidget(m_chart, 1);
  connect(m_metric, &QComboBox::currentTextChanged, this, &MetricChartView::updateChart);
  updateKeys();
}

void MetricChartView::setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  m_store = std::move(store);
  m_runIds = runIds;
  updateKeys();
  updateChart();
}

void MetricChartView::setMetric(const QString& key) {
  if (m_metric->findText(key) < 0) m_metric->addItem(key);
  m_metric->setCurrentText(key);
}

QString MetricChartView::metric() const { return m_metric->currentText(); }

void MetricChartView::updateKeys() {
  std::set<std::string> keys;
  try {
    if (m_store)
      for (int64_t id : m_runIds)
        for (const std::string& k : m_store->metric_keys(id)) keys.insert(k);
  } catch (const std::exception&) {
    // updateChart reports the error
  }
  QStringList items;
  for (const char* k : kPreferred)
    if (keys.empty() || keys.erase(k)) items << QString::fromUtf8(k);
  for (const std::string& k : keys) items << QString::fromStdString(k);
  const QString current = m_metric->currentText();
  const QSignalBlocker block(m_metric);
  m_metric->clear();
  m_metric->addItems(items);
  m_metric->setCurrentText(items.contains(current) ? current : items.value(0));
}

void MetricChartView::updateChart() {
  QChart* chart = m_chart->chart();
  clearChart(chart);
  const QString key = m_metric->currentText();
  if (!m_store || m_runIds.empty()) {
    m_series->clear();
    chart->setTitle(tr("Select runs to plot %1").arg(key));
    return;
  }
  try {
    m_series->setRuns(m_store, m_runIds, key);
  } catch (const std::exception& e) {
    m_series->clear();
    chart->setTitle(tr("Cannot read %1: %2").arg(key, QString::fromUtf8(e.what())));
    return;
  }
  chart->setTitle(key);
  auto* x = new QValueAxis;
  auto* y = new QValueAxis;
  x->setTitleText(tr("step"));
  y->setTitleText(key);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  double ymin = INFINITY, ymax = -INFINITY, xmax = 0;
  for (int c = 0; c < m_series->columnCount(); ++c) {
    auto* s = new QLineSeries;
    s->setName(m_series->headerData(c, Qt::Horizontal).toString());
    for (int r = 0; r < m_series->rowCount(); ++r) {
      const std::optional<double> v = m_series->valueAt(r, c);
      if (!v || !std::isfinite(*v)) continue;
      const double step = double(m_series->stepAt(r));
      s->append(step, *v);
      ymin = std::min(ymin, *v), ymax = std::max(ymax, *v), xmax = std::max(xmax, step);
    }
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  }
  if (ymin <= ymax) {
    x->setRange(0, std::max(1.0, xmax));
    y->setRange(ymin, ymin == ymax ? ymin + 1 : ymax);
    x->applyNiceNumbers();
    y->applyNiceNumbers();
  } else {
    chart->setTitle(tr("No %1 values in the selected runs").arg(key));
  }
}
