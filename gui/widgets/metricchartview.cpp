#include "metricchartview.h"

#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QListWidget>
#include <QLogValueAxis>
#include <QPushButton>
#include <QSignalBlocker>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cmath>
#include <exception>
#include <set>

#include "models/metricunits.h"
#include "models/runcolors.h"
#include "models/seriesmath.h"
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
  m_smooth = new QDoubleSpinBox(this);
  m_smooth->setObjectName("smoothing");
  m_smooth->setRange(0, 0.99);
  m_smooth->setSingleStep(0.1);
  m_smooth->setDecimals(2);
  m_smooth->setToolTip(tr("Exponential moving average weight (TensorBoard's smoothing); 0 shows the raw values"));
  m_log = new QCheckBox(tr("Log scale"), this);
  m_fit = new QPushButton(tr("Fit"), this);
  m_fit->setToolTip(tr("Show every value again (drag a rectangle on the chart to zoom)"));
  m_chart = new QChartView(new QChart, this);
  m_chart->setRenderHint(QPainter::Antialiasing);
  m_chart->setRubberBand(QChartView::RectangleRubberBand);
  m_chart->chart()->legend()->hide();
  m_legend = new QListWidget(this);
  m_legend->setObjectName("metricLegend");
  m_legend->setMaximumWidth(260);
  m_legend->setWordWrap(true);
  m_legend->setToolTip(tr("Untick a run to hide its line"));

  auto* bar = new QHBoxLayout;
  bar->addWidget(m_metric, 1);
  bar->addWidget(new QLabel(tr("Smoothing"), this));
  bar->addWidget(m_smooth);
  bar->addWidget(m_log);
  bar->addWidget(m_fit);
  auto* body = new QHBoxLayout;
  body->addWidget(m_chart, 1);
  body->addWidget(m_legend);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addLayout(body, 1);
  connect(m_metric, &QComboBox::currentTextChanged, this, [this] {
    if (!m_store || m_runIds.empty()) return updateChart();
    apply(load(*m_store, m_runIds, m_metric->currentText()));
  });
  connect(m_smooth, &QDoubleSpinBox::valueChanged, this, &MetricChartView::updateChart);
  connect(m_log, &QCheckBox::toggled, this, &MetricChartView::updateChart);
  connect(m_fit, &QPushButton::clicked, this, &MetricChartView::fit);
  connect(m_legend, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    const int64_t id = item->data(Qt::UserRole).toLongLong();
    const bool visible = item->checkState() == Qt::Checked;
    if (visible == !m_hidden.count(id)) return;
    if (visible) m_hidden.erase(id);
    else m_hidden.insert(id);
    updateChart();
  });
  connect(&m_watcher, &QFutureWatcher<Loaded>::finished, this, [this] {
    Loaded loaded = m_watcher.result();
    m_store = m_pendingStore;
    apply(std::move(loaded));
  });
  updateKeys({});
  updateChart();
}

MetricChartView::~MetricChartView() { m_watcher.waitForFinished(); }

MetricChartView::Loaded MetricChartView::load(const moebench::RunStore& store, const std::vector<int64_t>& runIds,
                                              const QString& key) {
  Loaded out;
  try {
    std::set<std::string> keys;
    for (int64_t id : runIds)
      for (const std::string& k : store.metric_keys(id)) keys.insert(k);
    for (const auto& k : keys) out.keys.push_back(QString::fromStdString(k));
    out.data = MetricSeriesModel::read(store, runIds, key);
  } catch (const std::exception& e) {
    out.error = QString::fromUtf8(e.what());
    out.data.key = key;
  }
  return out;
}

void MetricChartView::setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  m_store = std::move(store);
  m_runIds = runIds;
  if (!m_store || m_runIds.empty()) {
    m_series->clear();
    updateKeys({});
    updateChart();
    return;
  }
  apply(load(*m_store, m_runIds, m_metric->currentText()));
}

bool MetricChartView::refreshLive(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  if (m_watcher.isRunning() || !store || runIds.empty()) return false;
  m_runIds = runIds;
  m_pendingStore = store;
  const QString key = m_metric->currentText();
  m_watcher.setFuture(QtConcurrent::run([store, runIds, key] { return load(*store, runIds, key); }));
  return true;
}

