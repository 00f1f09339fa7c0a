#pragma once
// AblationView: the ablation tab. The selected runs (in browser order) as variants: runs with the
// same variant label (the tag ablation.variant, else the run name) are repeats of one variant
// (`moebench ablate --repeats N`), drawn as one bar: the mean of the chosen metric (ms/step or
// tokens/s, per run as summarize_run has it: the first step left out as warm-up when more than 2
// steps were recorded) over its runs, with a ± one sample standard deviation error bar (n >= 2).
// Above each bar: its speedup against the baseline variant on the means ("1.25x"; the baseline
// "1.00x baseline"; speedup = baseline mean ms/step / variant mean ms/step, also for tokens/s
// bars), its mean ± std and n.
// Grouping: a label "k1=a k2=b" names its keys (AblationModel::parseVariantLabel). The bars are
// grouped along the x axis by the values of one varied key (default: the first; "Group by:" when
// several keys vary), one colour (bar set, named in the legend) per combination of the other
// varied keys' values. Keys every variant shares are named in the title. The category labels
// are "key=value" (the whole label when no key varies), wrapped onto lines at spaces, "=" and ","
// and never elided: the chart is at least as wide as its labels, title and bar notes need (in a
// scroll area when the tab is narrower), and the title is wrapped the same way.
// Beneath, two tables: Variants (AblationVariantModel: n, mean, std, speedup) and Runs
// (AblationModel: every run). The baseline is chosen in a combo box (a variant; default the
// first). A null store, an empty selection and any error while loading are shown as a message.
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QChartView;
class QGraphicsItem;
class QComboBox;
class QLabel;
class QScrollArea;
class QStackedWidget;
class QTableView;
class QTabWidget;
class AblationModel;
class AblationVariantModel;
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
  bool setBaseline(int64_t runId);  // the variant of that run; false when the run is not shown
  bool setGroupKey(const QString& key);  // false when the key does not vary
  QString groupKey() const;              // the key the bars are grouped by; empty: by whole label
  QString message() const;               // the hint/error shown; empty when the chart is
  // Per variant, in the model's variant order: the speedup text ("1.25x"; "no ms/step" when
  // missing).
  QStringList speedupLabels() const { return m_speedups; }
  // Per variant: the text above its bar, lines joined by "\n" ("1.24x\n16.60 ± 0.40\nn = 3").
  QStringList barNotes() const { return m_notes; }
  // The chart's category axis labels as plain text (the line breaks of the wrapping undone).
  QStringList categoryLabels() const;
  QStringList barSetNames() const;  // the legend: one per colour
  QString chartTitle() const;       // plain text, line breaks as "\n"

  AblationModel* model() const { return m_model; }
  AblationVariantModel* variantModel() const { return m_variantModel; }
  QChartView* chartView() const { return m_chart; }
  QComboBox* baselineChooser() const { return m_baseline; }
  QComboBox* metricChooser() const { return m_metric; }
  QComboBox* groupChooser() const { return m_group; }
  QTableView* table() const { return m_table; }                // runs
  QTableView* variantTable() const { return m_variantTable; }  // variants

  // "a.b=c d=e" -> lines of at most `width` characters, broken after a space, "=" or "," (a
  // longer unbroken word stays whole); the lines joined give the text back.
  static QStringList wrapLabel(const QString& text, int width = 24);

 private:
  void showMessage(const QString& text);
  void updateChart();
  void fillGroupChooser();

  std::shared_ptr<moebench::RunStore> m_store;
  AblationModel* m_model = nullptr;
  AblationVariantModel* m_variantModel = nullptr;
  QComboBox* m_metric = nullptr;
  QComboBox* m_baseline = nullptr;
  QComboBox* m_group = nullptr;
  QLabel* m_groupLabel = nullptr;
  QChartView* m_chart = nullptr;
  QScrollArea* m_scroll = nullptr;
  QTabWidget* m_tabs = nullptr;
  QTableView* m_table = nullptr;
  QTableView* m_variantTable = nullptr;
  QStackedWidget* m_stack = nullptr;
  QLabel* m_message = nullptr;
  QWidget* m_controls = nullptr;
  QStringList m_speedups, m_notes;
  QGraphicsItem* m_noteItem = nullptr;
};
