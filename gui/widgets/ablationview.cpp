#include "ablationview.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFontMetricsF>
#include <QGraphicsItem>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPainter>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStackedWidget>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QTextDocument>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <exception>

#include "models/ablationmodel.h"
#include "models/ablationvariantmodel.h"
#include "moebench/store/run_store.h"
#include "widgets/chartclear.h"

namespace {

// The notes above the bars: drawn over the chart at the bars' positions, which follow the plot
// area (QChart::mapToPosition of the bar series' value coordinates).
class BarNotesItem : public QGraphicsItem {
 public:
  struct Note {
    QPointF anchor;  // value coordinates: bar centre x, top of the bar or its error bar
    QStringList lines;
  };
  BarNotesItem(QChart* chart, QAbstractSeries* series, std::vector<Note> notes, QColor color)
      : QGraphicsItem(chart), m_chart(chart), m_series(series), m_notes(std::move(notes)), m_color(color) {
    setZValue(20);
    m_follow = QObject::connect(chart, &QChart::plotAreaChanged, chart, [this](const QRectF&) {
      prepareGeometryChange();
      update();
    });
  }
  ~BarNotesItem() override { QObject::disconnect(m_follow); }
  QRectF boundingRect() const override { return QRectF(QPointF(0, 0), m_chart->size()); }
  void paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) override {
    QFont bold = m_chart->font(), plain = m_chart->font();
    bold.setBold(true);
    const QFontMetricsF fm(plain);
    p->setPen(m_color);
    for (const Note& n : m_notes) {
      const QPointF at = m_chart->mapToPosition(n.anchor, m_series);
      qreal y = at.y() - 4 - fm.descent();
      for (qsizetype i = n.lines.size() - 1; i >= 0; --i) {
        p->setFont(i == 0 ? bold : plain);
        const qreal w = QFontMetricsF(p->font()).horizontalAdvance(n.lines[i]);
        p->drawText(QPointF(at.x() - w / 2, y), n.lines[i]);
        y -= fm.lineSpacing();
      }
    }
  }

 private:
  QChart* m_chart;
  QAbstractSeries* m_series;
  std::vector<Note> m_notes;
  QColor m_color;
  QMetaObject::Connection m_follow;
};

// Lines as the HTML chart texts take; a space a line ends with is kept (&nbsp;), so that the
// plain text with the line breaks removed is the text again.
QString htmlLines(const QStringList& lines) {
  QStringList escaped;
  for (const QString& l : lines) {
    QString e = l.toHtmlEscaped();
    if (e.endsWith(u' ')) e = e.chopped(1) + QStringLiteral("&nbsp;");
    escaped << e;
  }
  return escaped.join(QStringLiteral("<br>"));
}

QString plainText(const QString& html) {
  QTextDocument doc;
  doc.setHtml(html);
  return doc.toPlainText().replace(QChar::Nbsp, u' ');
}

QString keyValue(const QString& key, const QString& value) { return key.isEmpty() ? value : key + u'=' + value; }

}  // namespace

