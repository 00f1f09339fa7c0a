#include "mainwindow.h"

#include <QCloseEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>
#include <functional>

#include "models/launchsession.h"
#include "models/runfilterproxy.h"
#include "models/runlistmodel.h"
#include "moebench/store/run_store.h"
#include "widgets/ablationview.h"
#include "widgets/configeditor.h"
#include "widgets/expertloadview.h"
#include "widgets/launcherwindow.h"
#include "widgets/metricchartview.h"
#include "widgets/phasebreakdownview.h"
#include "widgets/predictionaccuracyview.h"
#include "widgets/rooflineview.h"
#include "widgets/timelineview.h"
#include "widgets/trafficview.h"

namespace {
// Adds a run view tab; returns how to hand it the store and the selected runs.
template <class View>
std::function<void(std::shared_ptr<moebench::RunStore>, const std::vector<int64_t>&)> addView(QTabWidget* tabs, const QString& title, const QString& objectName) {
  auto* view = new View(tabs);
  view->setObjectName(objectName);
  tabs->addTab(view, title);
  return [view](std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& ids) { view->setRuns(store, ids); };
}
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("moebench"));
  m_runs = new RunListModel(this);
  m_proxy = new RunFilterProxy(this);
  m_proxy->setRunModel(m_runs);
  m_live = new LiveStore(this);

  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  m_filter = new QLineEdit(left);
  m_filter->setPlaceholderText(tr("Filter: hier, or strategy.name = hier_a2a and train.steps > 100"));
  m_filter->setClearButtonEnabled(true);
  m_filter->setToolTip(tr("Words match names, strategies, experiments, tags and notes; KEY OP VALUE compares a "
                          "column, any config key or a tag (= != < <= > >= ~ contains, !~), joined by and / or."));
  m_filterError = new QLabel(left);
  m_filterError->setObjectName("filterError");
  m_filterError->setStyleSheet(QStringLiteral("color: #b00020"));
  m_filterError->setWordWrap(true);
  m_filterError->hide();
  m_runView = new QTreeView(left);
  m_runView->setModel(m_proxy);
  m_runView->setSortingEnabled(true);
  m_runView->sortByColumn(RunListModel::NameColumn, Qt::AscendingOrder);
  m_runView->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_runView->setUniformRowHeights(true);
  m_runView->setContextMenuPolicy(Qt::CustomContextMenu);
  m_runView->header()->setContextMenuPolicy(Qt::CustomContextMenu);
  m_runView->header()->setStretchLastSection(false);
  leftLayout->addWidget(m_filter);
  leftLayout->addWidget(m_filterError);
  leftLayout->addWidget(m_runView);
  m_liveLabel = new QLabel(this);
  m_liveLabel->setObjectName("liveLabel");
  statusBar()->addPermanentWidget(m_liveLabel);

  m_views = new QTabWidget(this);
  m_views->setObjectName("runViews");
  m_refresh.push_back(addView<MetricChartView>(m_views, tr("Metrics"), "metricView"));
  m_liveRefresh.resize(1);
  m_liveRefresh[0] = [view = qobject_cast<MetricChartView*>(m_views->widget(0))](
                         std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& ids) {
    if (!view->refreshLive(store, ids)) view->setRuns(store, ids);
  };
  m_refresh.push_back(addView<PhaseBreakdownView>(m_views, tr("Phases"), "phaseView"));
  m_refresh.push_back(addView<AblationView>(m_views, tr("Ablation"), "ablationView"));
  m_refresh.push_back(addView<TrafficView>(m_views, tr("Traffic"), "trafficView"));
  m_refresh.push_back(addView<ExpertLoadView>(m_views, tr("Expert load"), "expertLoadView"));
  m_refresh.push_back(addView<TimelineView>(m_views, tr("Timeline"), "timelineView"));
  m_refresh.push_back(addView<RooflineView>(m_views, tr("Roofline"), "rooflineView"));
  m_refresh.push_back(addView<PredictionAccuracyView>(m_views, tr("Predicted vs measured"), "predictionView"));
  m_viewStale.assign(m_refresh.size(), true);
  m_liveRefresh.resize(m_refresh.size());
  for (int i = 0; i < m_views->count(); ++i)
    if (auto* timeline = qobject_cast<TimelineView*>(m_views->widget(i)))
      m_liveRefresh[size_t(i)] = [timeline](std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& ids) {
        if (!timeline->refreshLive(store, ids)) timeline->setRuns(store, ids);
      };
    else if (auto* phases = qobject_cast<PhaseBreakdownView*>(m_views->widget(i)))
      m_liveRefresh[size_t(i)] = [phases](std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& ids) {
        if (!phases->refreshLive(store, ids)) phases->setRuns(store, ids);
      };

  auto* split = new QSplitter(this);
  split->addWidget(left);
  split->addWidget(m_views);
  split->setStretchFactor(1, 1);
  split->setSizes({560, 720});

  m_config = new ConfigEditor(this);
  m_launcher = new LauncherWindow(this);
  m_pages = new QTabWidget(this);
  m_pages->addTab(split, tr("Runs"));
  m_pages->addTab(m_config, tr("Config"));
  m_pages->addTab(m_launcher, tr("Launch"));
  setCentralWidget(m_pages);
  buildMenus();
  resize(1280, 800);
  const QStringList params = QSettings().value("runParamColumns").toStringList();
  if (!params.isEmpty()) m_runs->setParamColumns(params);

  connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& text) {
    const QString error = m_proxy->setQuery(text);
    m_filterError->setText(error);
    m_filterError->setVisible(!error.isEmpty());
    if (error.isEmpty()) restoreExpansion();
  });
  connect(m_runView, &QTreeView::customContextMenuRequested, this, &MainWindow::showRunMenu);
  connect(m_runView->header(), &QHeaderView::customContextMenuRequested, this, &MainWindow::showHeaderMenu);
  connect(m_runView, &QTreeView::collapsed, this, [this](const QModelIndex& idx) {
    const QString name = idx.data().toString();
    if (!m_collapsed.contains(name)) m_collapsed << name;
  });
  connect(m_runView, &QTreeView::expanded, this, [this](const QModelIndex& idx) { m_collapsed.removeAll(idx.data().toString()); });
  connect(m_live, &LiveStore::refreshed, this, &MainWindow::applySnapshot);
  auto* ageTimer = new QTimer(this);
  ageTimer->setInterval(1000);
  connect(ageTimer, &QTimer::timeout, this, &MainWindow::updateLiveText);
  ageTimer->start();
  connect(m_runView->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MainWindow::selectionChanged);
  connect(m_views, &QTabWidget::currentChanged, this, [this] { refreshCurrentView(); });
  // The launcher runs the config being edited (once it is a file).
  connect(m_config, &ConfigEditor::filePathChanged, m_launcher, &LauncherWindow::setConfigPath);
  connect(m_config, &ConfigEditor::saved, m_launcher, &LauncherWindow::setConfigPath);
  // Launching the file being edited with unsaved changes would run the old file: ask first.
  m_launcher->setBeforeStart([this](const moebench::gui::LaunchSpec& spec) {
    if (spec.remote || !m_config->isModified() || m_config->filePath().isEmpty() ||
        QFileInfo(spec.configPath) != QFileInfo(m_config->filePath()))
      return true;
    const auto answer = QMessageBox::question(
        this, tr("Unsaved config"), tr("%1 has unsaved changes in the editor. Save them before the run?").arg(spec.configPath),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Cancel) return false;
    return answer == QMessageBox::Discard || m_config->saveFile(m_config->filePath());
  });
  // A finished launch: open its store, or reopen the open one (a remote run was imported into
  // it), keeping the selection.
  connect(m_launcher, &LauncherWindow::runStoreUpdated, this, [this](const QString& db) {
    const bool same = !m_storePath.isEmpty() && QFileInfo(db) == QFileInfo(m_storePath);
    const std::vector<int64_t> keep = same ? selectedRunIds() : std::vector<int64_t>{};
    if (openStore(db)) selectRuns(keep);
  });
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
  file->addAction(tr("Re&load"), QKeySequence::Refresh, this, &MainWindow::reloadStore);
  file->addAction(tr("&Export view..."), QKeySequence(tr("Ctrl+E")), this, [this] {
    const QString title = m_views->tabText(m_views->currentIndex()).remove('&').toLower().replace(' ', '-');
    const QString base = QFileDialog::getSaveFileName(this, tr("Export view (PNG, SVG and CSV files)"), title,
                                                      tr("Base name (.png/.svg/.csv are added) (*)"));
    if (!base.isEmpty()) exportCurrentView(base);
  });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* live = view->addAction(tr("&Live refresh (every %1 s)").arg(LiveStore::kDefaultIntervalMs / 1000));
  live->setCheckable(true);
  live->setChecked(m_live->isLive());
  connect(live, &QAction::toggled, m_live, &LiveStore::setLive);
}

