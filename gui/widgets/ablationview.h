#pragma once
// AblationView: the ablation tab. One bar per variant (the selected runs, in browser order) of
// the chosen metric (ms/step or tokens/s, means per summarize_run: the first step left out as
// warm-up when more than 2 steps were recorded), each bar's value on it and its speedup against
// the baseline under it in the category label ("hier_a2a\n1.25x"; the baseline "1.00x"; speedup
// = baseline ms/step / variant ms/step). The baseline is chosen in a combo box (default: the
// first run). AblationModel as a table beneath gives every number (final loss, comm share).
// A null store, an empty selection and any error while loading are shown as a message.
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QChartView;
class QComboBox;
class QLabel;
class QStackedWidget;
class QTableView;
class AblationModel;
namespace moebench {
class RunStore;
}

class AblationView : public QWidget {
  Q_OBJECT

 public:
  enum Metric { StepMs, TokensPerS };

  explicit AblationView(QWidget* parent = nullptr);
  ~AblationView() override;

  // runIds: the runs of the experiment (the selection in the run browser).
  void setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);
  void setMetric(Metric metric);
  Metric metric() const;
  bool setBaseline(int64_t runId);  // false when the run is not shown
  QString message() const;          // the hint/error shown; empty when the chart is
  // Per bar, in order: the speedup text ("1.25x"; "no ms/step" when missing).
  QStringList speedupLabels() const { return m_speedups; }
  QStringList categoryLabels() const;  // the chart's category axis labels

  AblationModel* model() const { return m_model; }
  QChartView* chartView() const { return m_chart; }
  QComboBox* baselineChooser() const { return m_baseline; }
  QComboBox* metricChooser() const { return m_metric; }
  QTableView* table() const { return m_table; }

 private:
  void showMessage(const QString& text);
  void updateChart();

  std::shared_ptr<moebench::RunStore> m_store;
  AblationModel* m_model = nullptr;
  QComboBox* m_metric = nullptr;
  QComboBox* m_baseline = nullptr;
  QChartView* m_chart = nullptr;
  QTableView* m_table = nullptr;
  QStackedWidget* m_stack = nullptr;
  QLabel* m_message = nullptr;
  QWidget* m_controls = nullptr;
  QStringList m_speedups;
};
