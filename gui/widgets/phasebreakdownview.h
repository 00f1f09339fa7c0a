#pragma once
// PhaseBreakdownView: the time-split tab. Horizontal stacked bars (compute, comm, idle), one bar
// per row of PhaseBreakdownModel ("layer L" rows, "other", "whole step"; top to bottom), the
// model as a table beneath with the exact numbers, and a note saying what was averaged. All
// numbers are mean milliseconds per (step, rank) as defined in phasebreakdownmodel.h.
// Run chooser, hints and errors: SingleRunView.
#include "singlerunview.h"

class QChartView;
class QTableView;
class PhaseBreakdownModel;

class PhaseBreakdownView : public SingleRunView {
  Q_OBJECT

 public:
  explicit PhaseBreakdownView(QWidget* parent = nullptr);
  ~PhaseBreakdownView() override;

  PhaseBreakdownModel* model() const { return m_model; }
  QChartView* chartView() const { return m_chart; }
  QTableView* table() const { return m_table; }
  QString noteText() const;

 protected:
  void loadRun(int64_t runId) override;
  void clearRun() override;

 private:
  void updateChart();

  PhaseBreakdownModel* m_model = nullptr;
  QChartView* m_chart = nullptr;
  QTableView* m_table = nullptr;
  QLabel* m_note = nullptr;
};
