#include "models/expertloadmodel.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "moebench/store/run_summary.h"

ExpertLoadModel::ExpertLoadModel(QObject* parent) : QAbstractTableModel(parent) {}
ExpertLoadModel::~ExpertLoadModel() = default;

namespace {
// (layer, expert) of a "fastermoe.shadow.e<k>/block<L>" key, or (-1, -1).
std::pair<int, int> shadowKey(const std::string& key) {
  static const std::string prefix = "fastermoe.shadow.e", middle = "/block";
  if (key.rfind(prefix, 0) != 0) return {-1, -1};
  const size_t slash = key.find(middle, prefix.size());
  if (slash == std::string::npos) return {-1, -1};
  auto number = [](const std::string& text) {
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(text);
  };
  const int expert = number(key.substr(prefix.size(), slash - prefix.size()));
  const int layer = number(key.substr(slash + middle.size()));
  return expert < 0 || layer < 0 ? std::pair{-1, -1} : std::pair{layer, expert};
}

int64_t maxOf(const std::vector<std::vector<int64_t>>& cells) {
  int64_t m = 0;
  for (const auto& row : cells)
    for (int64_t v : row) m = std::max(m, v);
  return m;
}
}  // namespace

void ExpertLoadModel::setRun(std::shared_ptr<moebench::RunStore> store, int64_t runId, int64_t step) {
  int64_t id = -1;
  QString name, reason;
  std::vector<int64_t> steps;
  std::vector<int> layers, experts;
  std::vector<std::vector<int64_t>> cells;
  std::map<std::pair<int, int>, std::set<int64_t>> shadowSteps;
  int columns = 0;
  if (store) {
    const moebench::RunInfo info = store->find_run(std::to_string(runId));
    id = info.id;
    name = QString::fromStdString(info.name);
    steps = store->steps_with(info.id, moebench::RecordTable::routing);
    if (step != kAllSteps && !std::binary_search(steps.begin(), steps.end(), step))
      throw std::invalid_argument("run '" + info.name + "' has no routing rows in step " + std::to_string(step));
    std::map<int, std::map<int, int64_t>> tokens;  // layer -> expert -> tokens, all steps
    for (const auto& r : store->routing(info.id)) tokens[r.layer][r.expert] += r.tokens;
    if (tokens.empty()) reason = tr("run '%1' has no routing recorded (no expert load to show)").arg(name);
    const auto configured = moebench::moe_experts_per_layer(info.config_json);
    for (const std::string& key : store->metric_keys(info.id)) {
      const auto cell = shadowKey(key);
      if (cell.first < 0) continue;
      auto& stepsShadowed = shadowSteps[cell];  // present (maybe empty): the run has shadow metrics
      for (const auto& m : store->metrics(info.id, key))
        if (m.value != 0 && std::binary_search(steps.begin(), steps.end(), m.step)) stepsShadowed.insert(m.step);
    }
    for (const auto& [layer, perExpert] : tokens) {
      const int seen = perExpert.empty() ? 0 : std::max(0, perExpert.rbegin()->first + 1);
      const auto it = configured.find(layer);
      const int count = std::max(seen, it == configured.end() ? 0 : it->second);
      std::vector<int64_t> row(size_t(count), 0);
      for (const auto& [e, t] : perExpert)
        if (e >= 0) row[size_t(e)] += t;
      layers.push_back(layer);
      experts.push_back(count);
      columns = std::max(columns, count);
      cells.push_back(std::move(row));
    }
  } else {
    step = kAllSteps;
  }
  beginResetModel();
  m_store = std::move(store);
  m_runId = id;
  m_runName = std::move(name);
  m_emptyReason = std::move(reason);
  m_steps = std::move(steps);
  m_layers = std::move(layers);
  m_experts = std::move(experts);
  m_allCells = std::move(cells);
  m_columns = columns;
  m_shadowSteps = std::move(shadowSteps);
  m_step = kAllSteps;
  m_cells = m_allCells;
  m_max = maxOf(m_cells);
  endResetModel();
  if (step != kAllSteps) setStep(step);
}

void ExpertLoadModel::clear() { setRun(nullptr, -1); }

std::vector<std::vector<int64_t>> ExpertLoadModel::cellsFor(int64_t step) const {
  if (step == kAllSteps) return m_allCells;
  std::vector<std::vector<int64_t>> cells;
  for (int n : m_experts) cells.emplace_back(size_t(n), 0);
  for (const auto& r : m_store->routing(m_runId, step, step)) {
    const auto it = std::lower_bound(m_layers.begin(), m_layers.end(), r.layer);
    if (it == m_layers.end() || *it != r.layer) continue;
    auto& row = cells[size_t(it - m_layers.begin())];
    if (r.expert >= 0 && size_t(r.expert) < row.size()) row[size_t(r.expert)] += r.tokens;
  }
  return cells;
}

