#include "widgets/rooflineview.h"

#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QScatterSeries>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>
#include <set>
#include <utility>

#include "models/rooflinegeometry.h"
#include "models/rooflinemodel.h"
#include "models/runcolors.h"
#include "widgets/chartclear.h"
#include "widgets/chartovertable.h"

namespace {

constexpr double kLayerMarker = 8.0, kRunMarker = 16.0;
constexpr int kCurveSamples = 80;
const char* const kCurveColors[] = {"#000000", "#606060", "#8b4513", "#2f4f4f"};

QString gflopsText(double v) { return QString::number(v, 'g', 4) + QStringLiteral(" GFLOP/s"); }

bool drawable(const moebench::DdlPoint& p) {
  return p.has_point() && std::isfinite(p.r_cc) && p.r_cc > 0 && std::isfinite(p.achieved_gflops) &&
         p.achieved_gflops > 0;
}

QString pointText(const moebench::DdlPoint& p, const QString& kind) {
  return QStringLiteral("%1, %2 (%8)\nR_CC = %3\nP-bar %4 per worker\nLat_comp %5 ms, Lat_comm %6 ms, Lat_e2e %7 ms")
      .arg(QString::fromStdString(p.run_name),
           p.layer < 0 ? QStringLiteral("whole run") : QStringLiteral("MoE layer %1").arg(p.layer),
           QString::number(p.r_cc, 'g', 3), gflopsText(p.achieved_gflops), QString::number(p.lat_comp_s * 1e3, 'f', 3),
           QString::number(p.lat_comm_s * 1e3, 'f', 3), QString::number(p.lat_e2e_s * 1e3, 'f', 3), kind);
}

// Hovering a scatter series shows the text of its point nearest to the cursor (log distance).
void connectHoverTips(QScatterSeries* s, const QStringList& texts) {
  QObject::connect(s, &QXYSeries::hovered, s, [s, texts](const QPointF& at, bool state) {
    if (!state) {
      QToolTip::hideText();
      return;
    }
    int best = -1;
    double bestDist = HUGE_VAL;
    for (int i = 0; i < s->count(); ++i) {
      const QPointF q = s->at(i);
      const double d = std::abs(std::log(q.x() / at.x())) + std::abs(std::log(q.y() / at.y()));
      if (d < bestDist) {
        bestDist = d;
        best = i;
      }
    }
    if (best >= 0 && best < texts.size()) QToolTip::showText(QCursor::pos(), texts[best]);
  });
}

}  // namespace

RooflineView::RooflineView(QWidget* parent) : QWidget(parent), m_model(new RooflineModel(this)) {
  m_message = new QLabel(this);
  m_message->setObjectName("rooflineMessage");
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);

  m_peakSpin = new QDoubleSpinBox(this);
  m_peakSpin->setObjectName("rooflinePeak");
  m_peakSpin->setRange(0, 1e9);
  m_peakSpin->setDecimals(2);
  m_peakSpin->setSuffix(QStringLiteral(" GFLOP/s"));
  m_peakSpin->setSpecialValueText(QStringLiteral("not entered"));
  m_peakSpin->setToolTip(QStringLiteral("P_w of FasterMoE eq. 5-6 for runs that store no peak_gflops "
                                        "(moebench bench gemm --db stores the machine's rate)"));
  auto* peakLabel = new QLabel(QStringLiteral("peak GFLOP/s per worker:"), this);
  peakLabel->setBuddy(m_peakSpin);
  m_peakInfo = new QLabel(this);
  m_peakInfo->setObjectName("rooflinePeakInfo");
  m_peakInfo->setWordWrap(true);

  const ChartOverTable parts = makeChartOverTable(
      this, QStringLiteral("roofline"),
      QStringLiteral("DDL-roofline (FasterMoE Fig. 5)"),  // the legend beside it names the points and curves
      m_model, true);
  m_chartView = parts.chartView;
  m_legend = parts.legend;
  m_table = parts.table;

  auto* peakRow = new QHBoxLayout;
  peakRow->addWidget(peakLabel);
  peakRow->addWidget(m_peakSpin);
  peakRow->addWidget(m_peakInfo, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_message);
  layout->addLayout(peakRow);
  layout->addWidget(parts.splitter, 1);

  connect(m_peakSpin, &QDoubleSpinBox::valueChanged, m_model, &RooflineModel::setEnteredPeak);
  connect(m_model, &RooflineModel::peaksChanged, this, [this] {
    rebuild();
    updateTexts();
  });
  connect(m_model, &QAbstractItemModel::modelReset, m_table, &QTableView::resizeColumnsToContents);
  connect(chart(), &QChart::plotAreaChanged, this, [this] { updateArrows(); });
  rebuild();
  updateTexts();
}

