// MainWindow's run browser actions (mainwindow.h): the column chooser, the run context menu and
// what it does to the store (rename, tags, note, delete, pairing a prediction), a run's config in
// the editor, two runs' config diff, and File > Export view.
#include <QDialog>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMap>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTreeView>
#include <QVBoxLayout>

#include "mainwindow.h"
#include "models/predictionaccuracymodel.h"
#include "models/runedits.h"
#include "models/runfilterproxy.h"
#include "models/runlistmodel.h"
#include "moebench/store/run_store.h"
#include "widgets/configeditor.h"
#include "widgets/viewexport.h"

void MainWindow::setParamColumns(const QStringList& keys) {
  const std::vector<int64_t> keep = selectedRunIds();
  m_runs->setParamColumns(keys);
  restoreExpansion();
  selectRuns(keep);
  for (int c = RunListModel::ColumnCount; c < m_proxy->columnCount(); ++c) m_runView->resizeColumnToContents(c);
  QSettings().setValue("runParamColumns", keys);
}

// Column chooser: the fixed columns (hide / show) and any param (config key) as a column.
void MainWindow::showHeaderMenu(const QPoint& pos) {
  QMenu menu(this);
  for (int c = 1; c < RunListModel::ColumnCount; ++c) {
    QAction* a = menu.addAction(m_runs->headerData(c, Qt::Horizontal).toString());
    a->setCheckable(true);
    a->setChecked(!m_runView->isColumnHidden(c));
    connect(a, &QAction::toggled, this, [this, c](bool on) { m_runView->setColumnHidden(c, !on); });
  }
  menu.addSeparator();
  QMenu* params = menu.addMenu(tr("Config keys"));
  const QStringList shown = m_runs->paramColumns();
  QMap<QString, QMenu*> sections;
  for (const QString& key : m_runs->paramKeys()) {
    const QString section = key.section(QLatin1Char('.'), 0, 0);
    QMenu* sub = key.contains(QLatin1Char('.')) ? sections.value(section) : params;
    if (!sub) sub = sections[section] = params->addMenu(section);
    QAction* a = sub->addAction(key);
    a->setCheckable(true);
    a->setChecked(shown.contains(key));
    connect(a, &QAction::toggled, this, [this, key](bool on) {
      QStringList keys = m_runs->paramColumns();
      keys.removeAll(key);
      if (on) keys << key;
      setParamColumns(keys);
    });
  }
  menu.exec(m_runView->header()->mapToGlobal(pos));
}

void MainWindow::showRunMenu(const QPoint& pos) {
  const std::vector<int64_t> ids = selectedRunIds();
  if (ids.empty() || m_storePath.isEmpty()) return;
  const int64_t first = ids.front();
  const RunListModel::RunRow* row = m_runs->runRowAt(m_runs->indexForRun(first));
  if (!row) return;
  QMenu menu(this);
  menu.addAction(tr("Open config in editor"), this, [this, first] { openRunConfig(first); });
  QAction* diff = menu.addAction(tr("Diff configs"), this, [this, ids] { showConfigDiff(ids[0], ids[1]); });
  diff->setEnabled(ids.size() == 2);
  if (ids.size() == 2) {
    const RunListModel::RunRow* a = m_runs->runRowAt(m_runs->indexForRun(ids[0]));
    const RunListModel::RunRow* b = m_runs->runRowAt(m_runs->indexForRun(ids[1]));
    if (a && b && a->predicted != b->predicted) {
      const int64_t p = a->predicted ? ids[0] : ids[1], m = a->predicted ? ids[1] : ids[0];
      menu.addAction(tr("Pair prediction #%1 with measured run #%2").arg(p).arg(m), this,
                     [this, p, m] { pairPrediction(p, m); });
    }
  }
  menu.addSeparator();
  menu.addAction(tr("Rename..."), this, [this, first, row] {
    bool ok = false;
    const QString name = QInputDialog::getText(this, tr("Rename run"), tr("Name:"), QLineEdit::Normal,
                                               QString::fromStdString(row->info.name), &ok);
    if (ok) renameRun(first, name);
  });
  menu.addAction(tr("Tags..."), this, [this, first, row] {
    bool ok = false;
    const QString tags = QInputDialog::getText(this, tr("Run tags"), tr("Labels, comma-separated:"), QLineEdit::Normal,
                                               row->userTags, &ok);
    if (ok) setRunTags(first, tags);
  });
  menu.addAction(tr("Note..."), this, [this, first, row] {
    bool ok = false;
    const QString note = QInputDialog::getMultiLineText(this, tr("Run note"), tr("Note:"), row->note, &ok);
    if (ok) setRunNote(first, note);
  });
  menu.addSeparator();
  menu.addAction(tr("Delete %n run(s)...", nullptr, int(ids.size())), this, [this, ids] {
    if (QMessageBox::question(this, tr("Delete runs"),
                              tr("Delete %n run(s) and all their records from %1? This cannot be undone.", nullptr,
                                 int(ids.size()))
                                  .arg(m_storePath)) == QMessageBox::Yes)
      deleteRuns(ids);
  });
  menu.exec(m_runView->viewport()->mapToGlobal(pos));
}

