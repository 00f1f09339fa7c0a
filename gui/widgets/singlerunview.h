#pragma once
// SingleRunView: the base of the analysis tabs that show one run at a time (phase breakdown,
// traffic heatmap, expert-load heatmap). It holds what they share:
//   - setRuns(store, runIds): the run browser's selection. One run: its name is shown; several:
//     a run chooser (QComboBox, "name (id N)") picks which one is shown, keeping the shown run
//     when it stays selected.
//   - a message page in place of the content: a hint for a null store or an empty selection,
//     and any StoreError / std::exception thrown while loading ("cannot show run 'x': ...").
//     Nothing is thrown out of setRuns or the choosers.
// Subclasses put their own controls on toolbar() and their content with setContent(), and
// implement loadRun() (may throw) and clearRun().
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QComboBox;
class QHBoxLayout;
class QLabel;
class QStackedWidget;
namespace moebench {
class RunStore;
}

class SingleRunView : public QWidget {
  Q_OBJECT

 public:
  ~SingleRunView() override;

  void setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);
  // Shows one of the selected runs; false when it is not selected.
  bool selectRun(int64_t runId);
  int64_t currentRun() const { return m_run; }  // -1 when none
  QString message() const;                      // the hint/error shown; empty when the content is
  QComboBox* runChooser() const { return m_runCombo; }

 protected:
  // emptyHint: what to do to see something, e.g. "Select a run to see its time split."
  SingleRunView(const QString& emptyHint, QWidget* parent);
  QHBoxLayout* toolbar() const { return m_toolbar; }
  void setContent(QWidget* content);
  std::shared_ptr<moebench::RunStore> store() const { return m_store; }
  // Loads the run into the content; throws on error. Call showMessage() for a run that has
  // nothing to show (and return normally).
  virtual void loadRun(int64_t runId) = 0;
  virtual void clearRun() = 0;
  void showMessage(const QString& text);
  void showContent();
  // Runs f (a chooser's action); an exception is shown as the message.
  template <class F>
  void guarded(F&& f);
  void showError(const char* what);

 private:
  void load();

  QString m_emptyHint;
  std::shared_ptr<moebench::RunStore> m_store;
  std::vector<int64_t> m_runIds;
  int64_t m_run = -1;
  QHBoxLayout* m_toolbar = nullptr;
  QComboBox* m_runCombo = nullptr;
  QLabel* m_runName = nullptr;
  QStackedWidget* m_stack = nullptr;
  QLabel* m_message = nullptr;
  QWidget* m_controls = nullptr;
};

template <class F>
void SingleRunView::guarded(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    showError(e.what());
  }
}
