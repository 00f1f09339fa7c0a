#include "heatmapview.h"

#include <QAbstractItemModel>
#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "models/heatmaproles.h"

namespace {
constexpr int kPad = 8, kMinCellWidth = 36, kMaxCellWidth = 140, kMaxCellHeight = 44, kMargin = 4;
}

HeatmapView::HeatmapView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

HeatmapView::~HeatmapView() = default;

void HeatmapView::setModel(QAbstractItemModel* model) {
  if (m_model) disconnect(m_model, nullptr, this, nullptr);
  m_model = model;
  m_cellWidth = -1;
  if (model) {
    connect(model, &QAbstractItemModel::modelReset, this, &HeatmapView::modelChanged);
    connect(model, &QAbstractItemModel::dataChanged, this, &HeatmapView::modelChanged);
    connect(model, &QAbstractItemModel::headerDataChanged, this, &HeatmapView::modelChanged);
    connect(model, &QAbstractItemModel::layoutChanged, this, &HeatmapView::modelChanged);
    connect(model, &QAbstractItemModel::rowsInserted, this, &HeatmapView::modelChanged);
    connect(model, &QAbstractItemModel::rowsRemoved, this, &HeatmapView::modelChanged);
    connect(model, &QAbstractItemModel::columnsInserted, this, &HeatmapView::modelChanged);
    connect(model, &QAbstractItemModel::columnsRemoved, this, &HeatmapView::modelChanged);
  }
  modelChanged();
}

void HeatmapView::modelChanged() {
  m_cellWidth = -1;
  updateGeometry();
  update();
}

QColor HeatmapView::rampColor(double intensity) {
  // ColorBrewer "Blues" stops.
  static const QColor stops[] = {QColor(0xf7, 0xfb, 0xff), QColor(0xc6, 0xdb, 0xef), QColor(0x6b, 0xae, 0xd6),
                                 QColor(0x21, 0x71, 0xb5), QColor(0x08, 0x30, 0x6b)};
  constexpr int n = int(sizeof stops / sizeof stops[0]);
  double t = std::isfinite(intensity) ? std::clamp(intensity, 0.0, 1.0) : 0.0;
  const double pos = t * (n - 1);
  const int i = std::min(int(pos), n - 2);
  const double f = pos - i;
  const QColor& a = stops[i];
  const QColor& b = stops[i + 1];
  return QColor(int(std::lround(a.red() + f * (b.red() - a.red()))),
                int(std::lround(a.green() + f * (b.green() - a.green()))),
                int(std::lround(a.blue() + f * (b.blue() - a.blue()))));
}

bool HeatmapView::isInterNode(const QModelIndex& index) {
  return index.data(HeatmapRoles::LinkRole).toString() == QLatin1String("inter_node");
}

bool HeatmapView::isMarked(const QModelIndex& index) {
  return index.data(HeatmapRoles::MarkedRole).toInt() > 0;
}

QColor HeatmapView::markColor() { return QColor(0xff, 0x7f, 0x0e); }

bool HeatmapView::showsMarkLegend() const {
  if (!m_model) return false;
  for (int r = 0; r < m_model->rowCount(); ++r)
    for (int c = 0; c < m_model->columnCount(); ++c)
      if (isMarked(m_model->index(r, c))) return true;
  return false;
}

QString HeatmapView::legendScaleText() const {
  return m_model ? m_model->headerData(0, Qt::Horizontal, HeatmapRoles::ScaleTextRole).toString() : QString();
}

QString HeatmapView::markLegendText() const {
  const QString text = m_model ? m_model->headerData(0, Qt::Horizontal, HeatmapRoles::MarkLegendRole).toString() : QString();
  return text.isEmpty() ? tr("marked") : text;
}

bool HeatmapView::showsLinkLegend() const {
  if (!m_model) return false;
  for (int r = 0; r < m_model->rowCount(); ++r)
    for (int c = 0; c < m_model->columnCount(); ++c)
      if (!m_model->index(r, c).data(HeatmapRoles::LinkRole).toString().isEmpty()) return true;
  return false;
}

