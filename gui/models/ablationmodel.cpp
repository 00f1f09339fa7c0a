#include "models/ablationmodel.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "moebench/store/run_summary.h"

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QVariant raw(double v) { return std::isfinite(v) ? QVariant(v) : QVariant(); }
QString text(double v, int precision) { return std::isfinite(v) ? QString::number(v, 'f', precision) : QString(); }

// "moe.top_k", "strategy.name": what may stand before the "=" of a pair.
bool isKey(QStringView word) {
  if (word.isEmpty() || !(word[0].isLetter() || word[0] == u'_')) return false;
  for (QChar c : word)
    if (!(c.isLetterOrNumber() || c == u'_' || c == u'.' || c == u'-')) return false;
  return true;
}
}  // namespace

AblationModel::Spread AblationModel::spread(const std::vector<double>& values) {
  Spread s{0, kNaN, kNaN};
  double sum = 0;
  for (double v : values)
    if (std::isfinite(v)) sum += v, ++s.n;
  if (s.n == 0) return s;
  s.mean = sum / s.n;
  if (s.n < 2) return s;
  double sq = 0;
  for (double v : values)
    if (std::isfinite(v)) sq += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(sq / (s.n - 1));
  return s;
}

AblationModel::KeyValues AblationModel::parseVariantLabel(const QString& label) {
  KeyValues out;
  for (const QString& word : label.split(u' ', Qt::SkipEmptyParts)) {
    const qsizetype eq = word.indexOf(u'=');
    if (eq > 0 && isKey(QStringView(word).left(eq)))
      out.emplace_back(word.left(eq), word.mid(eq + 1));
    else if (out.empty())
      out.emplace_back(QString(), word);
    else
      out.back().second += (out.back().second.isEmpty() ? QString() : QStringLiteral(" ")) + word;
  }
  if (out.empty()) out.emplace_back(QString(), label);
  return out;
}

void AblationModel::buildVariants() {
  m_variants.clear();
  m_variantOfRow.assign(m_rows.size(), -1);
  for (size_t i = 0; i < m_rows.size(); ++i) {
    int v = 0;
    while (v < int(m_variants.size()) && m_variants[size_t(v)].label != m_rows[i].label) ++v;
    if (v == int(m_variants.size())) m_variants.push_back({m_rows[i].label, parseVariantLabel(m_rows[i].label), {}, {}, {}});
    m_variants[size_t(v)].rows.push_back(int(i));
    m_variantOfRow[i] = v;
  }
  for (Variant& v : m_variants) {
    std::vector<double> ms, tps;
    for (int r : v.rows) {
      ms.push_back(m_rows[size_t(r)].stepMs);
      tps.push_back(m_rows[size_t(r)].tokensPerS);
    }
    v.stepMs = spread(ms);
    v.tokensPerS = spread(tps);
  }
}

int AblationModel::variantOfRow(int row) const {
  return row >= 0 && size_t(row) < m_variantOfRow.size() ? m_variantOfRow[size_t(row)] : -1;
}

int AblationModel::baselineVariant() const { return variantOfRow(m_baseline); }

double AblationModel::variantSpeedup(int variant) const {
  const int b = baselineVariant();
  if (b < 0 || variant < 0 || variant >= variantCount()) return kNaN;
  const double base = m_variants[size_t(b)].stepMs.mean, mine = m_variants[size_t(variant)].stepMs.mean;
  if (!std::isfinite(base) || !std::isfinite(mine) || mine <= 0 || base <= 0) return kNaN;
  return variant == b ? 1.0 : base / mine;
}

QStringList AblationModel::variedKeys() const {
  QStringList keys;
  for (const Variant& v : m_variants)
    for (const auto& kv : v.keys)
      if (!keys.contains(kv.first)) keys << kv.first;
  QStringList varied;
  for (const QString& key : keys) {
    for (int v = 1; v < variantCount(); ++v)
      if (variantValue(v, key) != variantValue(0, key)) {
        varied << key;
        break;
      }
  }
  return varied;
}

QString AblationModel::variantValue(int variant, const QString& key) const {
  if (variant < 0 || variant >= variantCount()) return {};
  for (const auto& kv : m_variants[size_t(variant)].keys)
    if (kv.first == key) return kv.second;
  return {};
}

AblationModel::AblationModel(QObject* parent) : QAbstractTableModel(parent) {}
AblationModel::~AblationModel() = default;

void AblationModel::setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds) {
  std::vector<Row> rows;
  if (store) {
    for (int64_t id : runIds) {
      const moebench::RunInfo info = store->find_run(std::to_string(id));
      const moebench::RunSummary s = moebench::summarize_run(*store, info);
      Row r;
      r.id = info.id;
      r.name = QString::fromStdString(info.name);
      r.strategy = QString::fromStdString(info.strategy);
      for (const auto& [key, value] : store->tags(info.id))
        if (key == "ablation.variant") r.variantTag = QString::fromStdString(value);
      r.label = r.variantTag.isEmpty() ? r.name : r.variantTag;
      r.stepMs = s.mean_step_ms;
      r.tokensPerS = s.mean_tokens_per_s;
      r.finalLoss = s.last("loss");
      r.commShare = s.has_phases ? s.phases.comm_share : kNaN;
      rows.push_back(std::move(r));
    }
  }
  const int64_t oldBaseline = baselineRunId();
  int baseline = rows.empty() ? -1 : 0;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].id == oldBaseline) baseline = int(i);
  beginResetModel();
  m_rows = std::move(rows);
  m_baseline = baseline;
  buildVariants();
  endResetModel();
  if (baselineRunId() != oldBaseline) emit baselineChanged(baselineRunId());
}