void ExpertLoadModel::setStep(int64_t step) {
  if (!m_store) {
    if (step == kAllSteps) return;
    throw std::invalid_argument("no run is shown: cannot show routing step " + std::to_string(step));
  }
  if (step != kAllSteps && !std::binary_search(m_steps.begin(), m_steps.end(), step))
    throw std::invalid_argument("run '" + m_runName.toStdString() + "' has no routing rows in step " +
                                std::to_string(step));
  if (step == m_step) return;
  auto cells = cellsFor(step);
  m_step = step;
  m_cells = std::move(cells);
  m_max = maxOf(m_cells);
  if (!m_layers.empty() && m_columns > 0)
    emit dataChanged(index(0, 0), index(int(m_layers.size()) - 1, m_columns - 1));
}

int ExpertLoadModel::layerAt(int row) const {
  return row >= 0 && size_t(row) < m_layers.size() ? m_layers[size_t(row)] : -1;
}

int ExpertLoadModel::expertsAt(int row) const {
  return row >= 0 && size_t(row) < m_experts.size() ? m_experts[size_t(row)] : 0;
}

int64_t ExpertLoadModel::tokensAt(int row, int expert) const {
  if (row < 0 || size_t(row) >= m_cells.size() || expert < 0) return -1;
  const auto& r = m_cells[size_t(row)];
  return size_t(expert) < r.size() ? r[size_t(expert)] : -1;
}

double ExpertLoadModel::imbalance(int row) const {
  if (row < 0 || size_t(row) >= m_cells.size() || m_cells[size_t(row)].empty())
    return std::numeric_limits<double>::quiet_NaN();
  const auto& r = m_cells[size_t(row)];
  int64_t total = 0, max = 0;
  for (int64_t v : r) total += v, max = std::max(max, v);
  if (total <= 0) return std::numeric_limits<double>::quiet_NaN();
  return double(max) / (double(total) / double(r.size()));
}

int ExpertLoadModel::busiestExpert(int row) const {
  if (row < 0 || size_t(row) >= m_cells.size()) return -1;
  const auto& r = m_cells[size_t(row)];
  int best = -1;
  for (size_t e = 0; e < r.size(); ++e)
    if (r[e] > 0 && (best < 0 || r[e] > r[size_t(best)])) best = int(e);
  return best;
}

int ExpertLoadModel::shadowedSteps(int row, int expert) const {
  if (tokensAt(row, expert) < 0) return 0;
  const auto it = m_shadowSteps.find({layerAt(row), expert});
  if (it == m_shadowSteps.end()) return 0;
  if (m_step == kAllSteps) return int(it->second.size());
  return it->second.count(m_step) ? 1 : 0;
}

int ExpertLoadModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_layers.size()); }

int ExpertLoadModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : m_columns; }

QVariant ExpertLoadModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this) return {};
  const int64_t t = tokensAt(index.row(), index.column());
  if (t < 0) return {};
  switch (role) {
    case Qt::DisplayRole: return QString::number(t);
    case Qt::UserRole: return double(t);
    case Qt::ToolTipRole: {
      QString text = tr("layer %1, expert %2: %3 tokens (%4)")
                         .arg(layerAt(index.row()))
                         .arg(index.column())
                         .arg(t)
                         .arg(m_step == kAllSteps ? tr("all %1 steps").arg(m_steps.size()) : tr("step %1").arg(m_step));
      if (const int shadowed = shadowedSteps(index.row(), index.column()); shadowed > 0)
        text += m_step == kAllSteps ? tr("; shadowed in %1 of %2 steps").arg(shadowed).arg(m_steps.size())
                                    : tr("; shadowed in this step");
      return text;
    }
    case HeatmapRoles::MarkedRole:
      return hasShadowing() ? QVariant(shadowedSteps(index.row(), index.column())) : QVariant();
    case HeatmapRoles::IntensityRole: return scaleMax() > 0 ? std::min(1.0, double(t) / double(scaleMax())) : 0.0;
    case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::Alignment(Qt::AlignCenter));
    default: return {};
  }
}

void ExpertLoadModel::setScaleMax(int64_t max) {
  m_scale = max > 0 ? max : 0;
  if (!m_layers.empty() && m_columns > 0) {
    emit dataChanged(index(0, 0), index(int(m_layers.size()) - 1, m_columns - 1));
    emit headerDataChanged(Qt::Horizontal, 0, m_columns - 1);
  }
}

QVariant ExpertLoadModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role == HeatmapRoles::ScaleTextRole)
    return orientation == Qt::Horizontal && section == 0 && section < m_columns && m_scale > 0
               ? QVariant(QString::number(m_scale))
               : QVariant();
  if (role == HeatmapRoles::MarkLegendRole && orientation == Qt::Horizontal && section == 0 &&
      section < m_columns && hasShadowing())
    return tr("shadowed (FasterMoE)");
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) {
    if (section < 0 || size_t(section) >= m_layers.size()) return {};
    return tr("layer %1").arg(m_layers[size_t(section)]);
  }
  if (section < 0 || section >= m_columns) return {};
  return tr("expert %1").arg(section);
}
