#pragma once
// TimelineView: the per-rank timeline tab. A run chooser (shown when several runs are
// selected), a step selector ("all steps" plus every step that has spans), a legend of the
// category colours, the TimelineCanvas and a status line (spans loaded, ranks, streams, visible
// range). All numbers come from RunStore::spans of the chosen run and step.
//
// Default step: "all steps" when the run has at most kAllStepsByDefault steps with spans, else
// its first step (so that opening a long run does not load millions of spans at once; "all
// steps" stays one click away).
// "Compare with:" stacks a second run of the store below the shown one on one time axis
// (TimelineCanvas::setTracks: each run's first shown step at t = 0), with its own step selector:
// choosing a run, or a new step of the first run, shows the same step of the second when it
// has spans there ("all steps" with "all steps"), else its first step. Each run's header names
// it: "#id name · predicted|measured · step N" (predicted: the run's tag "predicted").
// A second row holds the timeline's tools (Perfetto-like):
//   Search   a box (Ctrl+F): spans whose name contains the text (any case) are highlighted and
//            the others dimmed, "i / n matches" beside it; Enter / the down arrow jumps to the
//            next match (zooming and scrolling it into view), Shift+Enter / the up arrow to the
//            previous one.
//   Flows    shows or hides the arrows from each point-to-point send to its receive
//            (models/timelineflows.h says which spans pair up).
//   Select range  a plain left-drag selects a time range instead of zooming (Shift+left-drag
//            always does). The selected range's summary (models/timelinerangesummary.h: per
//            span name of the shown run, the top track when stacked: count, total and mean time
//            clipped to the range) appears in a table below the canvas, sortable by any column;
//            "Clear", Esc on the canvas or a click clears it.
// A null store, an empty selection, a run without spans and any error while loading are shown
// as a message in place of the canvas (message()); nothing is thrown out of setRuns.
#include <QFutureWatcher>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

#include "moebench/store/run_store.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QStackedWidget;
class QTableView;
class QToolButton;
class TimelineCanvas;
class TimelineRangeSummaryModel;
namespace moebench {
class RunStore;
}

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kAllStepsByDefault = 64;
  static constexpr int64_t kAllSteps = -1;  // step selector value of "all steps"
  static constexpr int64_t kNoStep = -2;    // currentStep() when the selector is empty

  explicit TimelineView(QWidget* parent = nullptr);
  ~TimelineView() override;

  void setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);
  // The window's live refresh: the shown run's steps (and, for "all steps", its spans) read again
  // on a worker thread; new steps join the step chooser, the chosen step stays. False (nothing
  // started) for another store or selection, or while a read is in flight: then call setRuns.
  bool refreshLive(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);
  bool isReading() const { return m_live.isRunning(); }

  // Shows a step of the current run (kAllSteps: every step); false when the selector lacks it.
  // When the selection changes but keeps the shown run, its step stays chosen.
  bool selectStep(int64_t step);
  int64_t currentRun() const { return m_run; }      // -1 when none
  int64_t currentStep() const;                      // kAllSteps, a step, or kNoStep
  QString message() const;                          // the hint/error shown; empty when the canvas is
  QString statusText() const;

  TimelineCanvas* canvas() const { return m_canvas; }
  QComboBox* runChooser() const { return m_runCombo; }
  QComboBox* stepChooser() const { return m_stepCombo; }
  // "(none)" (data -1) and every run of the store (data: its id).
  QComboBox* compareChooser() const { return m_compareCombo; }
  QComboBox* compareStepChooser() const { return m_compareStepCombo; }
  // Stacks this run below the shown one (-1: none); false when the store has no such run.
  bool compareWith(int64_t runId);
  int64_t comparedRun() const;  // -1 when none

  QLineEdit* searchBox() const { return m_search; }
  QString searchStatus() const;           // "3 / 12 matches", "12 matches", "no match", or empty
  QCheckBox* flowsToggle() const { return m_flows; }
  QToolButton* rangeSelectToggle() const { return m_selectRange; }
  QWidget* rangeSummaryPanel() const { return m_summaryPanel; }  // hidden while no range is selected
  QTableView* rangeSummaryTable() const { return m_summaryTable; }
  TimelineRangeSummaryModel* rangeSummaryModel() const { return m_summary; }
  QString rangeSummaryTitle() const;       // "Range 1.000 ms – 3.000 ms (2.000 ms): 5 spans"

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void showMessage(const QString& text);
  // Fills the step selector for m_run (choosing preferredStep when it has spans, else the
  // default), then loadSpans().
  void loadRun(int64_t preferredStep = kNoStep);
  void loadSpans();  // the chosen step's spans (and the compared run's) into the canvas
  void fillCompareChooser();
  // Fills the compared run's step selector, preferring `step` (the shown run's step).
  void fillCompareSteps(int64_t step);
  QString runTitle(int64_t runId, const QComboBox* steps) const;
  void updateStatus();
  void updateSearchStatus();
  void updateRangeSummary();

  struct LiveRead {
    std::vector<int64_t> steps;
    std::vector<moebench::SpanRow> spans;  // all steps' spans, when "all steps" is shown
    bool allSteps = false;
    QString error;
  };
  void applyLive(LiveRead read);

  std::shared_ptr<moebench::RunStore> m_store;
  std::vector<int64_t> m_runIds;
  QFutureWatcher<LiveRead> m_live;
  int64_t m_run = -1;
  QString m_runLabel;
  QComboBox* m_runCombo = nullptr;
  QLabel* m_runLabelWidget = nullptr;
  QComboBox* m_stepCombo = nullptr;
  QComboBox* m_compareCombo = nullptr;
  QLabel* m_compareStepLabel = nullptr;
  QComboBox* m_compareStepCombo = nullptr;
  QStackedWidget* m_stack = nullptr;
  QLabel* m_message = nullptr;
  TimelineCanvas* m_canvas = nullptr;
  QLabel* m_status = nullptr;
  QLineEdit* m_search = nullptr;
  QToolButton* m_searchPrev = nullptr;
  QToolButton* m_searchNext = nullptr;
  QLabel* m_searchCount = nullptr;
  QCheckBox* m_flows = nullptr;
  QToolButton* m_selectRange = nullptr;
  QWidget* m_summaryPanel = nullptr;
  QLabel* m_summaryTitle = nullptr;
  QTableView* m_summaryTable = nullptr;
  TimelineRangeSummaryModel* m_summary = nullptr;
};
