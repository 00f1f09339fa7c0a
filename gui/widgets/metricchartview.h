#pragma once
// MetricChartView: one metric per step (loss, aux loss, ms/step, tokens/s, ...) with the selected
// runs overlaid, one line per run. The metric list is the union of the runs' metric keys.
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QChartView;
class QComboBox;
class MetricSeriesModel;
namespace moebench {
class RunStore;
}

class MetricChartView : public QWidget {
  Q_OBJECT

 public:
  explicit MetricChartView(QWidget* parent = nullptr);
  void setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);
  void setMetric(const QString& key);  // shown even when no selected run logs it
  QString metric() const;
  QChartView* chartView() const { return m_chart; }

 private:
  void updateKeys();
  void updateChart();

  std::shared_ptr<moebench::RunStore> m_store;
  std::vector<int64_t> m_runIds;
  MetricSeriesModel* m_series = nullptr;
  QComboBox* m_metric = nullptr;
  QChartView* m_chart = nullptr;
};