AblationView::AblationView(QWidget* parent) : QWidget(parent) {
  m_model = new AblationModel(this);
  m_variantModel = new AblationVariantModel(m_model, this);
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
  m_group = new QComboBox(m_controls);
  m_group->setObjectName("groupChooser");
  m_group->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_groupLabel = new QLabel(tr("Group by:"), m_controls);
  bar->addWidget(new QLabel(tr("Metric:"), m_controls));
  bar->addWidget(m_metric);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Baseline:"), m_controls));
  bar->addWidget(m_baseline);
  bar->addSpacing(12);
  bar->addWidget(m_groupLabel);
  bar->addWidget(m_group);
  bar->addStretch(1);

  m_stack = new QStackedWidget(this);
  m_message = new QLabel(m_stack);
  m_message->setObjectName("message");
  m_message->setAlignment(Qt::AlignCenter);
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* page = new QSplitter(Qt::Vertical, m_stack);
  m_scroll = new QScrollArea(page);
  m_scroll->setWidgetResizable(true);
  m_scroll->setFrameShape(QFrame::NoFrame);
  m_chart = new QChartView(new QChart);
  m_chart->setObjectName("chart");
  m_chart->setRenderHint(QPainter::Antialiasing);
  m_chart->setMinimumHeight(320);
  m_scroll->setWidget(m_chart);
  // Wide charts scroll sideways; the height is the chart's: never a vertical scroll bar.
  m_scroll->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  m_scroll->setMinimumHeight(m_chart->minimumHeight() + style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 2);
  m_tabs = new QTabWidget(page);
  m_variantTable = new QTableView(m_tabs);
  m_variantTable->setObjectName("variants");
  m_variantTable->setModel(m_variantModel);
  m_table = new QTableView(m_tabs);
  m_table->setObjectName("runs");
  m_table->setModel(m_model);
  for (QTableView* t : {m_variantTable, m_table}) {
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    t->horizontalHeader()->setStretchLastSection(true);
  }
  m_tabs->addTab(m_variantTable, tr("Variants"));
  m_tabs->addTab(m_table, tr("Runs"));
  page->addWidget(m_scroll);
  page->addWidget(m_tabs);
  page->setStretchFactor(0, 3);
  page->setStretchFactor(1, 1);
  page->setSizes({3000, 1000});  // 3 : 1 from the start, not the size hints
  m_stack->addWidget(m_message);
  m_stack->addWidget(page);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_controls);
  layout->addWidget(m_stack, 1);

  connect(m_metric, &QComboBox::currentIndexChanged, this, &AblationView::updateChart);
  connect(m_group, &QComboBox::currentIndexChanged, this, &AblationView::updateChart);
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

void AblationView::fillGroupChooser() {
  const QString old = m_group->currentData().toString();
  const QSignalBlocker block(m_group);
  m_group->clear();
  for (const QString& key : m_model->variedKeys())
    m_group->addItem(key.isEmpty() ? tr("config / name") : key, key);
  const int keep = m_group->findData(old);
  m_group->setCurrentIndex(keep >= 0 ? keep : 0);
  m_group->setVisible(m_group->count() > 1);
  m_groupLabel->setVisible(m_group->count() > 1);
}

void AblationView::setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  m_store = std::move(store);
  {
    const QSignalBlocker block(m_baseline);
    m_baseline->clear();
  }
  if (!m_store || runIds.empty()) {
    m_model->clear();
    fillGroupChooser();
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
    fillGroupChooser();
    updateChart();
    m_controls->setVisible(false);
    showMessage(tr("Cannot compare the selected runs: %1").arg(QString::fromUtf8(e.what())));
    return;
  }
  fillGroupChooser();
  {
    const QSignalBlocker block(m_baseline);
    for (int v = 0; v < m_model->variantCount(); ++v) {
      const AblationModel::Variant& variant = m_model->variants()[size_t(v)];
      const int first = variant.rows.front();
      m_baseline->addItem(variant.rows.size() > 1 ? tr("%1 (%2 runs)").arg(variant.label).arg(variant.rows.size())
                                                  : tr("%1 (%2)").arg(variant.label, m_model->runNameAt(first)),
                          qint64(m_model->runIdAt(first)));
    }
    m_baseline->setCurrentIndex(m_model->baselineVariant());
  }
  m_controls->setVisible(true);
  m_stack->setCurrentIndex(1);
  updateChart();
}

void AblationView::setMetric(Metric metric) { m_metric->setCurrentIndex(m_metric->findData(int(metric))); }

AblationView::Metric AblationView::metric() const { return Metric(m_metric->currentData().toInt()); }

bool AblationView::setBaseline(int64_t runId) {
  const int row = m_model->rowOf(runId);
  if (row < 0) return false;
  const int variant = m_model->variantOfRow(row);
  if (m_baseline->currentIndex() == variant) {
    m_model->setBaseline(runId);
  } else {
    m_baseline->setCurrentIndex(variant);
  }
  return true;
}

bool AblationView::setGroupKey(const QString& key) {
  const int i = m_group->findData(key);
  if (i < 0) return false;
  m_group->setCurrentIndex(i);
  return true;
}

QString AblationView::groupKey() const { return m_group->count() > 0 ? m_group->currentData().toString() : QString(); }

QStringList AblationView::categoryLabels() const {
  QStringList out;
  for (QAbstractAxis* axis : m_chart->chart()->axes(Qt::Horizontal))
    if (auto* cats = qobject_cast<QBarCategoryAxis*>(axis))
      for (const QString& c : cats->categories()) out << plainText(c).remove(u'\n');
  return out;
}

