#pragma once
// MainWindow: three pages.
//   Runs    the run browser (experiments -> runs; a query filter (runquery.h), sort, a column
//           chooser with any config key, multi-select; selecting an experiment selects its runs;
//           a context menu to rename, tag, annotate, delete, open a run's config in the editor and
//           diff two runs' configs) beside the run views: Metrics, Phases, Ablation, Traffic,
//           Expert load, Timeline, Roofline, Predicted vs measured. Only the visible view reads
//           the store; the others catch up when they are shown.
//   Config  the config editor (form + raw TOML, validation at the line).
//   Launch  the launcher (local or ssh); a finished run's store is opened or reloaded here.
// File > Open / Open recent / Reload open run stores read-only (moebench writes them in WAL mode).
// Live: LiveStore re-reads the open store every 2 s off the GUI thread (View > Live refresh); the
// status bar says "updated N s ago" or the last read's error, which clears with the next good
// read. New runs (RUNNING ones at once) appear without losing the selection or the expanded
// experiments; when a selected run changed, the visible view reads it again (Metrics, Phases and
// Timeline on a worker thread).
#include <QMainWindow>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "models/livestore.h"

class QLabel;
class QLineEdit;
class RunFilterProxy;
class QTabWidget;
class QTreeView;
class QWidget;
class RunListModel;
class ConfigEditor;
class LauncherWindow;
namespace moebench {
class RunStore;
}

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;
  // Opens a run store read-only; returns false (and shows why in the status bar) on error.
  bool openStore(const QString& path);
  // Opens the open store again (new runs, new steps); keeps the selection.
  void reloadStore();
  QString storePath() const { return m_storePath; }
  QString errorText() const { return m_error; }
  QTreeView* runView() const { return m_runView; }
  QTabWidget* pages() const { return m_pages; }
  QTabWidget* viewTabs() const { return m_views; }
  ConfigEditor* configEditor() const { return m_config; }
  LauncherWindow* launcher() const { return m_launcher; }
  // Shows the page or run view with this title (case-insensitive: "Runs", "Timeline", "Config",
  // ...); false when there is none.
  bool showTab(const QString& title);
  // Selects the experiment's row (its runs); false when the store has no such experiment.
  bool selectExperiment(const QString& name);
  // Selects these runs in the browser (ids not listed are skipped).
  void selectRuns(const std::vector<int64_t>& runIds);
  // Quitting asks first while a launched run is going or the config has unsaved changes;
  // false closes without asking (a launched run is still cancelled).
  void setAskBeforeClose(bool ask) { m_askBeforeClose = ask; }
  // The runs the selection stands for, in browser order (experiment rows count as their runs).
  std::vector<int64_t> selectedRunIds() const;
  LiveStore* liveStore() const { return m_live; }
  RunListModel* runModel() const { return m_runs; }
  RunFilterProxy* runProxy() const { return m_proxy; }
  QLineEdit* filterEdit() const { return m_filter; }
  QString filterError() const;
  QString liveText() const;  // the status bar's "updated N s ago" / error text
  // The param columns shown after the fixed ones (also chosen from the header's context menu).
  void setParamColumns(const QStringList& keys);
  // The run browser's actions on the selection (also in its context menu); each returns false
  // with the reason in the status bar (no dialogs: the menu asks first).
  bool renameRun(int64_t runId, const QString& name);
  bool setRunTags(int64_t runId, const QString& tags);
  bool setRunNote(int64_t runId, const QString& note);
  bool deleteRuns(const std::vector<int64_t>& runIds);
  bool openRunConfig(int64_t runId);
  // File > Export view: the visible run view's charts (PNG, SVG) and tables (CSV) to
  // basePath.png/.svg/.csv (widgets/viewexport.h; never overwrites). Returns the files written;
  // the reason in the status bar and *error when none.
  QStringList exportCurrentView(const QString& basePath, QString* error = nullptr);
  // Pairs a predicted run with a measured one for Predicted vs measured (tag pair_run).
  bool pairPrediction(int64_t predictedId, int64_t measuredId);  // in the Config page, as a new unsaved document

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildMenus();
  void rememberRecent(const QString& path);
  void selectionChanged();
  void refreshCurrentView(bool live = false);
  void applySnapshot(const LiveStore::Snapshot& snapshot);
  void showRunMenu(const QPoint& pos);
  void showHeaderMenu(const QPoint& pos);
  void showConfigDiff(int64_t a, int64_t b);
  void restoreExpansion();
  void updateLiveText();

  std::shared_ptr<moebench::RunStore> m_store;
  QString m_storePath;
  RunListModel* m_runs = nullptr;
  RunFilterProxy* m_proxy = nullptr;
  QTreeView* m_runView = nullptr;
  QLineEdit* m_filter = nullptr;
  QLabel* m_filterError = nullptr;
  QLabel* m_liveLabel = nullptr;
  LiveStore* m_live = nullptr;
  QStringList m_collapsed;  // experiments the user collapsed (kept across reloads)
  QTabWidget* m_pages = nullptr;
  QTabWidget* m_views = nullptr;
  // Per run view tab: hands it the store and selection; whether it has missed a change.
  using ViewRefresh = std::function<void(std::shared_ptr<moebench::RunStore>, const std::vector<int64_t>&)>;
  std::vector<ViewRefresh> m_refresh;
  // Per view tab: its read off the GUI thread for a live refresh, where it has one (else null:
  // the view reads on the GUI thread, only when a selected run changed).
  std::vector<ViewRefresh> m_liveRefresh;
  std::vector<bool> m_viewStale;  // per view tab: selection or store changed since it was shown
  ConfigEditor* m_config = nullptr;
  LauncherWindow* m_launcher = nullptr;
  QString m_error;
  bool m_refreshQueued = false;
  bool m_askBeforeClose = true;
};
