#pragma once
// PredictionAccuracyView: predicted against measured ms/step for every pair of the open store
// (models/predictionaccuracymodel.h says how runs are paired and what the numbers mean).
//   chart  a scatter, measured ms/step on x and predicted ms/step on y on the same scale (both
//          axes span the same range), one point per pair; the identity line y = x across that
//          range (points above it: predicted slower than measured). Hovering a point names the
//          pair; clicking it selects the pair's row in the table.
//   label  "3 pairs · MAE 9.17 % · R² 0.948" (or why R² is undefined), and the predicted runs
//          without a measured run with the reason.
//   table  the model's pairs; selecting a row highlights its point.
// The view reads the whole store (every pair), not only the runs selected in the browser; runs
// selected there select their pairs' rows.
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QChart;
class QChartView;
class QLabel;
class QScatterSeries;
class QTableView;
class PredictionAccuracyModel;
namespace moebench {
class RunStore;
}

class PredictionAccuracyView : public QWidget {
  Q_OBJECT

 public:
  explicit PredictionAccuracyView(QWidget* parent = nullptr);
  ~PredictionAccuracyView() override;

  // Pairs the store's runs; the selected runs' pairs are selected in the table. Errors
  // (StoreError, any std::exception) become the view's message.
  void setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);

  PredictionAccuracyModel* model() const { return m_model; }
  QChart* chart() const;
  QChartView* chartView() const { return m_chartView; }
  QTableView* table() const { return m_table; }
  QString summaryText() const;  // the MAE / R² label
  QString message() const;      // hint, error or unmatched predicted runs; "" when none
  // The tooltip text of the pair at a table row ("ec (predicted) (#7): predicted 13.500 ms/step,
  // measured ec (#1): 12.000 ms/step, error +12.50 %").
  QString pointText(int row) const;
  // Selects the pair's table row (as a click on its point does).
  void selectPair(int row);

 private:
  void rebuild();
  void updateTexts();
  void highlightSelection();

  PredictionAccuracyModel* m_model = nullptr;
  QLabel* m_summary = nullptr;
  QLabel* m_message = nullptr;
  QChartView* m_chartView = nullptr;
  QScatterSeries* m_points = nullptr;
  QScatterSeries* m_selected = nullptr;
  QTableView* m_table = nullptr;
  QString m_error;
  bool m_noStore = true;
};
