#include "widgets/predictionaccuracyview.h"

#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <exception>
#include <set>

#include "models/predictionaccuracymodel.h"
#include "moebench/store/run_store.h"
#include "widgets/chartclear.h"
#include "widgets/chartovertable.h"

namespace {
constexpr double kMarker = 11.0, kSelectedMarker = 17.0;
constexpr double kMargin = 0.08;  // of the data range, around the points

// The series point nearest to `at` (index), or -1.
int nearestPoint(const QXYSeries* s, QPointF at) {
  int best = -1;
  double bestD = HUGE_VAL;
  for (int i = 0; i < s->count(); ++i) {
    const QPointF d = s->at(i) - at;
    const double dist = d.x() * d.x() + d.y() * d.y();
    if (dist < bestD) {
      bestD = dist;
      best = i;
    }
  }
  return best;
}
}  // namespace

PredictionAccuracyView::PredictionAccuracyView(QWidget* parent)
    : QWidget(parent), m_model(new PredictionAccuracyModel(this)) {
  m_summary = new QLabel(this);
  m_summary->setObjectName("predictionSummary");
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_summary->setToolTip(tr("MAE: mean over the pairs of |predicted - measured| / measured. R²: 1 - sum (predicted - "
                           "measured)² / sum (measured - mean measured)², 1 for a perfect prediction."));
  QFont bold = m_summary->font();
  bold.setBold(true);
  m_summary->setFont(bold);
  m_message = new QLabel(this);
  m_message->setObjectName("predictionMessage");
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);

  const ChartOverTable parts = makeChartOverTable(
      this, QStringLiteral("prediction"),
      tr("Predicted against measured ms/step (points above the line: predicted slower)"), m_model);
  m_chartView = parts.chartView;
  m_table = parts.table;
  m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_summary);
  layout->addWidget(m_message);
  layout->addWidget(parts.splitter, 1);

  connect(m_model, &QAbstractItemModel::modelReset, m_table, &QTableView::resizeColumnsToContents);
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &PredictionAccuracyView::highlightSelection);
  rebuild();
  updateTexts();
}

PredictionAccuracyView::~PredictionAccuracyView() = default;

QChart* PredictionAccuracyView::chart() const { return m_chartView->chart(); }
QString PredictionAccuracyView::summaryText() const { return m_summary->text(); }
QString PredictionAccuracyView::message() const { return m_message->text(); }

void PredictionAccuracyView::setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  m_error.clear();
  m_noStore = !store;
  try {
    m_model->setStore(std::move(store));
  } catch (const std::exception& e) {
    m_error = QString::fromUtf8(e.what());
    m_model->clear();
  }
  rebuild();
  updateTexts();
  QItemSelection selection;
  for (int64_t id : runIds)
    if (const int row = m_model->rowOfRun(id); row >= 0)
      selection.select(m_model->index(row, 0), m_model->index(row, PredictionAccuracyModel::ColumnCount - 1));
  m_table->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
}

QString PredictionAccuracyView::pointText(int row) const {
  if (row < 0 || size_t(row) >= m_model->pairs().size()) return {};
  const PredictionAccuracyModel::Pair& p = m_model->pairs()[size_t(row)];
  const double e = p.errorPercent();
  return tr("%1: predicted %2 ms/step\n%3: measured %4 ms/step\nerror %5%6 %")
      .arg(PredictionAccuracyModel::runLabel(p.predicted), QString::number(p.predictedMs, 'f', 3),
           PredictionAccuracyModel::runLabel(p.measured), QString::number(p.measuredMs, 'f', 3),
           e > 0 ? QStringLiteral("+") : QString(), QString::number(e, 'f', 2));
}

void PredictionAccuracyView::selectPair(int row) {
  if (row < 0 || row >= m_model->rowCount()) return;
  m_table->selectRow(row);
  m_table->scrollTo(m_model->index(row, 0));
}

