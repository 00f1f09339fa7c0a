#pragma once
// ChartLegendList: a chart's legend as a list beside it, for charts whose series names are long
// (run names): Qt Charts' own legend elides a label that does not fit ("strategies-abla..."), a
// list wraps it and scrolls. One entry per visible legend marker of the chart: the marker's label
// whole, a swatch of its colour, a check box that shows or hides the series, and with it every
// series of the same "legendGroup" property (e.g. a run's per-layer points with its whole-run
// point). sync() after the chart's series change; it hides the chart's own legend.
#include <QListWidget>

class QChart;

class ChartLegendList : public QListWidget {
  Q_OBJECT

 public:
  explicit ChartLegendList(QWidget* parent = nullptr);
  void sync(QChart* chart);
  QStringList labels() const;  // the entries' texts, in order

 private:
  QChart* m_chart = nullptr;
};
