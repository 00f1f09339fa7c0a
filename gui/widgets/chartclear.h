#pragma once
// Empties a chart before it is drawn again: removes and deletes its series and its axes
// (QChart::removeAxis hands an axis back to the caller instead of deleting it).
#include <QAbstractAxis>
#include <QChart>

inline void clearChart(QChart* chart) {
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
}