RooflineView::~RooflineView() = default;

QChart* RooflineView::chart() const { return m_chartView->chart(); }
QString RooflineView::message() const { return m_message->text(); }
QString RooflineView::peakInfoText() const { return m_peakInfo->text(); }

void RooflineView::setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  m_error.clear();
  m_empty = !store || runIds.empty();
  try {
    m_model->setRuns(std::move(store), runIds);
  } catch (const std::exception& e) {
    m_error = QString::fromStdString(e.what());
    m_model->clear();
  }
  rebuild();
  updateTexts();
}

void RooflineView::updateTexts() {
  QStringList messages;
  if (!m_error.isEmpty()) {
    messages << QStringLiteral("Cannot show the DDL-roofline: ") + m_error;
  } else if (m_empty) {
    messages << QStringLiteral("Select runs in the run browser to see their DDL-roofline "
                               "(measured and predicted R_CC and GFLOP/s against the ideal curves).");
  } else {
    const auto& points = m_model->points();
    for (int row = 0; row < int(points.size()); ++row) {
      const moebench::DdlPoint& p = points[size_t(row)];
      const bool predicted = m_model->kindAt(row) == RooflineModel::RowKind::Predicted;
      // A predicted whole-run row without a point is worth a line only when the run has a
      // measured point to compare with (else the measured row already says what is missing).
      const bool measuredPoint = predicted && row > 0 && points[size_t(row - 1)].run_id == p.run_id &&
                                 points[size_t(row - 1)].layer == -1 && points[size_t(row - 1)].has_point();
      if (p.layer == -1 && !p.has_point() && (!predicted || measuredPoint))
        messages << QStringLiteral("No %1point for run '%2': %3")
                        .arg(predicted ? QStringLiteral("predicted ") : QString(), QString::fromStdString(p.run_name),
                             QString::fromStdString(p.reason));
      else if (p.has_point() && !drawable(p))
        messages << QStringLiteral("Run '%1' %2%3: R_CC %4, %5 cannot be drawn on the log axes")
                        .arg(QString::fromStdString(p.run_name), predicted ? QStringLiteral("predicted ") : QString(),
                             p.layer < 0 ? QStringLiteral("whole run") : QStringLiteral("layer %1").arg(p.layer),
                             QString::number(p.r_cc), gflopsText(p.achieved_gflops));
    }
  }
  m_message->setText(messages.join('\n'));
  m_message->setVisible(!messages.isEmpty());

  QStringList stored, entered, none, errors;
  for (const auto& peak : m_model->runPeaks()) {
    if (!peak.error.isEmpty()) errors << peak.error;
    switch (peak.source) {
      case RooflineModel::PeakSource::Stored:
        if (peak.hasPoints)
          stored << QStringLiteral("%1 %2 (%3)").arg(peak.runName, gflopsText(*peak.gflops),
                                                   peak.sourceText.mid(QStringLiteral("stored: ").size()));
        break;
      case RooflineModel::PeakSource::Entered:
        if (peak.hasPoints) entered << peak.runName;
        break;
      case RooflineModel::PeakSource::None:
        if (peak.hasPoints) none << peak.runName;
        break;
    }
  }
  QStringList parts;
  if (!stored.isEmpty()) parts << QStringLiteral("stored peak: ") + stored.join(QStringLiteral(", "));
  if (!entered.isEmpty())
    parts << QStringLiteral("entered peak %1: %2").arg(gflopsText(m_model->enteredPeak()),
                                                       entered.join(QStringLiteral(", ")));
  if (!none.isEmpty())
    parts << QStringLiteral("no peak (enter one for the curves): ") + none.join(QStringLiteral(", "));
  parts << errors;
  m_peakInfo->setText(parts.join(QStringLiteral("; ")));
}