void PredictionAccuracyView::updateTexts() {
  QStringList messages;
  if (!m_error.isEmpty()) messages << tr("Cannot pair the predicted runs: %1").arg(m_error);
  else if (m_noStore) messages << tr("No run store is open: use File > Open run store.");
  for (const auto& u : m_model->unmatched())
    messages << tr("No measured run for %1: %2").arg(PredictionAccuracyModel::runLabel(u.predicted), u.reason);
  m_message->setText(messages.join('\n'));
  m_message->setVisible(!messages.isEmpty());
  m_summary->setText(m_noStore && m_error.isEmpty() ? QString() : m_model->summaryText());
}

void PredictionAccuracyView::rebuild() {
  QChart* c = chart();
  clearChart(c);
  m_points = m_selected = nullptr;
  const auto& pairs = m_model->pairs();
  if (pairs.empty()) return;

  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (const auto& p : pairs)
    for (double v : {p.predictedMs, p.measuredMs}) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  const double pad = std::max(hi - lo, 0.1 * std::max(std::abs(hi), 1e-3)) * kMargin;
  lo = std::max(0.0, lo - pad);
  hi += pad;

  // One ms scale for both axes: the x axis rounds the range to nice numbers, y takes the same.
  auto* xAxis = new QValueAxis;
  xAxis->setTitleText(tr("measured ms/step"));
  xAxis->setRange(lo, hi);
  xAxis->applyNiceNumbers();
  auto* yAxis = new QValueAxis;
  yAxis->setTitleText(tr("predicted ms/step"));
  yAxis->setRange(xAxis->min(), xAxis->max());
  yAxis->setTickCount(xAxis->tickCount());
  c->addAxis(xAxis, Qt::AlignBottom);
  c->addAxis(yAxis, Qt::AlignLeft);

  auto* identity = new QLineSeries;
  identity->setName(tr("identity: predicted = measured"));
  identity->setPen(QPen(QColor(0x60, 0x60, 0x60), 1.5, Qt::DashLine));
  identity->append(xAxis->min(), xAxis->min());
  identity->append(xAxis->max(), xAxis->max());

  m_points = new QScatterSeries;
  m_points->setName(tr("pairs (%1)").arg(pairs.size()));
  m_points->setMarkerShape(QScatterSeries::MarkerShapeCircle);
  m_points->setMarkerSize(kMarker);
  m_points->setColor(QColor("#1f77b4"));
  m_points->setBorderColor(QColor("#1f77b4").darker());
  for (const auto& p : pairs) m_points->append(p.measuredMs, p.predictedMs);

  m_selected = new QScatterSeries;
  m_selected->setName(tr("selected"));
  m_selected->setMarkerShape(QScatterSeries::MarkerShapeCircle);
  m_selected->setMarkerSize(kSelectedMarker);
  m_selected->setColor(QColor(0, 0, 0, 0));
  m_selected->setBorderColor(QColor("#d62728"));
  m_selected->setPen(QPen(QColor("#d62728"), 2.5));

  for (QXYSeries* s : std::initializer_list<QXYSeries*>{identity, m_points, m_selected}) {
    c->addSeries(s);
    s->attachAxis(xAxis);
    s->attachAxis(yAxis);
  }
  connect(m_points, &QXYSeries::hovered, this, [this](const QPointF& at, bool state) {
    if (!state) return QToolTip::hideText();
    QToolTip::showText(QCursor::pos(), pointText(nearestPoint(m_points, at)), m_chartView);
  });
  connect(m_points, &QXYSeries::clicked, this, [this](const QPointF& at) { selectPair(nearestPoint(m_points, at)); });
  highlightSelection();
}

void PredictionAccuracyView::highlightSelection() {
  if (!m_selected) return;
  m_selected->clear();
  std::set<int> rows;
  for (const QModelIndex& idx : m_table->selectionModel()->selectedIndexes()) rows.insert(idx.row());
  for (int row : rows)
    if (size_t(row) < m_model->pairs().size()) {
      const auto& p = m_model->pairs()[size_t(row)];
      m_selected->append(p.measuredMs, p.predictedMs);
    }
}