void MetricChartView::apply(Loaded loaded) {
  updateKeys(loaded.keys);
  if (!loaded.error.isEmpty()) {
    m_series->clear();
    clearChart(m_chart->chart());
    m_chart->chart()->setTitle(tr("Cannot read %1: %2").arg(loaded.data.key, loaded.error));
    return;
  }
  if (loaded.data.key != m_metric->currentText()) {  // the key changed while reading
    loaded.data = MetricSeriesModel::read(*m_store, m_runIds, m_metric->currentText());
  }
  m_series->setData(m_store, std::move(loaded.data));
  updateChart();
}

void MetricChartView::setMetric(const QString& key) {
  if (m_metric->findText(key) < 0) m_metric->addItem(key);
  m_metric->setCurrentText(key);
}

QString MetricChartView::metric() const { return m_metric->currentText(); }
void MetricChartView::setSmoothing(double weight) { m_smooth->setValue(weight); }
void MetricChartView::setLogScale(bool on) { m_log->setChecked(on); }

void MetricChartView::setRunVisible(int64_t runId, bool visible) {
  for (int i = 0; i < m_legend->count(); ++i)
    if (m_legend->item(i)->data(Qt::UserRole).toLongLong() == runId)
      m_legend->item(i)->setCheckState(visible ? Qt::Checked : Qt::Unchecked);
}

void MetricChartView::updateKeys(const std::vector<QString>& found) {
  std::set<QString> keys(found.begin(), found.end());
  QStringList items;
  for (const char* k : kPreferred)
    if (keys.empty() || keys.erase(QString::fromUtf8(k))) items << QString::fromUtf8(k);
  for (const QString& k : keys) items << k;
  const QString current = m_metric->currentText();
  const QSignalBlocker block(m_metric);
  m_metric->clear();
  m_metric->addItems(items);
  if (!current.isEmpty() && !items.contains(current)) m_metric->addItem(current);
  m_metric->setCurrentText(current.isEmpty() ? items.value(0) : current);
}

QString MetricChartView::yTitle() const {
  const auto axes = m_chart->chart()->axes(Qt::Vertical);
  return axes.isEmpty() ? QString() : axes.first()->titleText();
}

std::pair<double, double> MetricChartView::yRange() const { return m_range; }

QString MetricChartView::hoverText(int column, int64_t step) const {
  for (int r = 0; r < m_series->rowCount(); ++r) {
    if (m_series->stepAt(r) != step) continue;
    const auto v = m_series->valueAt(r, column);
    if (!v) return {};
    const auto unit = moebench::gui::metricUnit(m_series->metricKey(), m_series->isPredicted(column));
    return tr("#%1 %2\nstep %3: %4")
        .arg(m_series->runIdAt(column))
        .arg(m_series->headerData(column, Qt::Horizontal).toString())
        .arg(step)
        .arg(moebench::gui::formatMetricValue(unit.kind, *v));
  }
  return {};
}

void MetricChartView::fit() {
  QChart* chart = m_chart->chart();
  chart->zoomReset();
  const auto axes = chart->axes(Qt::Vertical);
  if (axes.isEmpty()) return;
  if (auto* v = qobject_cast<QValueAxis*>(axes.first())) {
    v->setRange(m_range.first, m_range.second);
    v->applyNiceNumbers();
  } else if (auto* l = qobject_cast<QLogValueAxis*>(axes.first())) {
    l->setRange(m_range.first, m_range.second);
  }
}

