#include "models/phasebreakdownmodel.h"

#include <cmath>
#include <limits>
#include <utility>

#include "moebench/store/run_summary.h"

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

PhaseBreakdownModel::PhaseBreakdownModel(QObject* parent) : QAbstractTableModel(parent) {}
PhaseBreakdownModel::~PhaseBreakdownModel() = default;

PhaseBreakdownModel::Data PhaseBreakdownModel::read(const moebench::RunStore& store, int64_t runId) {
  Data d;
  d.runId = runId;
  std::vector<Row>& rows = d.rows;
  const moebench::RunInfo info = store.find_run(std::to_string(runId));
  d.name = QString::fromStdString(info.name);
  const moebench::RunSummary summary = moebench::summarize_run(store, info);
  if (!summary.has_phases) {
    d.reason = tr("run '%1' has no step spans recorded (no time split to show)").arg(d.name);
    return d;
  }
  d.samples = summary.phases.samples;
  d.warmup = summary.phase_warmup_excluded;
  double layerCompute = 0, layerComm = 0;
  for (const moebench::LayerPhase& l : summary.layer_phases) {
    Row r;
    r.kind = LayerRow;
    r.layer = l.layer;
    r.ms[ComputeColumn] = 1e3 * l.compute_s;
    r.ms[CommColumn] = 1e3 * l.comm_s;
    r.ms[IdleColumn] = kNaN;
    r.ms[TotalColumn] = r.ms[ComputeColumn] + r.ms[CommColumn];
    layerCompute += r.ms[ComputeColumn];
    layerComm += r.ms[CommColumn];
    rows.push_back(r);
  }
  const auto& p = summary.phases;
  Row other;
  other.kind = OtherRow;
  other.ms[ComputeColumn] = 1e3 * p.compute_s - layerCompute;
  other.ms[CommColumn] = 1e3 * p.comm_s - layerComm;
  other.ms[IdleColumn] = kNaN;
  other.ms[TotalColumn] = other.ms[ComputeColumn] + other.ms[CommColumn];
  rows.push_back(other);
  Row whole;
  whole.kind = WholeStepRow;
  whole.ms[ComputeColumn] = 1e3 * p.compute_s;
  whole.ms[CommColumn] = 1e3 * p.comm_s;
  whole.ms[IdleColumn] = 1e3 * p.idle_s;
  whole.ms[TotalColumn] = 1e3 * p.step_s;
  rows.push_back(whole);
  return d;
}

void PhaseBreakdownModel::setData(Data d) {
  beginResetModel();
  m_rows = std::move(d.rows);
  m_runId = d.runId;
  m_runName = std::move(d.name);
  m_emptyReason = std::move(d.reason);
  m_samples = d.samples;
  m_warmupExcluded = d.warmup;
  endResetModel();
}

void PhaseBreakdownModel::setRun(std::shared_ptr<moebench::RunStore> store, int64_t runId) {
  setData(store ? read(*store, runId) : Data{});
}

void PhaseBreakdownModel::clear() { setRun(nullptr, -1); }

QString PhaseBreakdownModel::rowLabel(int row) const {
  if (row < 0 || size_t(row) >= m_rows.size()) return {};
  const Row& r = m_rows[size_t(row)];
  switch (r.kind) {
    case LayerRow: return tr("layer %1").arg(r.layer);
    case OtherRow: return tr("other");
    case WholeStepRow: return tr("whole step");
  }
  return {};
}

PhaseBreakdownModel::RowKind PhaseBreakdownModel::rowKind(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() ? m_rows[size_t(row)].kind : OtherRow;
}

int PhaseBreakdownModel::layerAt(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() && m_rows[size_t(row)].kind == LayerRow ? m_rows[size_t(row)].layer
                                                                                         : -1;
}

double PhaseBreakdownModel::valueMs(int row, int column) const {
  if (row < 0 || size_t(row) >= m_rows.size() || column < 0 || column >= ColumnCount) return kNaN;
  return m_rows[size_t(row)].ms[column];
}

int PhaseBreakdownModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_rows.size());
}

int PhaseBreakdownModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PhaseBreakdownModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this) return {};
  if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
  if (role != Qt::DisplayRole && role != Qt::UserRole) return {};
  const double v = valueMs(index.row(), index.column());
  if (std::isnan(v)) return {};
  if (role == Qt::UserRole) return v;
  return QString::number(v, 'f', 3);
}

QVariant PhaseBreakdownModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) {
    if (section < 0 || size_t(section) >= m_rows.size()) return {};
    return rowLabel(section);
  }
  switch (section) {
    case ComputeColumn: return tr("compute ms");
    case CommColumn: return tr("comm ms");
    case IdleColumn: return tr("idle ms");
    case TotalColumn: return tr("total ms");
    default: return {};
  }
}
