#include "mainwindow.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFileDialog>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLineEdit>
#include <QLineSeries>
#include <QMenuBar>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTreeView>
#include <QVBoxLayout>
#include <QValueAxis>

#include <cmath>

#include "models/metricseriesmodel.h"
#include "models/runlistmodel.h"
#include "moebench/store/run_store.h"

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("moebench"));
  m_runs = new RunListModel(this);
  m_proxy = new QSortFilterProxyModel(this);
  m_proxy->setSourceModel(m_runs);
  m_proxy->setSortRole(Qt::UserRole);
  m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  m_proxy->setRecursiveFilteringEnabled(true);
  m_series = new MetricSeriesModel(this);

  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  m_filter = new QLineEdit(left);
  m_filter->setPlaceholderText(tr("Filter runs"));
  m_runView = new QTreeView(left);
  m_runView->setModel(m_proxy);
  m_runView->setSortingEnabled(true);
  m_runView->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_runView->setUniformRowHeights(true);
  leftLayout->addWidget(m_filter);
  leftLayout->addWidget(m_runView);

  auto* right = new QWidget(this);
  auto* rightLayout = new QVBoxLayout(right);
  m_metric = new QComboBox(right);
  m_metric->addItems({"loss", "aux_loss", "step_ms", "tokens_per_s", "comm_ms", "eval_loss"});
  m_chart = new QChartView(new QChart, right);
  m_chart->setRenderHint(QPainter::Antialiasing);
  rightLayout->addWidget(m_metric);
  rightLayout->addWidget(m_chart);

  auto* split = new QSplitter(this);
  split->addWidget(left);
  split->addWidget(right);
  split->setStretchFactor(1, 1);
  setCentralWidget(split);
  buildMenus();
  resize(1200, 700);

  connect(m_filter, &QLineEdit::textChanged, m_proxy, &QSortFilterProxyModel::setFilterFixedString);
  connect(m_metric, &QComboBox::currentTextChanged, this, &MainWindow::updateChart);
  connect(m_runView->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MainWindow::updateChart);
}

MainWindow::~MainWindow() = default;

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open run store..."), QKeySequence::Open, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open run store"), {}, tr("Run stores (*.db);;All files (*)"));
    if (!path.isEmpty()) openStore(path);
  });
  QMenu* recent = file->addMenu(tr("Open &recent"));
  connect(recent, &QMenu::aboutToShow, this, [this, recent] {
    recent->clear();
    for (const QString& path : QSettings().value("recentStores").toStringList())
      recent->addAction(path, this, [this, path] { openStore(path); });
  });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
}

bool MainWindow::openStore(const QString& path) {
  try {
    m_store = std::make_shared<moebench::RunStore>(path.toStdString(), moebench::RunStore::Mode::read_only);
  } catch (const std::exception& e) {
    m_error = QString::fromUtf8(e.what());
    statusBar()->showMessage(m_error);
    return false;
  }
  m_error.clear();
  m_runs->setStore(m_store);
  m_runView->expandAll();
  for (int c = 0; c < m_proxy->columnCount(); ++c) m_runView->resizeColumnToContents(c);
  setWindowTitle(tr("moebench - %1").arg(path));
  statusBar()->showMessage(tr("%1 runs").arg(m_store->list_runs().size()));
  rememberRecent(path);
  updateChart();
  return true;
}

void MainWindow::rememberRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("recentStores").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > 8) recent.removeLast();
  settings.setValue("recentStores", recent);
}

void MainWindow::updateChart() {
  QChart* chart = m_chart->chart();
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) chart->removeAxis(axis);
  if (!m_store) return;
  std::vector<int64_t> ids;
  for (const QModelIndex& idx : m_runView->selectionModel()->selectedRows()) {
    const int64_t id = m_proxy->data(idx, RunListModel::RunIdRole).toLongLong();
    if (id >= 0) ids.push_back(id);
  }
  const QString key = m_metric->currentText();
  m_series->setRuns(m_store, ids, key);
  chart->setTitle(ids.empty() ? tr("Select runs to plot %1").arg(key) : key);
  auto* x = new QValueAxis;
  auto* y = new QValueAxis;
  x->setTitleText(tr("step"));
  y->setTitleText(key);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  double ymin = INFINITY, ymax = -INFINITY, xmax = 0;
  for (int c = 0; c < m_series->columnCount(); ++c) {
    auto* s = new QLineSeries;
    s->setName(m_series->headerData(c, Qt::Horizontal).toString());
    for (int r = 0; r < m_series->rowCount(); ++r) {
      const QVariant v = m_series->data(m_series->index(r, c));
      if (!v.isValid() || v.toString().isEmpty()) continue;
      const double step = m_series->headerData(r, Qt::Vertical).toDouble(), value = v.toDouble();
      s->append(step, value);
      ymin = std::min(ymin, value), ymax = std::max(ymax, value), xmax = std::max(xmax, step);
    }
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  }
  if (ymin <= ymax) {
    x->setRange(0, std::max(1.0, xmax));
    y->setRange(ymin, ymin == ymax ? ymin + 1 : ymax);
  }
}
