#pragma once
// The layout the chart-and-table analysis views share (roofline, predicted vs measured): a chart
// (antialiased, legend at the bottom, at least 280 px high) above a table of the model's rows
// (no row numbers, last column stretched, whole rows selected) in a vertical splitter, 3:1.
// With a legend list (chartlegendlist.h: long series names whole) it sits right of the chart.
#include <QAbstractItemModel>
#include <QChart>
#include <QChartView>
#include <QHeaderView>
#include <QLegend>
#include <QSplitter>
#include <QTableView>

#include "widgets/chartlegendlist.h"

struct ChartOverTable {
  QChartView* chartView = nullptr;
  QTableView* table = nullptr;
  QSplitter* splitter = nullptr;
  ChartLegendList* legend = nullptr;  // with legendList only
};

// Object names: <name>Chart and <name>Table ("roofline" -> rooflineChart, rooflineTable).
inline ChartOverTable makeChartOverTable(QWidget* parent, const QString& name, const QString& title,
                                         QAbstractItemModel* model, bool legendList = false) {
  ChartOverTable out;
  auto* chart = new QChart;
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setTitle(title);
  out.chartView = new QChartView(chart, parent);
  out.chartView->setObjectName(name + QStringLiteral("Chart"));
  out.chartView->setRenderHint(QPainter::Antialiasing);
  out.chartView->setMinimumHeight(280);
  out.table = new QTableView(parent);
  out.table->setObjectName(name + QStringLiteral("Table"));
  out.table->setModel(model);
  out.table->verticalHeader()->hide();
  out.table->horizontalHeader()->setStretchLastSection(true);
  out.table->setSelectionBehavior(QAbstractItemView::SelectRows);
  out.splitter = new QSplitter(Qt::Vertical, parent);
  if (legendList) {
    auto* top = new QSplitter(Qt::Horizontal, out.splitter);
    top->addWidget(out.chartView);
    out.legend = new ChartLegendList(top);
    out.legend->setObjectName(name + QStringLiteral("Legend"));
    top->addWidget(out.legend);
    top->setStretchFactor(0, 1);
    out.splitter->addWidget(top);
  } else {
    out.splitter->addWidget(out.chartView);
  }
  out.splitter->addWidget(out.table);
  out.splitter->setStretchFactor(0, 3);
  out.splitter->setStretchFactor(1, 1);
  out.splitter->setSizes({600, 200});
  return out;
}
