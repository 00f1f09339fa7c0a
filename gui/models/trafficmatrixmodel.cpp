#include "models/trafficmatrixmodel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "models/byteformat.h"
#include "moebench/store/run_summary.h"

TrafficMatrixModel::TrafficMatrixModel(QObject* parent) : QAbstractTableModel(parent) {}
TrafficMatrixModel::~TrafficMatrixModel() = default;

void TrafficMatrixModel::setRun(std::shared_ptr<moebench::RunStore> store, int64_t runId, int64_t step) {
  int64_t id = -1, divisor = 0;
  QString name;
  std::vector<int64_t> steps;
  int ranks = 0;
  std::vector<double> mean;
  std::vector<std::string> links;
  if (store) {
    const moebench::RunInfo info = store->find_run(std::to_string(runId));
    id = info.id;
    name = QString::fromStdString(info.name);
    steps = store->steps_with(info.id, moebench::RecordTable::traffic);
    if (step != kAllSteps && !std::binary_search(steps.begin(), steps.end(), step))
      throw std::invalid_argument("run '" + info.name + "' has no traffic rows in step " + std::to_string(step));
    const std::vector<moebench::TrafficRow> rows = store->traffic(info.id);
    // summarize_run's per-step divisor: max(recorded steps, steps with traffic rows).
    divisor = std::max<int64_t>(moebench::recorded_steps(*store, info.id), int64_t(steps.size()));
    ranks = std::max(info.ranks, 0);
    for (const auto& r : rows) ranks = std::max({ranks, r.rank + 1, r.peer + 1});
    mean.assign(size_t(ranks) * size_t(ranks), 0.0);
    links.resize(mean.size());
    for (const auto& r : rows) {
      if (r.rank < 0 || r.peer < 0) continue;
      const size_t i = size_t(r.rank) * size_t(ranks) + size_t(r.peer);
      mean[i] += double(r.bytes);
      if (r.rank != r.peer && links[i].empty()) links[i] = r.link;
    }
    if (divisor > 0)
      for (double& v : mean) v /= double(divisor);
  } else {
    step = kAllSteps;
  }
  beginResetModel();
  m_store = std::move(store);
  m_runId = id;
  m_runName = std::move(name);
  m_steps = std::move(steps);
  m_divisor = divisor;
  m_ranks = ranks;
  m_links = std::move(links);
  m_meanCells = std::move(mean);
  m_step = kAllSteps;
  m_cells = m_meanCells;
  m_max = m_cells.empty() ? 0 : *std::max_element(m_cells.begin(), m_cells.end());
  endResetModel();
  if (step != kAllSteps) setStep(step);
}

void TrafficMatrixModel::clear() { setRun(nullptr, -1); }

std::vector<double> TrafficMatrixModel::cellsFor(int64_t step) const {
  if (step == kAllSteps) return m_meanCells;
  std::vector<double> cells(size_t(m_ranks) * size_t(m_ranks), 0.0);
  for (const auto& r : m_store->traffic(m_runId, step, step))
    if (r.rank >= 0 && r.peer >= 0 && r.rank < m_ranks && r.peer < m_ranks)
      cells[size_t(r.rank) * size_t(m_ranks) + size_t(r.peer)] += double(r.bytes);
  return cells;
}

void TrafficMatrixModel::setStep(int64_t step) {
  if (!m_store) {
    if (step == kAllSteps) return;
    throw std::invalid_argument("no run is shown: cannot show traffic step " + std::to_string(step));
  }
  if (step != kAllSteps && !std::binary_search(m_steps.begin(), m_steps.end(), step))
    throw std::invalid_argument("run '" + m_runName.toStdString() + "' has no traffic rows in step " +
                                std::to_string(step));
  if (step == m_step) return;
  std::vector<double> cells = cellsFor(step);
  m_step = step;
  m_cells = std::move(cells);
  m_max = m_cells.empty() ? 0 : *std::max_element(m_cells.begin(), m_cells.end());
  if (m_ranks > 0) emit dataChanged(index(0, 0), index(m_ranks - 1, m_ranks - 1));
}

double TrafficMatrixModel::bytesAt(int rank, int peer) const {
  if (rank < 0 || peer < 0 || rank >= m_ranks || peer >= m_ranks) return 0;
  return m_cells[size_t(rank) * size_t(m_ranks) + size_t(peer)];
}

QString TrafficMatrixModel::linkAt(int rank, int peer) const {
  if (rank < 0 || peer < 0 || rank >= m_ranks || peer >= m_ranks || rank == peer) return {};
  return QString::fromStdString(m_links[size_t(rank) * size_t(m_ranks) + size_t(peer)]);
}

double TrafficMatrixModel::intraBytes() const {
  double sum = 0;
  for (int r = 0; r < m_ranks; ++r)
    for (int p = 0; p < m_ranks; ++p)
      if (linkAt(r, p) == QLatin1String("intra_node")) sum += bytesAt(r, p);
  return sum;
}

double TrafficMatrixModel::interBytes() const {
  double sum = 0;
  for (int r = 0; r < m_ranks; ++r)
    for (int p = 0; p < m_ranks; ++p)
      if (linkAt(r, p) == QLatin1String("inter_node")) sum += bytesAt(r, p);
  return sum;
}

int TrafficMatrixModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : m_ranks; }

int TrafficMatrixModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : m_ranks; }

QVariant TrafficMatrixModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this || index.row() >= m_ranks || index.column() >= m_ranks) return {};
  const int rank = index.row(), peer = index.column();
  const double v = bytesAt(rank, peer);
  const QString link = linkAt(rank, peer);
  switch (role) {
    case Qt::DisplayRole: return rank == peer && v == 0 ? QString() : moebench::gui::compactBytes(v);
    case Qt::UserRole: return v;
    case Qt::ToolTipRole: {
      const QString where = link == QLatin1String("inter_node")   ? tr(" (inter-node)")
                            : link == QLatin1String("intra_node") ? tr(" (intra-node)")
                                                                   : QString();
      const QString what = m_step == kAllSteps ? tr("bytes per step, mean over %1 steps").arg(m_divisor)
                                               : tr("bytes in step %1").arg(m_step);
      return tr("rank %1 -> rank %2: %3 %4%5")
          .arg(rank)
          .arg(peer)
          .arg(QString::number(v, 'f', m_step == kAllSteps ? 1 : 0), what, where);
    }
    case HeatmapRoles::IntensityRole: return scaleMax() > 0 ? std::min(1.0, v / scaleMax()) : 0.0;
    case HeatmapRoles::LinkRole: return link;
    case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::Alignment(Qt::AlignCenter));
    default: return {};
  }
}

void TrafficMatrixModel::setScaleMax(double max) {
  m_scale = max > 0 ? max : 0;
  if (m_ranks > 0) {
    emit dataChanged(index(0, 0), index(m_ranks - 1, m_ranks - 1));
    emit headerDataChanged(Qt::Horizontal, 0, m_ranks - 1);
  }
}

QVariant TrafficMatrixModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (section < 0 || section >= m_ranks) return {};
  if (role == HeatmapRoles::ScaleTextRole)
    return orientation == Qt::Horizontal && section == 0 && m_scale > 0 ? QVariant(moebench::gui::compactBytes(m_scale))
                                                                        : QVariant();
  if (role == Qt::DisplayRole) return tr("rank %1").arg(section);
  if (role == Qt::ToolTipRole)
    return orientation == Qt::Vertical ? tr("sending rank %1").arg(section) : tr("receiving rank %1").arg(section);
  return {};
}
