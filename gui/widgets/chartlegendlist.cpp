#include "widgets/chartlegendlist.h"

#include <QAbstractSeries>
#include <QChart>
#include <QLegend>
#include <QLegendMarker>
#include <QSignalBlocker>

ChartLegendList::ChartLegendList(QWidget* parent) : QListWidget(parent) {
  setObjectName("chartLegend");
  setWordWrap(true);
  setMaximumWidth(280);
  setToolTip(tr("Untick an entry to hide it in the chart"));
  connect(this, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    if (!m_chart) return;
    auto* series = item->data(Qt::UserRole).value<QAbstractSeries*>();
    if (!series) return;
    const bool visible = item->checkState() == Qt::Checked;
    const QVariant group = series->property("legendGroup");
    for (QAbstractSeries* s : m_chart->series())
      if (s == series || (group.isValid() && s->property("legendGroup") == group)) s->setVisible(visible);
  });
}

void ChartLegendList::sync(QChart* chart) {
  m_chart = chart;
  const QSignalBlocker block(this);
  clear();
  for (QLegendMarker* m : chart->legend()->markers()) {
    if (m->series()->property("legendHidden").toBool()) continue;
    auto* item = new QListWidgetItem(m->label(), this);
    QColor color = m->brush().color();
    if (color.alpha() == 0 || m->brush().style() == Qt::NoBrush) color = m->pen().color();
    item->setData(Qt::DecorationRole, color);
    item->setData(Qt::UserRole, QVariant::fromValue(m->series()));
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
    item->setCheckState(m->series()->isVisible() ? Qt::Checked : Qt::Unchecked);
  }
  chart->legend()->hide();
}

QStringList ChartLegendList::labels() const {
  QStringList out;
  for (int i = 0; i < count(); ++i) out << item(i)->text();
  return out;
}
