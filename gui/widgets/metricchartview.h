#pragma once
// MetricChartView: one metric per step (loss, aux loss, ms/step, tokens/s, bytes, ...) with the
// selected runs overlaid, one line per run in the run's colour (runcolors.h: the same colour in
// every view). What a researcher reads off it (issue 35, point 4):
//   - the y axis titled with what the metric measures and its unit (metricunits.h: "step time
//     (ms)", "bytes sent inter-node per step, rank 0 (MB)"); bytes scaled to kB/MB/GB
//   - the default y range leaves out each run's first step when it has more than 2 (the warm-up
//     spike, seriesmath.h); zoom with a rubber band, "Fit" shows everything again
//   - smoothing (TensorBoard's debiased EMA, 0 = off): the raw line stays, paler, behind the
//     smoothed one
//   - a log y axis (when every value is positive)
//   - a legend beside the chart with every run's full name ("#id name", predicted runs say so)
//     and a check box per run that hides or shows its line
//   - hover: the run, step and value under the mouse (hoverText)
// setRuns() reads on the calling thread; refreshLive() reads on a worker thread and applies the
// result when it comes back (the window's live refresh).
#include <QWidget>

#include <QFutureWatcher>

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "models/metricseriesmodel.h"

class QChartView;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QListWidget;
class QPushButton;
class QValueAxis;
namespace moebench {
class RunStore;
}

class MetricChartView : public QWidget {
  Q_OBJECT

 public:
  explicit MetricChartView(QWidget* parent = nullptr);
  ~MetricChartView() override;
  void setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);
  // Reads the same runs again off the GUI thread; false while a read is in flight.
  bool refreshLive(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);
  bool isReading() const { return m_watcher.isRunning(); }
  void setMetric(const QString& key);  // shown even when no selected run logs it
  QString metric() const;
  void setSmoothing(double weight);    // 0 .. 0.99
  void setLogScale(bool on);
  void setRunVisible(int64_t runId, bool visible);
  QChartView* chartView() const { return m_chart; }
  QListWidget* legend() const { return m_legend; }
  MetricSeriesModel* model() const { return m_series; }
  QString yTitle() const;
  // The y range shown (after fit); the text a hover at (run column, step) shows.
  std::pair<double, double> yRange() const;
  QString hoverText(int column, int64_t step) const;
  void fit();

 private:
  struct Loaded {
    std::vector<QString> keys;
    MetricSeriesModel::Data data;
    QString error;
  };
  static Loaded load(const moebench::RunStore& store, const std::vector<int64_t>& runIds, const QString& key);
  void apply(Loaded loaded);
  void updateKeys(const std::vector<QString>& keys);
  void updateChart();

  std::shared_ptr<moebench::RunStore> m_store;
  std::vector<int64_t> m_runIds;
  std::set<int64_t> m_hidden;
  MetricSeriesModel* m_series = nullptr;
  QComboBox* m_metric = nullptr;
  QDoubleSpinBox* m_smooth = nullptr;
  QCheckBox* m_log = nullptr;
  QPushButton* m_fit = nullptr;
  QChartView* m_chart = nullptr;
  QListWidget* m_legend = nullptr;
  QFutureWatcher<Loaded> m_watcher;
  std::shared_ptr<moebench::RunStore> m_pendingStore;
  std::pair<double, double> m_range{0, 1};
};