int HeatmapView::contentCellWidth() const {
  if (m_cellWidth >= 0) return m_cellWidth;
  const QFontMetrics fm = fontMetrics();
  int w = kMinCellWidth;
  if (!m_model) return m_cellWidth = w;
  for (int c = 0; c < m_model->columnCount(); ++c) {
    w = std::max(w, fm.horizontalAdvance(m_model->headerData(c, Qt::Horizontal).toString()) + kPad);
    for (int r = 0; r < m_model->rowCount(); ++r)
      w = std::max(w, fm.horizontalAdvance(m_model->index(r, c).data().toString()) + kPad);
  }
  return m_cellWidth = w;
}

HeatmapView::Metrics HeatmapView::metrics() const {
  Metrics m;
  const QFontMetrics fm = fontMetrics();
  m.rows = m_model ? m_model->rowCount() : 0;
  m.columns = m_model ? m_model->columnCount() : 0;
  for (int r = 0; r < m.rows; ++r)
    m.headerWidth = std::max(m.headerWidth, fm.horizontalAdvance(m_model->headerData(r, Qt::Vertical).toString()));
  m.headerWidth += kPad;
  m.headerHeight = fm.height() + kPad;
  m.legendHeight = fm.height() + 2 * kPad;
  const int minWidth = contentCellWidth(), minHeight = fm.height() + kPad;
  m.cellWidth = minWidth;
  m.cellHeight = minHeight;
  if (m.columns > 0) {
    const int avail = (width() - 2 * kMargin - m.headerWidth) / m.columns;
    m.cellWidth = std::max(minWidth, std::min(avail, std::max(kMaxCellWidth, minWidth)));
  }
  if (m.rows > 0) {
    const int avail = (height() - 2 * kMargin - m.headerHeight - m.legendHeight) / m.rows;
    m.cellHeight = std::max(minHeight, std::min(avail, kMaxCellHeight));
  }
  return m;
}

int HeatmapView::legendWidth() const {
  if (!m_model || m_model->rowCount() == 0 || m_model->columnCount() == 0) return 0;
  const QFontMetrics fm = fontMetrics();
  const int h = fm.height() + kPad;  // the legend's swatch size, as paintEvent draws it
  QString maxText;
  double maxValue = -1;
  for (int r = 0; r < m_model->rowCount(); ++r)
    for (int c = 0; c < m_model->columnCount(); ++c) {
      const QModelIndex idx = m_model->index(r, c);
      const QVariant v = idx.data(Qt::UserRole);
      if (v.isValid() && v.toDouble() > maxValue) maxValue = v.toDouble(), maxText = idx.data().toString();
    }
  const QString shared = legendScaleText();
  const QString maxLabel = shared.isEmpty() ? tr("max %1").arg(maxText) : tr("max %1 (shared)").arg(shared);
  int w = fm.horizontalAdvance("0") + kPad + 100 + kPad / 2 + fm.horizontalAdvance(maxLabel) + 3 * kPad;
  if (showsLinkLegend())
    w += 2 * (h - 4 + kPad / 2) + fm.horizontalAdvance(tr("intra-node")) + 2 * kPad +
         fm.horizontalAdvance(tr("inter-node")) + 3 * kPad;
  if (showsMarkLegend()) w += h - 4 + kPad / 2 + fm.horizontalAdvance(markLegendText()) + kPad;
  return w;
}

QSize HeatmapView::minimumSizeHint() const {
  const QFontMetrics fm = fontMetrics();
  const Metrics m = metrics();
  // every cell at its narrowest, and the legend whole
  const int w = std::max(2 * kMargin + m.headerWidth + m.columns * contentCellWidth(),
                         2 * kMargin + m.headerWidth + legendWidth());
  const int h = 2 * kMargin + m.headerHeight + m.rows * (fm.height() + kPad) + m.legendHeight;
  return {std::max(w, 200), std::max(h, 80)};
}

QSize HeatmapView::sizeHint() const {
  const QSize min = minimumSizeHint();
  const Metrics m = metrics();
  return {std::max(min.width(), 2 * kMargin + m.headerWidth + m.columns * 90),
          std::max(min.height(), 2 * kMargin + m.headerHeight + m.rows * 32 + m.legendHeight)};
}

