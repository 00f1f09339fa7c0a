#pragma once
// RunPanelsView: the base of the analysis tabs that show every selected run side by side
// (issue 35: runs side by side): Phases (one chart, a bar group per run), Traffic and Expert load
// (a heatmap panel per run). It holds what they share:
//   - setRuns(store, runIds): the run browser's selection; each run named "#id name · measured|
//     predicted|emulated" (runKindText) in its stable colour (runColor).
//   - a legend row: a check box per selected run in its colour; unticking hides the run's panel /
//     bars (remembered by run id across selections, as the Metrics view does).
//   - panels (when the subclass asks for them): a RunPanel per selected run, laid out in a grid
//     (1 column for one run, 2 for up to 4, else 3) in a scroll area, a caption above and a
//     line below (the shared colour scale).
//   - a message page in place of the content: a hint for a null store or an empty selection,
//     "every selected run is hidden" when all are unticked. Errors of one run (unknown id,
//     StoreError, ...) belong in that run's panel: subclasses catch them per run; an exception
//     that still escapes loadRuns() is shown as the view's message. Nothing is thrown out of
//     setRuns or the controls.
// Subclasses put their controls on toolbar(), implement loadRuns() / clearRuns() and, to react
// to a run shown or hidden, shownRunsChanged().
#include <QColor>
#include <QWidget>

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <set>
#include <vector>

class QCheckBox;
class QGridLayout;
class QHBoxLayout;
class QLabel;
class QScrollArea;
class QStackedWidget;
class RunPanel;
namespace moebench {
class RunStore;
}

class RunPanelsView : public QWidget {
  Q_OBJECT

 public:
  ~RunPanelsView() override;

  void setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);
  const std::vector<int64_t>& runs() const { return m_runIds; }  // the selection, in its order
  std::vector<int64_t> shownRuns() const;                        // selected and ticked
  bool isRunShown(int64_t runId) const;
  // Ticks / unticks the run's check box; false when the run is not selected.
  bool setRunVisible(int64_t runId, bool visible);
  QCheckBox* runToggle(int64_t runId) const;  // nullptr when not selected
  // "#3 hier · measured"; "#9999 · not in the store" for an id the store lacks.
  QString runTitle(int64_t runId) const;
  QColor runColour(int64_t runId) const;
  QString message() const;  // the view's hint/error; empty when the content is shown
  RunPanel* panel(int64_t runId) const;  // nullptr without panels or for a run not selected
  QString panelMessage(int64_t runId) const;  // the panel's message; empty when it shows content
  QString scaleText() const;                  // the line under the panels

 protected:
  // emptyHint: what to do to see something, e.g. "Select runs to see their time split.";
  // panels: a RunPanel per selected run (see above).
  RunPanelsView(const QString& emptyHint, bool panels, QWidget* parent);
  QHBoxLayout* toolbar() const { return m_toolbar; }
  void setContent(QWidget* content);  // without panels: the view's content
  void setCaption(const QString& text);     // with panels: the line above them
  void setScaleText(const QString& text);   // with panels: the line below them
  std::shared_ptr<moebench::RunStore> store() const { return m_store; }
  // (Re)loads every selected run (runs(); panels exist already); catch a run's errors and show
  // them in its panel.
  virtual void loadRuns() = 0;
  virtual void clearRuns() = 0;
  // A run was shown or hidden (its panel already is).
  virtual void shownRunsChanged() {}
  void showMessage(const QString& text);
  void showContent();
  // Runs f (a control's action); an exception is shown as the message.
  template <class F>
  void guarded(F&& f);
  void showError(const char* what);

 private:
  struct Run {
    QString title;
    QColor colour;
    QCheckBox* toggle = nullptr;
    RunPanel* panel = nullptr;
  };
  void rebuildLegend();
  void layoutPanels();
  QString hiddenText() const;

  QString m_emptyHint;
  bool m_panels = false;
  std::shared_ptr<moebench::RunStore> m_store;
  std::vector<int64_t> m_runIds;
  std::map<int64_t, Run> m_runs;
  std::set<int64_t> m_hidden;
  QWidget* m_controls = nullptr;
  QHBoxLayout* m_toolbar = nullptr;
  QWidget* m_legend = nullptr;
  QGridLayout* m_legendLayout = nullptr;
  QStackedWidget* m_stack = nullptr;
  QLabel* m_message = nullptr;
  QWidget* m_content = nullptr;
  QLabel* m_caption = nullptr;
  QScrollArea* m_scroll = nullptr;
  QWidget* m_grid = nullptr;
  QGridLayout* m_gridLayout = nullptr;
  QLabel* m_scale = nullptr;
};

template <class F>
void RunPanelsView::guarded(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    showError(e.what());
  }
}
