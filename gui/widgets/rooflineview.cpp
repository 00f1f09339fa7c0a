#include "widgets/rooflineview.h"

#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
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

#include "models/rooflinemodel.h"
#include "widgets/chartclear.h"
#include "widgets/chartovertable.h"

namespace {

constexpr double kLayerMarker = 8.0, kRunMarker = 16.0;
constexpr int kCurveSamples = 80;
const char* const kRunColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                  "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};
const char* const kCurveColors[] = {"#000000", "#606060", "#8b4513", "#2f4f4f"};

QString gflopsText(double v) { return QString::number(v, 'g', 4) + QStringLiteral(" GFLOP/s"); }

bool drawable(const moebench::DdlPoint& p) {
  return p.has_point() && std::isfinite(p.r_cc) && p.r_cc > 0 && std::isfinite(p.achieved_gflops) &&
         p.achieved_gflops > 0;
}

QString pointText(const moebench::DdlPoint& p) {
  return QStringLiteral("%1, %2\nR_CC = %3\nachieved %4 per worker\nLat_comp %5 ms, Lat_comm %6 ms, Lat_e2e %7 ms")
      .arg(QString::fromStdString(p.run_name),
           p.layer < 0 ? QStringLiteral("whole run") : QStringLiteral("MoE layer %1").arg(p.layer),
           QString::number(p.r_cc, 'g', 3), gflopsText(p.achieved_gflops), QString::number(p.lat_comp_s * 1e3, 'f', 3),
           QString::number(p.lat_comm_s * 1e3, 'f', 3), QString::number(p.lat_e2e_s * 1e3, 'f', 3));
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
      QStringLiteral("DDL-roofline (FasterMoE Fig. 5): measured points, ideal and semi-ideal curves"), m_model);
  m_chartView = parts.chartView;
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
                               "(measured R_CC and GFLOP/s against the ideal curves).");
  } else {
    for (const auto& p : m_model->points()) {
      if (p.layer == -1 && !p.has_point())
        messages << QStringLiteral("No point for run '%1': %2")
                        .arg(QString::fromStdString(p.run_name), QString::fromStdString(p.reason));
      else if (p.has_point() && !drawable(p))
        messages << QStringLiteral("Run '%1' %2: R_CC %3, %4 cannot be drawn on the log axes")
                        .arg(QString::fromStdString(p.run_name),
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
  clearChart(c);

  // Points by run, in the runs' order; the peaks they are drawn against.
  double minR = 1.0, maxR = 1.0, minY = HUGE_VAL, maxY = 0;
  std::set<double> peaks;  // the distinct peaks of the runs drawn
  std::vector<std::pair<const RooflineModel::RunPeak*, std::vector<const moebench::DdlPoint*>>> runs;
  for (const auto& peak : m_model->runPeaks()) {
    std::vector<const moebench::DdlPoint*> pts;
    for (const auto& p : m_model->points())
      if (p.run_id == peak.runId && drawable(p)) pts.push_back(&p);
    if (pts.empty()) continue;
    for (const auto* p : pts) {
      minR = std::min(minR, p->r_cc);
      maxR = std::max(maxR, p->r_cc);
      minY = std::min(minY, p->achieved_gflops);
      maxY = std::max(maxY, p->achieved_gflops);
    }
    if (peak.gflops) {
      peaks.insert(*peak.gflops);
      maxY = std::max(maxY, *peak.gflops);
    }
    runs.emplace_back(&peak, std::move(pts));
  }
  if (runs.empty()) return;

  const double xmin = std::pow(10.0, std::floor(std::log10(minR / 1.5)));
  const double xmax = std::pow(10.0, std::ceil(std::log10(maxR * 1.5)));
  const double ymin = std::pow(10.0, std::floor(std::log10(minY / 1.2)));
  const double ymax = std::pow(10.0, std::ceil(std::log10(maxY * 1.2)));
  auto* xAxis = new QLogValueAxis;
  xAxis->setBase(10);
  xAxis->setLabelFormat(QStringLiteral("%g"));
  xAxis->setTitleText(QStringLiteral("R_CC = Lat_comp / Lat_comm (measured)"));
  // A hair beyond the decades: QLogValueAxis places its first tick at ceil(ln(min) / ln(10)),
  // which for min = 0.1 is ceil(-0.9999999999999998) = 0, losing the label at the axis minimum.
  constexpr double kPad = 1e-9;
  xAxis->setRange(xmin * (1 - kPad), xmax * (1 + kPad));
  auto* yAxis = new QLogValueAxis;
  yAxis->setBase(10);
  yAxis->setLabelFormat(QStringLiteral("%g"));
  yAxis->setTitleText(QStringLiteral("achieved GFLOP/s per worker (P-bar)"));
  yAxis->setRange(ymin * (1 - kPad), ymax * (1 + kPad));
  c->addAxis(xAxis, Qt::AlignBottom);
  c->addAxis(yAxis, Qt::AlignLeft);

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
    for (QLineSeries* s : {ideal, semi}) {
      c->addSeries(s);
      s->attachAxis(xAxis);
      s->attachAxis(yAxis);
    }
  }

  // Per run: the whole-run point (large, in the legend under the run's name) and the per-layer
  // points (small, same colour, not in the legend). Two series because Qt 6.4's scatter item
  // ignores QXYSeries::PointConfiguration::Size.
  int runIndex = 0;
  for (const auto& [peak, pts] : runs) {
    const QColor color(kRunColors[runIndex++ % std::size(kRunColors)]);
    auto* whole = new QScatterSeries;
    whole->setName(peak->runName);
    whole->setMarkerSize(kRunMarker);
    auto* layers = new QScatterSeries;
    layers->setName(peak->runName + QStringLiteral(" (MoE layers)"));
    layers->setMarkerSize(kLayerMarker);
    for (QScatterSeries* s : {whole, layers}) {
      s->setMarkerShape(QScatterSeries::MarkerShapeCircle);
      s->setColor(color);
      s->setBorderColor(color.darker());
    }
    QStringList wholeTexts, layerTexts;
    for (const auto* p : pts) {
      QScatterSeries* s = p->layer < 0 ? whole : layers;
      s->append(p->r_cc, p->achieved_gflops);
      (p->layer < 0 ? wholeTexts : layerTexts) << pointText(*p);
    }
    for (auto [s, texts] : {std::pair{whole, wholeTexts}, std::pair{layers, layerTexts}}) {
      c->addSeries(s);
      s->attachAxis(xAxis);
      s->attachAxis(yAxis);
      connect(s, &QXYSeries::hovered, s, [s, texts](const QPointF& at, bool state) {
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
    for (QLegendMarker* m : c->legend()->markers(layers)) m->setVisible(false);
  }
}