QRect HeatmapView::cellRect(int row, int column) const { return cellRect(metrics(), row, column); }

QRect HeatmapView::cellRect(const Metrics& m, int row, int column) {
  if (row < 0 || column < 0 || row >= m.rows || column >= m.columns) return {};
  return QRect(kMargin + m.headerWidth + column * m.cellWidth, kMargin + m.headerHeight + row * m.cellHeight,
               m.cellWidth, m.cellHeight);
}

QModelIndex HeatmapView::cellAt(const QPoint& pos) const {
  const Metrics m = metrics();
  if (!m_model || m.cellWidth <= 0 || m.cellHeight <= 0) return {};
  const int x = pos.x() - kMargin - m.headerWidth, y = pos.y() - kMargin - m.headerHeight;
  if (x < 0 || y < 0) return {};
  const int c = x / m.cellWidth, r = y / m.cellHeight;
  if (r >= m.rows || c >= m.columns) return {};
  return m_model->index(r, c);
}

void HeatmapView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (!m_model) return;
  const Metrics m = metrics();
  if (m.rows == 0 || m.columns == 0) return;
  p.setPen(palette().text().color());
  // headers
  for (int c = 0; c < m.columns; ++c) {
    const QRect cell = cellRect(m, 0, c);
    p.drawText(QRect(cell.x(), kMargin, cell.width(), m.headerHeight), Qt::AlignCenter,
               m_model->headerData(c, Qt::Horizontal).toString());
  }
  for (int r = 0; r < m.rows; ++r) {
    const QRect cell = cellRect(m, r, 0);
    p.drawText(QRect(kMargin, cell.y(), m.headerWidth - kPad / 2, cell.height()), Qt::AlignRight | Qt::AlignVCenter,
               m_model->headerData(r, Qt::Vertical).toString());
  }
  // cells
  const QColor grid = palette().mid().color();
  const QColor empty(0xee, 0xee, 0xee);
  const QBrush hatch(QColor(0, 0, 0, 110), Qt::BDiagPattern), hatchOnDark(QColor(255, 255, 255, 120), Qt::BDiagPattern);
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.columns; ++c) {
      const QModelIndex idx = m_model->index(r, c);
      const QRect cell = cellRect(m, r, c);
      const QVariant intensity = idx.data(HeatmapRoles::IntensityRole);
      const double t = intensity.isValid() ? intensity.toDouble() : 0.0;
      p.fillRect(cell, intensity.isValid() ? rampColor(t) : empty);
      const bool inter = isInterNode(idx);
      if (inter) p.fillRect(cell.adjusted(1, 1, -1, -1), t > 0.55 ? hatchOnDark : hatch);
      p.setPen(QPen(grid, 1));
      p.setBrush(Qt::NoBrush);
      p.drawRect(cell.adjusted(0, 0, -1, -1));
      if (inter) {
        p.setPen(QPen(QColor(0x20, 0x20, 0x20), 2));
        p.drawRect(cell.adjusted(1, 1, -2, -2));
      }
      if (isMarked(idx)) paintMark(p, cell);
      const QString text = idx.data().toString();
      if (!text.isEmpty()) {
        p.setPen(intensity.isValid() && t > 0.55 ? Qt::white : Qt::black);
        p.drawText(cell, Qt::AlignCenter, text);
      }
    }
  // legend: ramp, then link swatches
  const int y = kMargin + m.headerHeight + m.rows * m.cellHeight + kPad / 2;
  const int h = m.legendHeight - kPad;
  int x = kMargin + m.headerWidth;
  QString maxText;
  double maxValue = -1;
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.columns; ++c) {
      const QModelIndex idx = m_model->index(r, c);
      const QVariant v = idx.data(Qt::UserRole);
      if (v.isValid() && v.toDouble() > maxValue) maxValue = v.toDouble(), maxText = idx.data().toString();
    }
  p.setPen(palette().text().color());
  const QFontMetrics fm = fontMetrics();
  p.drawText(QRect(x, y, fm.horizontalAdvance("0") + kPad, h), Qt::AlignVCenter | Qt::AlignLeft, QStringLiteral("0"));
  x += fm.horizontalAdvance("0") + kPad;
  constexpr int rampWidth = 100;
  for (int i = 0; i < rampWidth; ++i) p.fillRect(QRect(x + i, y + 2, 1, h - 4), rampColor(i / double(rampWidth - 1)));
  x += rampWidth + kPad / 2;
  const QString shared = legendScaleText();
  const QString maxLabel = shared.isEmpty() ? tr("max %1").arg(maxText) : tr("max %1 (shared)").arg(shared);
  p.drawText(QRect(x, y, fm.horizontalAdvance(maxLabel) + kPad, h), Qt::AlignVCenter | Qt::AlignLeft, maxLabel);
  x += fm.horizontalAdvance(maxLabel) + 3 * kPad;
  if (showsLinkLegend()) {
    const QRect intra(x, y + 2, h - 4, h - 4);
    p.fillRect(intra, rampColor(0.3));
    p.setPen(QPen(grid, 1));
    p.drawRect(intra);
    x += intra.width() + kPad / 2;
    p.setPen(palette().text().color());
    const QString intraText = tr("intra-node");
    p.drawText(QRect(x, y, fm.horizontalAdvance(intraText) + kPad, h), Qt::AlignVCenter | Qt::AlignLeft, intraText);
    x += fm.horizontalAdvance(intraText) + 2 * kPad;
    const QRect inter(x, y + 2, h - 4, h - 4);
    p.fillRect(inter, rampColor(0.3));
    p.fillRect(inter, hatch);
    p.setPen(QPen(QColor(0x20, 0x20, 0x20), 2));
    p.drawRect(inter);
    x += inter.width() + kPad / 2;
    p.setPen(palette().text().color());
    const QString interText = tr("inter-node");
    p.drawText(QRect(x, y, fm.horizontalAdvance(interText) + kPad, h), Qt::AlignVCenter | Qt::AlignLeft, interText);
    x += fm.horizontalAdvance(interText) + 3 * kPad;
  }
  if (showsMarkLegend()) {
    const QRect marked(x, y + 2, h - 4, h - 4);
    p.fillRect(marked, rampColor(0.3));
    paintMark(p, marked);
    x += marked.width() + kPad / 2;
    p.setPen(palette().text().color());
    const QString markText = markLegendText();
    p.drawText(QRect(x, y, fm.horizontalAdvance(markText) + kPad, h), Qt::AlignVCenter | Qt::AlignLeft, markText);
  }
}

