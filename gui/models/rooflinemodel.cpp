#include "models/rooflinemodel.h"

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

namespace {

QVariant number(double v) { return std::isfinite(v) ? QVariant(v) : QVariant(); }

}  // namespace

RooflineModel::RooflineModel(QObject* parent) : QAbstractTableModel(parent) {}
RooflineModel::~RooflineModel() = default;

namespace {

// Per run: its measured (or simulated) and predicted points merged by layer, MoE layers
// ascending then the whole run; the measured row of a layer first.
int layerOrder(int layer) { return layer < 0 ? std::numeric_limits<int>::max() : layer; }

bool hasTag(const moebench::RunStore& store, int64_t runId, const char* tag) {
  for (const auto& [key, value] : store.tags(runId))
    if (key == tag) return true;
  return false;
}

}  // namespace

void RooflineModel::setRuns(std::shared_ptr<moebench::RunStore> store, std::vector<int64_t> runIds) {
  std::vector<moebench::DdlPoint> points;
  std::vector<RowInfo> rows;
  std::vector<StoredPeak> stored;
  std::vector<RunPeak> peaks;
  if (store) {
    for (int64_t id : runIds) {
      const moebench::RunInfo info = store->find_run(std::to_string(id));
      auto measured = moebench::ddl_roofline_points(*store, info);
      RunPeak peak;
      peak.runId = id;
      peak.runName = QString::fromStdString(info.name);
      peak.simulated = hasTag(*store, info.id, "predicted");
      peak.emulated = hasTag(*store, info.id, "emulated");
      std::vector<moebench::DdlPredictedPoint> predicted;
      if (!peak.simulated) predicted = moebench::ddl_predicted_points(*store, info);
      for (const auto& p : measured) peak.hasPoints = peak.hasPoints || p.has_point();
      for (const auto& p : predicted) peak.hasPoints = peak.hasPoints || p.has_point();
      StoredPeak s;
      try {
        // (Copied out only on success: GCC 12 -O3 left s.gflops engaged with garbage when the
        // call threw inside a direct `s.gflops = call()`.)
        if (const std::optional<double> v = moebench::ddl_stored_peak_gflops(*store, info)) s.gflops = *v;
      } catch (const std::invalid_argument& e) {
        s.error = QString::fromStdString(e.what());
      }
      if (s.gflops) {
        const std::string src = moebench::ddl_stored_peak_source(*store, info);
        s.source = src.empty() ? QStringLiteral("param peak_gflops") : QString::fromStdString(src);
      }
      std::set<int> layers;  // by layerOrder
      for (const auto& p : measured) layers.insert(layerOrder(p.layer));
      for (const auto& p : predicted) layers.insert(layerOrder(p.layer));
      const RowKind measuredKind = peak.simulated ? RowKind::Simulated : RowKind::Measured;
      for (int order : layers) {
        for (auto& p : measured)
          if (layerOrder(p.layer) == order) {
            points.push_back(std::move(p));
            rows.push_back({measuredKind, 0, 0});
          }
        for (auto& p : predicted)
          if (layerOrder(p.layer) == order) {
            rows.push_back({RowKind::Predicted, p.steps_from_metrics, p.steps_from_routing});
            points.push_back(std::move(static_cast<moebench::DdlPoint&>(p)));
          }
      }
      stored.push_back(std::move(s));
      peaks.push_back(std::move(peak));
    }
  } else {
    runIds.clear();
  }

  beginResetModel();
  m_runIds = std::move(runIds);
  m_points = std::move(points);
  m_rows = std::move(rows);
  m_stored = std::move(stored);
  m_peaks = std::move(peaks);
  resolvePeaks();
  endResetModel();
  emit peaksChanged();
}

void RooflineModel::clear() { setRuns(nullptr, {}); }

void RooflineModel::resolvePeaks() {
  for (size_t i = 0; i < m_peaks.size(); ++i) {
    RunPeak& p = m_peaks[i];
    const StoredPeak& s = m_stored[i];
    p.error = s.error;
    if (s.gflops) {
      p.gflops = s.gflops;
      p.source = PeakSource::Stored;
      p.sourceText = QStringLiteral("stored: ") + s.source;
    } else if (m_enteredPeak > 0) {
      p.gflops = m_enteredPeak;
      p.source = PeakSource::Entered;
      p.sourceText = QStringLiteral("entered");
    } else {
      p.gflops.reset();
      p.source = PeakSource::None;
      p.sourceText = QStringLiteral("none: enter a peak");
    }
  }
}

void RooflineModel::setEnteredPeak(double gflops) {
  if (!(gflops > 0) || !std::isfinite(gflops)) gflops = 0;
  if (gflops == m_enteredPeak) return;
  m_enteredPeak = gflops;
  resolvePeaks();
  if (!m_points.empty())
    emit dataChanged(index(0, PeakColumn), index(rowCount() - 1, NoteColumn));
  emit peaksChanged();
}

