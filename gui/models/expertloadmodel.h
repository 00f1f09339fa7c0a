#pragma once
// ExpertLoadModel: tokens the router sent to each expert of each MoE layer of one run (issue:
// "expert-load heatmap (layer x expert tokens, per step with a slider)").
// Rows = the MoE layers that have routing rows in the run, ascending (header "layer L");
// columns = experts (header "expert E"), as many as the layer with the most experts. A layer's
// expert count is summarize_run's: moebench::moe_experts_per_layer(config)[L] when the config
// names the layer, at least the highest expert routed to + 1 (experts that got no token are 0).
// Cells past a layer's count are empty (invalid for every role).
// Step (setStep): kAllSteps (-1) = tokens summed over all steps and source ranks (the same
// numbers as summarize_run's expert_load); step s = summed over the source ranks in step s.
// Roles: DisplayRole the token count as text; Qt::UserRole tokens (double); Qt::ToolTipRole
// "layer 0, expert 3: 345 tokens (all 6 steps)"; HeatmapRoles::IntensityRole = cell / scaleMax()
// (0..1): the largest cell of the model, or a scale shared with other runs (setScaleMax).
// Shadowing (FasterMoE §4.1, strategy fastermoe): the run's metrics "fastermoe.shadow.e<k>/block<L>"
// (value 1 in each step expert k of block L was shadowed: its parameters broadcast, its tokens
// computed where they are) mark cells:
//   HeatmapRoles::MarkedRole = shadowedSteps(row, expert): for one step 1 when the expert was
//     shadowed in it, else 0; for all steps the number of steps shown (steps()) in which it was;
//     valid on every non-empty cell of a run that has any such metric, invalid otherwise;
//   the tooltip then ends in "; shadowed in this step" / "; shadowed in 3 of 20 steps";
//   headerData(0, Horizontal, HeatmapRoles::MarkLegendRole) = "shadowed (FasterMoE)" then.
// imbalance(row) = the layer's largest cell / the mean over its experts (NaN without tokens).
#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "models/heatmaproles.h"
#include "moebench/store/run_store.h"

class ExpertLoadModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  static constexpr int64_t kAllSteps = -1;

  explicit ExpertLoadModel(QObject* parent = nullptr);
  ~ExpertLoadModel() override;

  // Reads the run (model reset) and shows `step`. Throws StoreError for an unknown run id and
  // std::invalid_argument for a step without routing rows (model unchanged). A run without
  // routing rows gives an empty model (emptyReason() says so). A null store empties the model.
  void setRun(std::shared_ptr<moebench::RunStore> store, int64_t runId, int64_t step = kAllSteps);
  // kAllSteps or one of steps(); std::invalid_argument otherwise, the model unchanged.
  // Emits dataChanged over all cells.
  void setStep(int64_t step);
  void clear();

  int64_t runId() const { return m_runId; }
  QString runName() const { return m_runName; }
  QString emptyReason() const { return m_emptyReason; }
  int64_t step() const { return m_step; }
  // steps_with(run, RecordTable::routing): the steps the slider offers.
  const std::vector<int64_t>& steps() const { return m_steps; }

  int layerAt(int row) const;          // -1 out of range
  int expertsAt(int row) const;        // the layer's expert count; 0 out of range
  int64_t tokensAt(int row, int expert) const;  // -1 for an empty cell
  int64_t maxTokens() const { return m_max; }  // the largest cell of the shown step(s)
  // A colour scale shared with other runs' models (> 0): IntensityRole = cell / max, clamped to
  // 1, and headerData(0, Horizontal, ScaleTextRole) its text; 0 (the default) = maxTokens().
  // Emits dataChanged over all cells. Kept across setRun / setStep.
  void setScaleMax(int64_t max);
  int64_t scaleMax() const { return m_scale > 0 ? m_scale : m_max; }
  double imbalance(int row) const;     // max / mean over the layer's experts
  int busiestExpert(int row) const;    // -1 without tokens
  bool hasShadowing() const { return !m_shadowSteps.empty(); }  // any fastermoe.shadow metric
  int shadowedSteps(int row, int expert) const;  // MarkedRole's value; 0 out of range

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<std::vector<int64_t>> cellsFor(int64_t step) const;

  std::shared_ptr<moebench::RunStore> m_store;
  int64_t m_runId = -1;
  QString m_runName, m_emptyReason;
  int64_t m_step = kAllSteps;
  std::vector<int64_t> m_steps;
  std::vector<int> m_layers, m_experts;             // per row
  std::vector<std::vector<int64_t>> m_allCells;      // [row][expert], all steps
  std::vector<std::vector<int64_t>> m_cells;         // current step
  int m_columns = 0;
  int64_t m_max = 0;
  int64_t m_scale = 0;
  std::map<std::pair<int, int>, std::set<int64_t>> m_shadowSteps;  // (layer, expert) -> steps shadowed
};