void RooflineView::rebuild() {
  QChart* c = chart();
  m_arrows.clear();
  clearChart(c);

  // Drawable rows by run, in the runs' order; the peaks they are drawn against.
  double minR = 1.0, maxR = 1.0, minY = HUGE_VAL, maxY = 0;
  std::set<double> peaks;  // the distinct peaks of the runs drawn
  std::vector<std::pair<const RooflineModel::RunPeak*, std::vector<int>>> runs;
  for (const auto& peak : m_model->runPeaks()) {
    std::vector<int> rows;
    for (int row = 0; row < m_model->rowCount(); ++row) {
      const moebench::DdlPoint* p = m_model->pointAt(row);
      if (p->run_id != peak.runId || !drawable(*p)) continue;
      rows.push_back(row);
      minR = std::min(minR, p->r_cc);
      maxR = std::max(maxR, p->r_cc);
      minY = std::min(minY, p->achieved_gflops);
      maxY = std::max(maxY, p->achieved_gflops);
    }
    if (rows.empty()) continue;
    if (peak.gflops) {
      peaks.insert(*peak.gflops);
      maxY = std::max(maxY, *peak.gflops);
    }
    runs.emplace_back(&peak, std::move(rows));
  }
  if (runs.empty()) return;

  const moebench::gui::LogRange xr = moebench::gui::decadeRange(minR, maxR, 1.5);
  const moebench::gui::LogRange yr = moebench::gui::decadeRange(minY, maxY, 1.2);
  const double xmin = xr.min, xmax = xr.max;
  auto* xAxis = new QLogValueAxis;
  xAxis->setBase(10);
  xAxis->setLabelFormat(QStringLiteral("%g"));
  xAxis->setTitleText(QStringLiteral("R_CC = Lat_comp / Lat_comm"));
  // A hair beyond the decades: QLogValueAxis places its first tick at ceil(ln(min) / ln(10)),
  // which for min = 0.1 is ceil(-0.9999999999999998) = 0, losing the label at the axis minimum.
  constexpr double kPad = 1e-9;
  xAxis->setRange(xmin * (1 - kPad), xmax * (1 + kPad));
  auto* yAxis = new QLogValueAxis;
  yAxis->setBase(10);
  yAxis->setLabelFormat(QStringLiteral("%g"));
  yAxis->setTitleText(QStringLiteral("GFLOP/s per worker (P-bar)"));
  yAxis->setRange(yr.min * (1 - kPad), yr.max * (1 + kPad));
  c->addAxis(xAxis, Qt::AlignBottom);
  c->addAxis(yAxis, Qt::AlignLeft);
  m_frame.xmin = xAxis->min();
  m_frame.xmax = xAxis->max();
  m_frame.ymin = yAxis->min();
  m_frame.ymax = yAxis->max();
  auto attach = [&](QAbstractSeries* s) {
    c->addSeries(s);
    s->attachAxis(xAxis);
    s->attachAxis(yAxis);
  };

  int curve = 0;
  for (const double peak : peaks) {
    const QColor color(kCurveColors[curve++ % std::size(kCurveColors)]);
    const QString label = gflopsText(peak);
    auto* ideal = new QLineSeries;
    ideal->setName(QStringLiteral("ideal ") + label);
    ideal->setPen(QPen(color, 2, Qt::SolidLine));
    ideal->append(xmin, moebench::ddl_ideal_gflops(xmin, peak));
    ideal->append(1.0, moebench::ddl_ideal_gflops(1.0, peak));
    ideal->append(xmax, moebench::ddl_ideal_gflops(xmax, peak));
    auto* semi = new QLineSeries;
    semi->setName(QStringLiteral("semi-ideal ") + label);
    semi->setPen(QPen(color, 1.5, Qt::DashLine));
    for (int i = 0; i <= kCurveSamples; ++i) {
      const double r = xmin * std::pow(xmax / xmin, double(i) / kCurveSamples);
      semi->append(r, moebench::ddl_semi_ideal_gflops(r, peak));
    }
    attach(ideal);
    attach(semi);
  }

  // Per run and kind: the whole-run point (large, in the legend) and the per-layer points (small,
  // same colour and shape, not in the legend). Two series because Qt 6.4's scatter item ignores
  // QXYSeries::PointConfiguration::Size. Measured: circles named after the run; simulated runs:
  // diamonds "<run> simulated (predicted)"; predicted (eq. 1-4): light triangles "<run> predicted".
  for (const auto& [peak, rows] : runs) {
    const QColor color = moebench::gui::runColor(peak->runId);  // the run's colour in every view
    for (const bool predicted : {false, true}) {
      const QString name = peak->runName + (predicted        ? QStringLiteral(" predicted")
                                            : peak->simulated ? QStringLiteral(" simulated (predicted)")
                                                              : QString());
      auto* whole = new QScatterSeries;
      whole->setName(name);
      whole->setMarkerSize(kRunMarker);
      auto* layers = new QScatterSeries;
      layers->setName(name + QStringLiteral(" (MoE layers)"));
      layers->setMarkerSize(kLayerMarker);
      for (QScatterSeries* s : {whole, layers}) {
        s->setProperty("legendGroup", name);  // the legend list shows and hides them together
        s->setMarkerShape(predicted         ? QScatterSeries::MarkerShapeTriangle
                          : peak->simulated ? QScatterSeries::MarkerShapeRotatedRectangle
                                            : QScatterSeries::MarkerShapeCircle);
        s->setColor(predicted ? color.lighter(160) : color);
        s->setBorderColor(predicted ? color : color.darker());
      }
      QStringList wholeTexts, layerTexts;
      for (int row : rows) {
        if ((m_model->kindAt(row) == RooflineModel::RowKind::Predicted) != predicted) continue;
        const moebench::DdlPoint* p = m_model->pointAt(row);
        (p->layer < 0 ? whole : layers)->append(p->r_cc, p->achieved_gflops);
        (p->layer < 0 ? wholeTexts : layerTexts) << pointText(*p, m_model->rowKindText(row));
      }
      for (auto [s, texts] : {std::pair{whole, wholeTexts}, std::pair{layers, layerTexts}}) {
        if (s->count() == 0) {
          delete s;
          continue;
        }
        attach(s);
        connectHoverTips(s, texts);
        if (s == layers) s->setProperty("legendHidden", true);
      }
    }
    // Arrows from each predicted point to the measured (or simulated) point of its layer.
    for (const RooflineModel::RowPair& pair : m_model->predictedMeasuredPairs()) {
      const moebench::DdlPoint* from = m_model->pointAt(pair.predicted);
      const moebench::DdlPoint* to = m_model->pointAt(pair.measured);
      if (from->run_id != peak->runId || !drawable(*from) || !drawable(*to)) continue;
      auto* arrow = new QLineSeries;
      arrow->setName(peak->runName + QStringLiteral(" predicted -> measured, ") +
                     (from->layer < 0 ? QStringLiteral("whole run") : QStringLiteral("layer %1").arg(from->layer)));
      arrow->setPen(QPen(color, 1.2, Qt::SolidLine));
      // Stop at the markers' edges (a marker's size is its diameter), a pixel outside.
      const double fromGap = (from->layer < 0 ? kRunMarker : kLayerMarker) / 2 + 1;
      const double toGap = (to->layer < 0 ? kRunMarker : kLayerMarker) / 2 + 1;
      m_arrows.push_back({arrow, QPointF(from->r_cc, from->achieved_gflops), QPointF(to->r_cc, to->achieved_gflops),
                          fromGap, toGap});
      arrow->setProperty("legendGroup", peak->runName + QStringLiteral(" predicted"));
      arrow->setProperty("legendHidden", true);
      attach(arrow);
    }
  }
  updateArrows();
  m_legend->sync(c);
}

void RooflineView::updateArrows() {
  const QRectF area = chart()->plotArea();
  // Before the first layout the plot area is empty: a typical size until plotAreaChanged.
  m_frame.width = area.width() > 1 ? area.width() : 600;
  m_frame.height = area.height() > 1 ? area.height() : 400;
  for (const Arrow& a : m_arrows) {
    moebench::gui::ArrowStyle style;
    style.startGapPx = a.fromGap;
    style.endGapPx = a.toGap;
    std::vector<QPointF> line = moebench::gui::arrowPolyline(a.from, a.to, m_frame, style);
    if (line.empty()) line = {a.from, a.to};  // the markers overlap: a shaft under them
    a.series->replace(QList<QPointF>(line.begin(), line.end()));
  }
}

int RooflineView::arrowCount() const { return int(m_arrows.size()); }