const moebench::DdlPoint* RooflineModel::pointAt(int row) const {
  return row >= 0 && size_t(row) < m_points.size() ? &m_points[size_t(row)] : nullptr;
}

RooflineModel::RowKind RooflineModel::kindAt(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() ? m_rows[size_t(row)].kind : RowKind::Measured;
}

QString RooflineModel::rowKindText(int row) const {
  const RowKind kind = kindAt(row);
  const moebench::DdlPoint* p = pointAt(row);
  const RunPeak* peak = p ? peakOf(p->run_id) : nullptr;
  if (kind == RowKind::Measured && peak && peak->emulated) return QStringLiteral("emulated (measured)");
  return kindText(kind);
}

QString RooflineModel::kindText(RowKind kind) {
  switch (kind) {
    case RowKind::Measured: return QStringLiteral("measured");
    case RowKind::Predicted: return QStringLiteral("predicted");
    case RowKind::Simulated: return QStringLiteral("simulated (predicted)");
  }
  return {};
}

int64_t RooflineModel::stepsFromMetricsAt(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() ? m_rows[size_t(row)].fromMetrics : 0;
}

int64_t RooflineModel::stepsFromRoutingAt(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() ? m_rows[size_t(row)].fromRouting : 0;
}

std::vector<RooflineModel::RowPair> RooflineModel::predictedMeasuredPairs() const {
  std::vector<RowPair> out;
  for (size_t i = 0; i < m_points.size(); ++i) {
    if (m_rows[i].kind != RowKind::Predicted || !m_points[i].has_point()) continue;
    for (size_t j = 0; j < m_points.size(); ++j)
      if (m_rows[j].kind != RowKind::Predicted && m_points[j].run_id == m_points[i].run_id &&
          m_points[j].layer == m_points[i].layer && m_points[j].has_point())
        out.push_back({int(i), int(j)});
  }
  return out;
}

QString RooflineModel::kindToolTip(int row) const {
  const RowInfo& r = m_rows[size_t(row)];
  switch (r.kind) {
    case RowKind::Measured: return QStringLiteral("measured from the run's spans and routing (ddl_roofline.h)");
    case RowKind::Simulated:
      return QStringLiteral("simulated (predicted): the simulator wrote this run's spans; nothing ran");
    case RowKind::Predicted: {
      QString t = QStringLiteral(
          "predicted by FasterMoE's model (eq. 1-4): Lat_comp = 3 rounds of eq. 1 (the experts' forward "
          "and backward), Lat_comm = 4 all-to-alls of eq. 2, Lat_e2e their sum: the step's totals, as measured");
      if (r.fromMetrics > 0 || r.fromRouting > 0)
        t += QStringLiteral("\nsteps: %1 from fastermoe's stored predictions (with shadowing), %2 from eq. 1-2 "
                            "on the routing and the run's cluster model")
                 .arg(r.fromMetrics)
                 .arg(r.fromRouting);
      return t;
    }
  }
  return {};
}

const RooflineModel::RunPeak* RooflineModel::peakOf(int64_t runId) const {
  for (const RunPeak& p : m_peaks)
    if (p.runId == runId) return &p;
  return nullptr;
}

std::optional<double> RooflineModel::peakAt(int row) const {
  const moebench::DdlPoint* p = pointAt(row);
  const RunPeak* peak = p ? peakOf(p->run_id) : nullptr;
  return peak ? peak->gflops : std::nullopt;
}

std::optional<double> RooflineModel::idealAt(int row) const {
  const moebench::DdlPoint* p = pointAt(row);
  const auto peak = peakAt(row);
  if (!p || !p->has_point() || !peak) return std::nullopt;
  return moebench::ddl_ideal_gflops(p->r_cc, *peak);
}

std::optional<double> RooflineModel::semiIdealAt(int row) const {
  const moebench::DdlPoint* p = pointAt(row);
  const auto peak = peakAt(row);
  if (!p || !p->has_point() || !peak) return std::nullopt;
  return moebench::ddl_semi_ideal_gflops(p->r_cc, *peak);
}

int RooflineModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_points.size());
}

int RooflineModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString RooflineModel::noteAt(int row) const {
  const moebench::DdlPoint* p = pointAt(row);
  if (!p) return {};
  if (!p->has_point()) return QStringLiteral("no point: ") + QString::fromStdString(p->reason);
  const RunPeak* peak = peakOf(p->run_id);
  QString note;
  if (peak && !peak->error.isEmpty()) note = peak->error;
  if (peak && !peak->gflops) {
    if (!note.isEmpty()) note += QStringLiteral("; ");
    note += QStringLiteral("no peak GFLOP/s stored: enter one for the ideal curves");
  }
  return note;
}

