#pragma once
// MainWindow: File > Open / recent stores, the run browser (experiments -> runs, sortable,
// filterable, multi-select) and a metric chart overlaying the selected runs.
#include <QMainWindow>

#include <memory>

class QChartView;
class QComboBox;
class QLineEdit;
class QSortFilterProxyModel;
class QTreeView;
class RunListModel;
class MetricSeriesModel;
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
  QString errorText() const { return m_error; }
  QTreeView* runView() const { return m_runView; }

 private:
  void buildMenus();
  void rememberRecent(const QString& path);
  void updateChart();

  std::shared_ptr<moebench::RunStore> m_store;
  RunListModel* m_runs = nullptr;
  QSortFilterProxyModel* m_proxy = nullptr;
  MetricSeriesModel* m_series = nullptr;
  QTreeView* m_runView = nullptr;
  QLineEdit* m_filter = nullptr;
  QComboBox* m_metric = nullptr;
  QChartView* m_chart = nullptr;
  QString m_error;
};