namespace {
// A change made: the store is read again at once so the browser shows it.
bool reportEdit(MainWindow* w, const QString& error, const QString& done) {
  w->statusBar()->showMessage(error.isEmpty() ? done : error);
  if (error.isEmpty()) w->liveStore()->refresh();
  return error.isEmpty();
}
}  // namespace

bool MainWindow::renameRun(int64_t runId, const QString& name) {
  return reportEdit(this, moebench::gui::renameRun(m_storePath, runId, name), tr("Run %1 renamed to %2").arg(runId).arg(name.trimmed()));
}

bool MainWindow::setRunTags(int64_t runId, const QString& tags) {
  return reportEdit(this, moebench::gui::setRunTags(m_storePath, runId, tags), tr("Run %1 tagged: %2").arg(runId).arg(moebench::gui::normalizeTags(tags)));
}

bool MainWindow::setRunNote(int64_t runId, const QString& note) {
  return reportEdit(this, moebench::gui::setRunNote(m_storePath, runId, note), tr("Note of run %1 saved").arg(runId));
}

bool MainWindow::deleteRuns(const std::vector<int64_t>& runIds) {
  return reportEdit(this, moebench::gui::deleteRuns(m_storePath, runIds), tr("%n run(s) deleted", nullptr, int(runIds.size())));
}

QStringList MainWindow::exportCurrentView(const QString& basePath, QString* error) {
  QString why;
  const QStringList files = moebench::gui::exportView(m_views->currentWidget(), basePath, &why);
  if (error) *error = why;
  statusBar()->showMessage(files.isEmpty() ? tr("Export: %1").arg(why)
                                           : tr("Exported %1").arg(files.join(QStringLiteral(", "))));
  return files;
}

bool MainWindow::pairPrediction(int64_t predictedId, int64_t measuredId) {
  const RunListModel::RunRow* p = m_runs->runRowAt(m_runs->indexForRun(predictedId));
  const RunListModel::RunRow* m = m_runs->runRowAt(m_runs->indexForRun(measuredId));
  if (!p || !m || !p->predicted || m->predicted) {
    statusBar()->showMessage(tr("pair: run %1 must be a predicted run and run %2 a measured one").arg(predictedId).arg(measuredId));
    return false;
  }
  return reportEdit(this,
                    moebench::gui::setRunTag(m_storePath, predictedId, QString::fromLatin1(PredictionAccuracyModel::PairRunTag),
                                             QString::fromStdString(m->info.uuid)),
                    tr("Prediction #%1 paired with measured run #%2").arg(predictedId).arg(measuredId));
}

bool MainWindow::openRunConfig(int64_t runId) {
  const RunListModel::RunRow* row = m_runs->runRowAt(m_runs->indexForRun(runId));
  if (!row) return false;
  QString toml;
  try {
    toml = moebench::gui::runConfigToml(row->info.config_json);
  } catch (const std::exception& e) {
    statusBar()->showMessage(tr("cannot open the config of run %1: %2").arg(runId).arg(QString::fromUtf8(e.what())));
    return false;
  }
  if (m_config->isModified() && m_askBeforeClose &&
      QMessageBox::question(this, tr("Unsaved config"), tr("The editor has unsaved changes. Drop them?")) != QMessageBox::Yes)
    return false;
  m_config->openText(toml, tr("The config of run %1 (%2) from %3: save it to run it again")
                               .arg(runId)
                               .arg(QString::fromStdString(row->info.name), m_storePath));
  showTab(tr("Config"));
  return true;
}

void MainWindow::showConfigDiff(int64_t a, int64_t b) {
  std::vector<moebench::gui::ParamDifference> diff;
  try {
    diff = moebench::gui::diffParams(m_store->params(a), m_store->params(b));
  } catch (const std::exception& e) {
    statusBar()->showMessage(QString::fromUtf8(e.what()));
    return;
  }
  auto name = [this](int64_t id) {
    const RunListModel::RunRow* row = m_runs->runRowAt(m_runs->indexForRun(id));
    return row ? tr("%1 (#%2)").arg(QString::fromStdString(row->info.name)).arg(id) : tr("#%1").arg(id);
  };
  auto* dialog = new QDialog(this);
  dialog->setObjectName("configDiff");
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setWindowTitle(tr("Config diff: %1 vs %2").arg(name(a), name(b)));
  auto* model = new QStandardItemModel(int(diff.size()), 3, dialog);
  model->setHorizontalHeaderLabels({tr("Key"), name(a), name(b)});
  for (size_t i = 0; i < diff.size(); ++i) {
    model->setItem(int(i), 0, new QStandardItem(diff[i].key));
    model->setItem(int(i), 1, new QStandardItem(diff[i].a));
    model->setItem(int(i), 2, new QStandardItem(diff[i].b));
  }
  auto* table = new QTableView(dialog);
  table->setModel(model);
  table->resizeColumnsToContents();
  auto* layout = new QVBoxLayout(dialog);
  layout->addWidget(new QLabel(diff.empty() ? tr("The two configs are the same.")
                                            : tr("%n config key(s) differ.", nullptr, int(diff.size())), dialog));
  layout->addWidget(table);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
  connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
  layout->addWidget(buttons);
  dialog->resize(720, 420);
  dialog->show();
}