bool MainWindow::openStore(const QString& path) {
  std::shared_ptr<moebench::RunStore> store;
  try {
    store = std::make_shared<moebench::RunStore>(path.toStdString(), moebench::RunStore::Mode::read_only);
    m_runs->setStore(store);  // reads the runs: may fail on a busy or damaged file too
  } catch (const std::exception& e) {
    m_error = QString::fromUtf8(e.what());
    statusBar()->showMessage(m_error);
    if (store) m_runs->setStore(m_store);  // back to the store that was open
    return false;
  }
  if (path != m_storePath) m_collapsed.clear();
  m_store = std::move(store);
  m_error.clear();
  m_storePath = path;
  m_live->setStore(path, m_store);
  m_launcher->setLocalStore(QFileInfo(path).absoluteFilePath());  // where a remote run is imported, unless chosen
  restoreExpansion();
  for (int c = 0; c < m_proxy->columnCount(); ++c) m_runView->resizeColumnToContents(c);
  m_runView->setColumnWidth(RunListModel::NameColumn, std::min(m_runView->columnWidth(RunListModel::NameColumn), 220));
  setWindowTitle(tr("moebench - %1").arg(path));
  statusBar()->showMessage(tr("%1: %2 runs").arg(path).arg(m_runs->runCount()));
  updateLiveText();
  rememberRecent(path);
  selectionChanged();
  return true;
}