QStringList AblationView::barSetNames() const {
  QStringList out;
  for (QAbstractSeries* s : m_chart->chart()->series())
    if (auto* bars = qobject_cast<QBarSeries*>(s))
      for (QBarSet* set : bars->barSets()) out << set->label();
  return out;
}

QString AblationView::chartTitle() const { return plainText(m_chart->chart()->title()); }

QStringList AblationView::wrapLabel(const QString& text, int width) {
  QStringList lines;
  QString line, piece;
  const auto flush = [&] {
    if (!line.isEmpty() && line.size() + piece.size() > width) {
      lines << line;
      line.clear();
    }
    line += piece;
    piece.clear();
  };
  for (QChar c : text) {
    piece += c;
    if (c == u' ' || c == u'=' || c == u',') flush();
  }
  flush();
  if (!line.isEmpty()) lines << line;
  return lines;
}

void AblationView::updateChart() {
  QChart* chart = m_chart->chart();
  delete m_noteItem;
  m_noteItem = nullptr;
  clearChart(chart);
  m_speedups.clear();
  m_notes.clear();
  const int variants = m_model->variantCount();
  if (variants == 0) {
    chart->setTitle(QString());
    m_chart->setMinimumWidth(0);
    return;
  }
  const Metric which = metric();
  const QString name = which == StepMs ? tr("ms/step") : tr("tokens/s");
  const int precision = which == StepMs ? 2 : 0;
  const auto spreadOf = [&](int v) {
    const AblationModel::Variant& variant = m_model->variants()[size_t(v)];
    return which == StepMs ? variant.stepMs : variant.tokensPerS;
  };

  // Cells: category (value of the group key) x bar set (values of the other varied keys).
  const QStringList varied = m_model->variedKeys();
  const QString group = groupKey();
  const bool grouped = !varied.isEmpty() && varied.contains(group);
  QStringList categories, setNames;
  std::vector<int> categoryOf(static_cast<size_t>(variants)), setOf(static_cast<size_t>(variants));
  for (int v = 0; v < variants; ++v) {
    QString category = m_model->variants()[size_t(v)].label;
    QStringList others;
    if (grouped) {
      category = keyValue(group, m_model->variantValue(v, group));
      for (const QString& key : varied)
        if (key != group) others << keyValue(key, m_model->variantValue(v, key));
    }
    const QString setName = others.join(u' ');
    if (!categories.contains(category)) categories << category;
    if (!setNames.contains(setName)) setNames << setName;
    categoryOf[size_t(v)] = int(categories.indexOf(category));
    setOf[size_t(v)] = int(setNames.indexOf(setName));
  }
  std::vector<int> cell(size_t(categories.size() * setNames.size()), -1);
  for (int v = 0; v < variants; ++v) cell[size_t(categoryOf[size_t(v)] * setNames.size() + setOf[size_t(v)])] = v;

  const int base = m_model->baselineVariant();
  const QString baseLabel = base >= 0 ? m_model->variants()[size_t(base)].label : QString();
  // Keys all variants share, named once in the title.
  QStringList shared;
  for (const auto& kv : m_model->variants().front().keys)
    if (!kv.first.isEmpty() && !varied.contains(kv.first)) shared << keyValue(kv.first, kv.second);
  QStringList titleLines = {tr("%1 per variant: mean over its runs ± one standard deviation").arg(name),
                            tr("speedup on the mean ms/step against %1").arg(baseLabel)};
  if (!shared.isEmpty()) titleLines << tr("every variant: %1").arg(shared.join(u' '));
  // One title line per part; the chart is made wide enough for the longest below.
  chart->setTitle(htmlLines(titleLines));

  auto* series = new QBarSeries;
  series->setBarWidth(0.8);
  std::vector<BarNotesItem::Note> notes;
  double hi = 0;
  for (qsizetype s = 0; s < setNames.size(); ++s) {
    auto* set = new QBarSet(setNames[s].isEmpty() ? name : setNames[s]);
    for (qsizetype c = 0; c < categories.size(); ++c) {
      const int v = cell[size_t(c * setNames.size() + s)];
      const double mean = v >= 0 ? spreadOf(v).mean : NAN;
      set->append(std::isfinite(mean) ? mean : 0.0);
    }
    series->append(set);
  }
  const double barWidth = series->barWidth();
  const qsizetype sets = setNames.size();
  QList<QLineSeries*> errorBars;
  for (int v = 0; v < variants; ++v) {
    const AblationModel::Spread sp = spreadOf(v);
    const int n = int(m_model->variants()[size_t(v)].rows.size());
    const double s = m_model->variantSpeedup(v);
    const QString speedup = std::isfinite(s) ? AblationModel::formatSpeedup(s) : tr("no ms/step");
    m_speedups << speedup;
    QStringList lines = {v == base ? tr("%1 baseline").arg(speedup) : speedup};
    if (sp.n > 0)
      lines << (std::isfinite(sp.sd) ? tr("%1 ± %2").arg(QString::number(sp.mean, 'f', precision),
                                                          QString::number(sp.sd, 'f', precision))
                                     : QString::number(sp.mean, 'f', precision));
    lines << tr("n = %1").arg(n);
    m_notes << lines.join(u'\n');
    const double x = categoryOf[size_t(v)] - barWidth / 2 + (setOf[size_t(v)] + 0.5) * barWidth / double(sets);
    const double mean = std::isfinite(sp.mean) ? sp.mean : 0.0;
    double top = mean;
    if (std::isfinite(sp.sd) && sp.sd > 0) {
      const double w = 0.15 * barWidth / double(sets);
      const double lo = std::max(0.0, mean - sp.sd), up = mean + sp.sd;
      auto* line = new QLineSeries;
      line->setName(tr("± std %1").arg(m_model->variants()[size_t(v)].label));
      line->append({QPointF(x - w, up), QPointF(x + w, up), QPointF(x, up), QPointF(x, lo), QPointF(x - w, lo),
                    QPointF(x + w, lo)});
      QPen pen(palette().color(QPalette::WindowText));
      pen.setWidthF(1.5);
      line->setPen(pen);
      errorBars << line;
      top = up;
    }
    hi = std::max(hi, top);
    notes.push_back({QPointF(x, top), lines});
  }
  chart->addSeries(series);
  for (QLineSeries* line : errorBars) chart->addSeries(line);

  auto* x = new QBarCategoryAxis;
  for (const QString& c : categories) x->append(htmlLines(wrapLabel(c)));
  if (grouped) x->setTitleText(group.isEmpty() ? tr("config / name") : group);
  auto* y = new QValueAxis;
  y->setTitleText(name);
  // Room above the tallest bar for its three lines of notes.
  y->setRange(0, hi > 0 ? hi * 1.35 : 1);
  y->applyNiceNumbers();
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  for (QLineSeries* line : errorBars) {
    line->attachAxis(x);
    line->attachAxis(y);
  }
  chart->legend()->setVisible(sets > 1);
  chart->legend()->setAlignment(Qt::AlignBottom);
  for (QLineSeries* line : errorBars)
    for (QLegendMarker* marker : chart->legend()->markers(line)) marker->setVisible(false);

  // Width: every category as wide as its widest label line and its bars' notes, the title lines
  // whole; a scroll bar rather than an elided label when the tab is narrower. (Measured once the
  // axis is in the chart: the chart's theme sets its fonts.)
  const QFontMetricsF labelMetrics(x->labelsFont());
  qreal widestLine = 0;
  for (const QString& c : categories)
    for (const QString& l : wrapLabel(c)) widestLine = std::max(widestLine, labelMetrics.horizontalAdvance(l));
  const QFontMetricsF noteMetrics(chart->font());
  qreal widestNote = 0;
  for (const auto& n : notes)
    for (const QString& l : n.lines) widestNote = std::max(widestNote, noteMetrics.horizontalAdvance(l) * 1.1);
  // (Qt gives a category label the axis width / (categories + 1), less padding and margins.)
  const qreal perLabel = (widestLine + 30) * (categories.size() + 1) / qreal(categories.size());
  const qreal perCategory = std::max(perLabel, sets * (widestNote + 8) / barWidth);
  const QFontMetricsF titleMetrics(chart->titleFont());
  qreal titleWidth = 0;
  for (const QString& l : titleLines) titleWidth = std::max(titleWidth, titleMetrics.horizontalAdvance(l));
  m_chart->setMinimumWidth(int(std::ceil(std::max(perCategory * categories.size() + 170, titleWidth + 80))));
  m_noteItem = new BarNotesItem(chart, series, std::move(notes), palette().color(QPalette::WindowText));
}