QVariant RooflineModel::rawValue(int row, int column) const {
  const moebench::DdlPoint& p = m_points[size_t(row)];
  auto opt = [](std::optional<double> v) { return v ? number(*v) : QVariant(); };
  switch (column) {
    case RunColumn: return qint64(p.run_id);
    case LayerColumn: return p.layer;
    case KindColumn: return int(kindAt(row));
    case RccColumn: return number(p.r_cc);
    case AchievedColumn: return number(p.achieved_gflops);
    case LatCompColumn: return number(p.lat_comp_s * 1e3);
    case LatCommColumn: return number(p.lat_comm_s * 1e3);
    case LatE2eColumn: return number(p.lat_e2e_s * 1e3);
    case PeakColumn: return p.has_point() ? opt(peakAt(row)) : QVariant();
    case IdealColumn: return opt(idealAt(row));
    case SemiIdealColumn: return opt(semiIdealAt(row));
    case PercentOfIdealColumn: {
      const auto ideal = idealAt(row);
      return ideal && *ideal > 0 ? number(100.0 * p.achieved_gflops / *ideal) : QVariant();
    }
    case NoteColumn: return noteAt(row);
    default: return {};
  }
}

QVariant RooflineModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const int row = index.row(), column = index.column();
  const moebench::DdlPoint& p = m_points[size_t(row)];
  if (role == Qt::UserRole) return rawValue(row, column);
  if (role == Qt::TextAlignmentRole)
    return column == RunColumn || column == KindColumn || column == NoteColumn ? QVariant(int(Qt::AlignLeft | Qt::AlignVCenter))
                                                       : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
  if (role == Qt::ToolTipRole) {
    if (column == PeakColumn) {
      const RunPeak* peak = peakOf(p.run_id);
      return peak ? peak->sourceText : QString();
    }
    if (column == KindColumn) return kindToolTip(row);
    const QString note = noteAt(row);
    return note.isEmpty() ? QVariant() : QVariant(note);
  }
  if (role != Qt::DisplayRole) return {};
  if (column == RunColumn) {
    const RunPeak* peak = peakOf(p.run_id);
    return peak ? peak->runName : QString::fromStdString(p.run_name);
  }
  if (column == LayerColumn) return p.layer < 0 ? QStringLiteral("all") : QString::number(p.layer);
  if (column == KindColumn) return rowKindText(row);
  if (column == NoteColumn) return noteAt(row);
  const QVariant raw = rawValue(row, column);
  if (!raw.isValid()) return QString();
  const double v = raw.toDouble();
  switch (column) {
    case RccColumn: return QString::number(v, 'g', 3);
    case LatCompColumn:
    case LatCommColumn:
    case LatE2eColumn: return QString::number(v, 'g', 4);  // predicted latencies can be microseconds
    case PercentOfIdealColumn: return QString::number(v, 'f', 1);
    case PeakColumn: {
      const RunPeak* peak = peakOf(p.run_id);
      const bool entered = peak && peak->source == PeakSource::Entered;
      return QString::number(v, 'g', 4) + (entered ? QStringLiteral(" (entered)") : QStringLiteral(" (stored)"));
    }
    default: return QString::number(v, 'g', 4);
  }
}

QVariant RooflineModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    static const char* const names[ColumnCount] = {
        "Run",        "Layer",        "Kind",          "R_CC",               "Achieved GFLOP/s", "Lat_comp ms", "Lat_comm ms",
        "Lat_e2e ms", "Peak GFLOP/s", "Ideal GFLOP/s", "Semi-ideal GFLOP/s", "% of ideal",       "Note"};
    return QString::fromLatin1(names[section]);
  }
  if (role == Qt::ToolTipRole) {
    static const char* const tips[ColumnCount] = {
        "run name",
        "MoE layer (block index); all = the whole run (sums over the MoE layers)",
        "measured (spans), predicted (FasterMoE eq. 1-4 on the run's routing, or fastermoe's stored "
        "predictions) or simulated (predicted: a run the simulator wrote)",
        "Lat_comp / Lat_comm (FasterMoE eq. 3), of the row's kind",
        "P-bar = 12 a H^2 sum(B_w) / (N Lat_e2e), GFLOP/s per worker (eq. 4), of the row's kind",
        "measured: expert compute per step, max over ranks; predicted: eq. 1; mean over steps",
        "measured: the layer's communication waited for per step, max over ranks; predicted: eq. 2; "
        "mean over steps",
        "measured: union of the layer's compute and comm spans per step, max over ranks; predicted: "
        "3 Lat_comp + 4 Lat_comm; mean over steps",
        "P_w, peak GFLOP/s per worker: stored with the run (bench gemm) or entered",
        "ideal P_w min(1, R_CC) at this R_CC (eq. 5), not measured",
        "semi-ideal P_w R_CC / (R_CC + 1) at this R_CC (eq. 6), not measured",
        "achieved / ideal",
        "why there is no point or no curve"};
    return QString::fromLatin1(tips[section]);
  }
  return {};
}