void MainWindow::restoreExpansion() {
  for (int r = 0; r < m_proxy->rowCount(); ++r) {
    const QModelIndex idx = m_proxy->index(r, 0);
    m_runView->setExpanded(idx, !m_collapsed.contains(idx.data().toString()));
  }
}

QString MainWindow::filterError() const { return m_filterError->text(); }

QString MainWindow::liveText() const { return m_liveLabel->text(); }

void MainWindow::updateLiveText() {
  if (m_storePath.isEmpty()) {
    m_liveLabel->clear();
    return;
  }
  const QString error = m_live->lastError();
  if (!error.isEmpty()) {
    m_liveLabel->setStyleSheet(QStringLiteral("color: #b00020"));
    m_liveLabel->setText(error);
    return;
  }
  m_liveLabel->setStyleSheet({});
  const QDateTime last = m_live->lastUpdate();
  QString text = LiveStore::ageText(last.isValid() ? last.msecsTo(QDateTime::currentDateTime()) : -1);
  if (!m_live->isLive()) text += tr(" (live refresh off)");
  m_liveLabel->setText(text);
}

// A live read came back: new values keep the selection and expansion (RunListModel changes values
// in place when the runs are the same); new or deleted runs reset the list, and the selection and
// the expanded experiments are put back. The visible view reads again when a selected run changed.
void MainWindow::applySnapshot(const LiveStore::Snapshot& snapshot) {
  if (snapshot.path != m_storePath) return;
  if (!snapshot.error.isEmpty()) {
    m_error = snapshot.error;
    updateLiveText();
    return;
  }
  const bool hadError = !m_error.isEmpty();
  m_error.clear();
  const std::vector<int64_t> keep = selectedRunIds();
  auto signature = [this](const std::vector<int64_t>& ids) {
    QStringList out;
    for (int64_t id : ids) {
      const RunListModel::RunRow* row = m_runs->runRowAt(m_runs->indexForRun(id));
      if (row)
        out << QStringLiteral("%1:%2:%3:%4").arg(id).arg(int(row->info.status)).arg(row->steps).arg(row->info.end_time);
    }
    return out.join(QLatin1Char(' '));
  };
  const QString before = signature(keep);
  const int runsBefore = m_runs->runCount();
  const bool storeChanged = snapshot.store != m_store;
  m_store = snapshot.store;
  {
    const QSignalBlocker block(m_runView->selectionModel());
    m_runs->setExperiments(snapshot.store, snapshot.experiments);
    restoreExpansion();
    selectRuns(keep);
  }
  if (hadError || m_runs->runCount() != runsBefore)
    statusBar()->showMessage(tr("%1: %2 runs").arg(m_storePath).arg(m_runs->runCount()));
  updateLiveText();
  if (storeChanged || signature(keep) != before || selectedRunIds() != keep) {
    std::fill(m_viewStale.begin(), m_viewStale.end(), true);
    refreshCurrentView(true);
  }
}

// A new connection rather than a re-read: a store the GUI may only read as a snapshot (another
// user's, or in a directory it cannot write: see core/src/store/read_access.h) shows what was
// written since, as one it reads live does.
void MainWindow::reloadStore() {
  if (!m_store) return;
  const std::vector<int64_t> keep = selectedRunIds();
  if (!openStore(m_storePath)) return;  // the error is shown; the open store stays
  selectRuns(keep);
  selectionChanged();
}