void MetricChartView::updateChart() {
  QChart* chart = m_chart->chart();
  clearChart(chart);
  const QString key = m_metric->currentText();
  if (!m_store || m_runIds.empty() || m_series->columnCount() == 0) {
    chart->setTitle(tr("Select runs to plot %1").arg(key));
    const QSignalBlocker block(m_legend);
    m_legend->clear();
    return;
  }
  bool anyPredicted = false, allPredicted = true;
  for (int c = 0; c < m_series->columnCount(); ++c) {
    anyPredicted = anyPredicted || m_series->isPredicted(c);
    allPredicted = allPredicted && m_series->isPredicted(c);
  }
  moebench::gui::MetricUnit unit = moebench::gui::metricUnit(key, allPredicted);
  if (anyPredicted && !allPredicted && unit.kind == moebench::gui::MetricKind::bytes)
    unit.title = tr("%1 per step: rank 0 (measured), all ranks (predicted)").arg(key);
  // Series per run: (step, value) of the finite values.
  std::vector<std::vector<std::pair<double, double>>> points(size_t(m_series->columnCount()));
  double maxAbs = 0;
  bool positive = true;
  for (int c = 0; c < m_series->columnCount(); ++c)
    for (int r = 0; r < m_series->rowCount(); ++r) {
      const std::optional<double> v = m_series->valueAt(r, c);
      if (!v || !std::isfinite(*v)) continue;
      points[size_t(c)].push_back({double(m_series->stepAt(r)), *v});
      maxAbs = std::max(maxAbs, std::fabs(*v));
      positive = positive && *v > 0;
    }
  const auto scale = moebench::gui::axisScale(unit.kind, maxAbs);
  const bool log = m_log->isChecked() && positive;
  m_log->setEnabled(positive);
  chart->setTitle(unit.title == key ? key : tr("%1 (%2)").arg(unit.title, key));
  auto* x = new QValueAxis;
  x->setTitleText(tr("step"));
  x->setLabelFormat(QStringLiteral("%d"));
  QAbstractAxis* y = nullptr;
  if (log) {
    auto* l = new QLogValueAxis;
    l->setLabelFormat(QStringLiteral("%g"));
    y = l;
  } else {
    y = new QValueAxis;
  }
  y->setTitleText(moebench::gui::scaledTitle(unit, scale));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);

  {
    const QSignalBlocker block(m_legend);
    m_legend->clear();
    for (int c = 0; c < m_series->columnCount(); ++c) {
      const int64_t id = m_series->runIdAt(c);
      QString label = tr("#%1 %2").arg(id).arg(m_series->headerData(c, Qt::Horizontal).toString());
      if (m_series->isPredicted(c)) label += tr(" (predicted)");
      auto* item = new QListWidgetItem(label, m_legend);
      item->setData(Qt::UserRole, qint64(id));
      item->setData(Qt::DecorationRole, moebench::gui::runColor(id));
      item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
      item->setCheckState(m_hidden.count(id) ? Qt::Unchecked : Qt::Checked);
    }
  }

  const double w = m_smooth->value();
  double xmax = 1;
  std::vector<std::vector<std::pair<double, double>>> shown;
  for (int c = 0; c < m_series->columnCount(); ++c) {
    const int64_t id = m_series->runIdAt(c);
    const auto& pts = points[size_t(c)];
    if (m_hidden.count(id)) continue;
    shown.push_back(pts);
    const QColor color = moebench::gui::runColor(id);
    auto add = [&](const std::vector<double>& values, QColor col, qreal width, bool hover) {
      auto* s = new QLineSeries;
      s->setName(m_series->headerData(c, Qt::Horizontal).toString());
      for (size_t i = 0; i < pts.size(); ++i) s->append(pts[i].first, values[i] / scale.divisor);
      QPen pen(col);
      pen.setWidthF(width);
      s->setPen(pen);
      chart->addSeries(s);
      s->attachAxis(x);
      s->attachAxis(y);
      if (hover)
        connect(s, &QLineSeries::hovered, this, [this, c](const QPointF& p, bool state) {
          if (state) QToolTip::showText(QCursor::pos(), hoverText(c, std::llround(p.x())), m_chart);
        });
    };
    std::vector<double> raw;
    for (const auto& p : pts) raw.push_back(p.second);
    if (w > 0) {
      QColor faint = color;
      faint.setAlpha(70);
      add(raw, faint, 1.0, false);
      add(moebench::gui::smoothEma(raw, w), color, 2.0, true);
    } else {
      add(raw, color, 2.0, true);
    }
    if (!pts.empty()) xmax = std::max(xmax, pts.back().first);
  }
  const auto range = moebench::gui::defaultRange(shown);
  if (!range) {
    chart->setTitle(tr("No %1 values in the selected runs").arg(key));
    return;
  }
  double lo = range->first / scale.divisor, hi = range->second / scale.divisor;
  if (lo == hi) hi = lo + (log ? lo : 1);
  if (!log) {
    const double pad = 0.05 * (hi - lo);
    lo -= pad;
    hi += pad;
  }
  m_range = {lo, hi};
  x->setRange(0, xmax);
  x->applyNiceNumbers();
  fit();
}