void AblationModel::clear() { setRuns(nullptr, {}); }

void AblationModel::setBaseline(int64_t runId) {
  const int row = rowOf(runId);
  if (row < 0)
    throw std::invalid_argument("run " + std::to_string(runId) + " is not one of the " +
                                std::to_string(m_rows.size()) + " runs compared");
  if (row == m_baseline) return;
  const bool sameVariant = variantOfRow(row) == baselineVariant();
  m_baseline = row;
  if (sameVariant) {  // another repeat of the baseline variant: no speedup changes
    emit baselineChanged(runId);
    return;
  }
  if (!m_rows.empty())
    emit dataChanged(index(0, SpeedupColumn), index(rowCount() - 1, SpeedupColumn));
  emit baselineChanged(runId);
}

int64_t AblationModel::baselineRunId() const { return runIdAt(m_baseline); }
int AblationModel::baselineRow() const { return m_baseline; }

int64_t AblationModel::runIdAt(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() ? m_rows[size_t(row)].id : -1;
}

int AblationModel::rowOf(int64_t runId) const {
  for (size_t i = 0; i < m_rows.size(); ++i)
    if (m_rows[i].id == runId) return int(i);
  return -1;
}

QString AblationModel::labelAt(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() ? m_rows[size_t(row)].label : QString();
}

QString AblationModel::runNameAt(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() ? m_rows[size_t(row)].name : QString();
}

double AblationModel::stepMsAt(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() ? m_rows[size_t(row)].stepMs : kNaN;
}

double AblationModel::tokensPerSAt(int row) const {
  return row >= 0 && size_t(row) < m_rows.size() ? m_rows[size_t(row)].tokensPerS : kNaN;
}

double AblationModel::speedupAt(int row) const {
  const int b = baselineVariant();
  const double base = b >= 0 ? m_variants[size_t(b)].stepMs.mean : kNaN, mine = stepMsAt(row);
  if (!std::isfinite(base) || !std::isfinite(mine) || mine <= 0 || base <= 0) return kNaN;
  return row == m_baseline && m_variants[size_t(b)].rows.size() == 1 ? 1.0 : base / mine;
}

QString AblationModel::formatSpeedup(double speedup) {
  return std::isfinite(speedup) ? QString::number(speedup, 'f', 2) + QLatin1Char('x') : QString();
}

int AblationModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_rows.size()); }

int AblationModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant AblationModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this || size_t(index.row()) >= m_rows.size()) return {};
  const Row& r = m_rows[size_t(index.row())];
  if (role == RunIdRole) return qint64(r.id);
  if (role == Qt::TextAlignmentRole) {
    if (index.column() >= StepMsColumn) return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    return {};
  }
  if (role == Qt::ToolTipRole) {
    if (index.column() == VariantColumn)
      return tr("run %1 (id %2)%3")
          .arg(r.name)
          .arg(r.id)
          .arg(r.variantTag.isEmpty() ? QString() : tr(", ablation.variant = %1").arg(r.variantTag));
    if (index.column() == SpeedupColumn && index.row() != m_baseline && m_baseline >= 0)
      return baselineVariant() >= 0 && m_variants[size_t(baselineVariant())].rows.size() > 1
                 ? tr("mean ms/step of %1 (%2 runs) / ms/step of this run")
                       .arg(labelAt(m_baseline))
                       .arg(m_variants[size_t(baselineVariant())].rows.size())
                 : tr("ms/step of %1 / ms/step of this run").arg(labelAt(m_baseline));
    return {};
  }
  const bool display = role == Qt::DisplayRole;
  if (!display && role != Qt::UserRole) return {};
  switch (index.column()) {
    case VariantColumn: return r.label;
    case StrategyColumn: return r.strategy;
    case StepMsColumn: return display ? QVariant(text(r.stepMs, 2)) : raw(r.stepMs);
    case TokensPerSColumn: return display ? QVariant(text(r.tokensPerS, 0)) : raw(r.tokensPerS);
    case FinalLossColumn: return display ? QVariant(text(r.finalLoss, 4)) : raw(r.finalLoss);
    case SpeedupColumn: {
      const double s = speedupAt(index.row());
      return display ? QVariant(formatSpeedup(s)) : raw(s);
    }
    case CommShareColumn:
      return display ? QVariant(std::isfinite(r.commShare) ? QString::number(100 * r.commShare, 'f', 1) + "%" : QString())
                     : raw(r.commShare);
    default: return {};
  }
}

QVariant AblationModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section >= 0 && size_t(section) < m_rows.size() ? QVariant(section + 1) : QVariant();
  switch (section) {
    case VariantColumn: return tr("Variant");
    case StrategyColumn: return tr("Strategy");
    case StepMsColumn: return tr("ms/step");
    case TokensPerSColumn: return tr("tokens/s");
    case FinalLossColumn: return tr("Final loss");
    case SpeedupColumn: return tr("Speedup");
    case CommShareColumn: return tr("Comm share");
    default: return {};
  }
}