void MainWindow::selectRuns(const std::vector<int64_t>& runIds) {
  QItemSelection selection;
  for (int64_t id : runIds) {
    const QModelIndex idx = m_proxy->mapFromSource(m_runs->indexForRun(id));
    if (idx.isValid()) selection.select(idx, idx);
  }
  m_runView->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

void MainWindow::rememberRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("recentStores").toStringList();
  const QString absolute = QFileInfo(path).absoluteFilePath();
  recent.removeAll(absolute);
  recent.prepend(absolute);
  while (recent.size() > 8) recent.removeLast();
  settings.setValue("recentStores", recent);
}

std::vector<int64_t> MainWindow::selectedRunIds() const {
  std::vector<int64_t> ids;
  auto add = [&ids](int64_t id) {
    if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  QModelIndexList rows = m_runView->selectionModel()->selectedRows();
  std::sort(rows.begin(), rows.end(), [](const QModelIndex& a, const QModelIndex& b) {
    const QModelIndex pa = a.parent(), pb = b.parent();
    const int ea = pa.isValid() ? pa.row() : a.row(), eb = pb.isValid() ? pb.row() : b.row();
    if (ea != eb) return ea < eb;
    return (pa.isValid() ? a.row() : -1) < (pb.isValid() ? b.row() : -1);
  });
  for (const QModelIndex& idx : rows) {
    const int64_t id = m_proxy->data(idx, RunListModel::RunIdRole).toLongLong();
    if (id >= 0) add(id);
    else
      for (int r = 0; r < m_proxy->rowCount(idx); ++r) add(m_proxy->data(m_proxy->index(r, 0, idx), RunListModel::RunIdRole).toLongLong());
  }
  return ids;
}

// Shift-click and select-all emit many selection signals: the views read the store once, when
// control returns to the event loop.
void MainWindow::selectionChanged() {
  std::fill(m_viewStale.begin(), m_viewStale.end(), true);
  if (!m_refreshQueued) {
    m_refreshQueued = true;
    QTimer::singleShot(0, this, [this] {
      m_refreshQueued = false;
      refreshCurrentView();
    });
  }
}

void MainWindow::refreshCurrentView(bool live) {
  const int tab = m_views->currentIndex();
  if (tab < 0 || size_t(tab) >= m_refresh.size() || !m_viewStale[size_t(tab)]) return;
  m_viewStale[size_t(tab)] = false;
  const auto& read = live && m_liveRefresh[size_t(tab)] ? m_liveRefresh[size_t(tab)] : m_refresh[size_t(tab)];
  read(m_store, selectedRunIds());
}

bool MainWindow::showTab(const QString& title) {
  auto find = [&title](QTabWidget* tabs) {
    for (int i = 0; i < tabs->count(); ++i)
      if (tabs->tabText(i).remove('&').compare(title, Qt::CaseInsensitive) == 0) return i;
    return -1;
  };
  if (const int page = find(m_pages); page >= 0) {
    m_pages->setCurrentIndex(page);
    return true;
  }
  if (const int view = find(m_views); view >= 0) {
    m_pages->setCurrentIndex(0);
    m_views->setCurrentIndex(view);
    return true;
  }
  return false;
}

bool MainWindow::selectExperiment(const QString& name) {
  for (int r = 0; r < m_proxy->rowCount(); ++r) {
    const QModelIndex idx = m_proxy->index(r, 0);
    if (m_proxy->data(idx, RunListModel::RunIdRole).toLongLong() < 0 && idx.data().toString() == name) {
      m_runView->selectionModel()->select(idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
      m_runView->scrollTo(idx);
      return true;
    }
  }
  return false;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QStringList pending;
  if (m_launcher->session()->isRunning()) pending << tr("a launched run is still going (quitting cancels it)");
  if (m_config->isModified()) pending << tr("the config has unsaved changes");
  if (!pending.isEmpty() && m_askBeforeClose) {
    const auto answer = QMessageBox::question(this, tr("Quit moebench-gui?"),
                                              tr("Quit anyway? %1.").arg(pending.join(tr("; "))));
    if (answer != QMessageBox::Yes) return event->ignore();
  }
  if (m_launcher->session()->isRunning()) {
    statusBar()->showMessage(tr("Stopping the launched run..."));
    m_launcher->cancel();
  }
  event->accept();
}