void HeatmapView::paintMark(QPainter& p, const QRect& cell) {
  const QColor color = markColor();
  p.setPen(QPen(color, 3));
  p.setBrush(Qt::NoBrush);
  p.drawRect(cell.adjusted(2, 2, -3, -3));
  const int flag = std::max(5, std::min(cell.width(), cell.height()) / 3);
  const QPoint corner = cell.topRight();
  const QPolygon triangle({corner, corner - QPoint(flag, 0), corner + QPoint(0, flag)});
  p.setPen(Qt::NoPen);
  p.setBrush(color);
  p.drawPolygon(triangle);
  p.setBrush(Qt::NoBrush);
}

bool HeatmapView::event(QEvent* e) {
  if (e->type() == QEvent::FontChange) m_cellWidth = -1;
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const QModelIndex idx = cellAt(help->pos());
    if (!idx.isValid()) {
      QToolTip::hideText();
      e->ignore();
      return true;
    }
    QString text = idx.data(Qt::ToolTipRole).toString();
    if (text.isEmpty()) {
      const QVariant v = idx.data(Qt::UserRole);
      text = tr("%1 / %2: %3")
                 .arg(m_model->headerData(idx.row(), Qt::Vertical).toString(),
                      m_model->headerData(idx.column(), Qt::Horizontal).toString(),
                      v.isValid() ? QString::number(v.toDouble(), 'g', 15) : idx.data().toString());
    }
    QToolTip::showText(help->globalPos(), text, this, cellRect(idx.row(), idx.column()));
    return true;
  }
  return QWidget::event(e);
}
