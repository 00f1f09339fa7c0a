#pragma once
// PhaseBreakdownView: the time-split tab, every selected run at once (RunPanelsView, no panels:
// one chart so the bars share one ms axis and compare directly).
// Chart: horizontal stacked bars (compute, comm, idle; the categories' own colours), grouped by
// row of PhaseBreakdownModel ("layer L" rows ascending, "other", "whole step"; top to bottom),
// one bar per shown run in each group, labelled "<row> · #id name · measured|predicted|emulated"
// with the run's part in its colour (runColor); a blank row between groups. A run lacking a row
// (e.g. a layer it has no spans for) has no bar in that group. Labels and the title are never
// elided: the chart grows (and scrolls) instead.
// Table: PhaseRunsModel, every shown run's rows with a Run column. A note says per run what was
// averaged; a run that cannot be read or has no step spans is named with the reason under the
// chart ("#4 broken · measured: run 'broken' has no step spans recorded ...").
// All numbers are mean milliseconds per (step, rank), one model per run (phasebreakdownmodel.h).
#include <QFutureWatcher>
#include <QStringList>

#include <cstdint>
#include <map>

#include "models/phasebreakdownmodel.h"
#include "runpanelsview.h"

class QChartView;
class QLabel;
class QTableView;
class PhaseBreakdownModel;
class PhaseRunsModel;

class PhaseBreakdownView : public RunPanelsView {
  Q_OBJECT

 public:
  explicit PhaseBreakdownView(QWidget* parent = nullptr);
  ~PhaseBreakdownView() override;

  PhaseBreakdownModel* model(int64_t runId) const;  // nullptr for a run not selected
  // The window's live refresh: the same runs read again on a worker thread, shown when the read
  // comes back. False (nothing started) for another store or selection, or while a read is in
  // flight: then call setRuns.
  bool refreshLive(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);
  bool isReading() const { return m_live.isRunning(); }
  PhaseRunsModel* runsModel() const { return m_runsModel; }
  QChartView* chartView() const { return m_chart; }
  QTableView* table() const { return m_table; }
  QString noteText() const;
  QString problemsText() const;  // the runs without bars and why; empty when none
  QString chartTitle() const;
  // The bar categories as plain text, in the axis' order (bottom-up: the chart's last row
  // first); "" for the blank rows between groups. Index i is index i of every bar set.
  QStringList categoryLabels() const;
  // "<row> · <run title>": the plain label of a run's bar in a row.
  QString barLabel(int64_t runId, const QString& rowLabel) const;

 protected:
  void loadRuns() override;
  void clearRuns() override;
  void shownRunsChanged() override;

 private:
  void updateChart();
  // Per run: what PhaseBreakdownModel::read gave, or why it failed.
  struct LiveRun {
    int64_t id = -1;
    PhaseBreakdownModel::Data data;
    QString error;
  };
  void applyLive(const std::vector<LiveRun>& read);
  QFutureWatcher<std::vector<LiveRun>> m_live;

  std::map<int64_t, PhaseBreakdownModel*> m_models;
  std::map<int64_t, QString> m_problems;  // run -> why it has no bars
  PhaseRunsModel* m_runsModel = nullptr;
  QChartView* m_chart = nullptr;
  QTableView* m_table = nullptr;
  QLabel* m_note = nullptr;
  QLabel* m_problemsLabel = nullptr;
  QStringList m_plainCategories;
};
