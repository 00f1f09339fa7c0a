#include "models/predictionaccuracymodel.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "models/stepmeans.h"

using moebench::RunInfo;
using moebench::RunStore;

const std::vector<const char*> PredictionAccuracyModel::kIgnoredConfigKeys = {
    "store.*",      "run.name",   "run.out_dir",       "run.oversubscribe_ok",  "run.stop_grace_s",
    "train.steps",  "train.eval_every", "train.eval_batches", "train.checkpoint_every"};

namespace {

QString matchText(PredictionAccuracyModel::Match m) {
  switch (m) {
    case PredictionAccuracyModel::Match::Chosen: return QObject::tr("the pair chosen in the run browser (tag pair_run)");
    case PredictionAccuracyModel::Match::TraceRun: return QObject::tr("its trace_run tag");
    case PredictionAccuracyModel::Match::Config: break;
  }
  return QObject::tr("an equal config (the latest FINISHED run started before the prediction)");
}

bool ignoredKey(const std::string& key) {
  if (key.find('.') == std::string::npos) return true;  // not a config key (peak_gflops, ...)
  for (const char* ignored : PredictionAccuracyModel::kIgnoredConfigKeys) {
    const std::string k(ignored);
    if (k.back() == '*' ? key.compare(0, k.size() - 1, k, 0, k.size() - 1) == 0 : key == k) return true;
  }
  return false;
}

using ConfigKeys = std::map<std::string, std::string>;

ConfigKeys comparedParams(const RunStore& store, int64_t run) {
  ConfigKeys out;
  for (auto& [key, value] : store.params(run))
    if (!ignoredKey(key)) out.emplace(std::move(key), std::move(value));
  return out;
}

struct Candidate {
  RunInfo info;
  double stepMs = std::numeric_limits<double>::quiet_NaN();
  ConfigKeys config;
};

std::optional<std::string> tagValue(const std::vector<std::pair<std::string, std::string>>& tags, const char* key) {
  for (const auto& [k, v] : tags)
    if (k == key) return v;
  return std::nullopt;
}

}  // namespace

PredictionAccuracyModel::PredictionAccuracyModel(QObject* parent) : QAbstractTableModel(parent) {}
PredictionAccuracyModel::~PredictionAccuracyModel() = default;

void PredictionAccuracyModel::setStore(std::shared_ptr<RunStore> store) {
  std::vector<Pair> pairs;
  std::vector<Unmatched> unmatched;
  if (store) {
    std::vector<Candidate> measured;
    std::vector<std::pair<RunInfo, std::vector<std::pair<std::string, std::string>>>> predicted;
    std::vector<Candidate> named;  // measured runs of any status, for pair_run / trace_run
    for (RunInfo& info : store->list_runs()) {
      auto tags = store->tags(info.id);
      if (tagValue(tags, "predicted")) {
        predicted.emplace_back(std::move(info), std::move(tags));
        continue;
      }
      const double ms = moebench::gui::warmupMean(store->metrics(info.id, "step_ms"));
      if (std::isnan(ms)) continue;  // nothing measured to compare with
      const int64_t id = info.id;
      named.push_back({std::move(info), ms, comparedParams(*store, id)});
    }
    for (const Candidate& c : named)
      if (c.info.status == moebench::RunStatus::finished) measured.push_back(c);
    // Latest-started first, so that the first config match is the newest measurement.
    std::stable_sort(measured.begin(), measured.end(),
                     [](const Candidate& a, const Candidate& b) { return a.info.start_time > b.info.start_time; });

    for (auto& [info, tags] : predicted) {
      const double ms = moebench::gui::plainMean(store->metrics(info.id, "step_ms"));
      if (std::isnan(ms)) {
        unmatched.push_back({info, tr("it has no predicted step_ms")});
        continue;
      }
      const Candidate* match = nullptr;
      Match how = Match::Config;
      QString note;
      for (const auto& [tag, kind] : {std::pair{PairRunTag, Match::Chosen}, std::pair{"trace_run", Match::TraceRun}}) {
        const auto ref = tagValue(tags, tag);
        if (match || !ref) continue;
        try {
          const int64_t id = store->find_run(*ref).id;
          for (const Candidate& c : named)
            if (c.info.id == id) match = &c;
          if (match) how = kind;
          else note += tr("its %1 %2 recorded no step_ms; ").arg(QString::fromLatin1(tag), QString::fromStdString(*ref));
        } catch (const moebench::StoreError&) {
          note += tr("its %1 %2 is not in the store; ").arg(QString::fromLatin1(tag), QString::fromStdString(*ref));
        }
      }
      if (!match) {
        const ConfigKeys config = comparedParams(*store, info.id);
        if (!config.empty())
          for (const Candidate& c : measured)
            if (c.info.start_time <= info.start_time && c.config == config) {
              match = &c;
              break;
            }
      }
      if (!match) {
        unmatched.push_back({info, note + tr("no FINISHED measured run started before it has its config (cluster, "
                                             "ranks, strategy, routing, model, ...)")});
        continue;
      }
      Pair pair;
      pair.predicted = info;
      pair.measured = match->info;
      pair.match = how;
      pair.predictedMs = ms;
      pair.measuredMs = match->stepMs;
      pair.cluster = QString::fromStdString(tagValue(tags, "cluster").value_or(""));
      pair.clusterFile = QString::fromStdString(tagValue(tags, "cluster_file").value_or(""));
      pair.rates = QString::fromStdString(tagValue(tags, "rates").value_or("unknown"));
      pairs.push_back(std::move(pair));
    }
  }
  beginResetModel();
  m_pairs = std::move(pairs);
  m_unmatched = std::move(unmatched);
  m_summary = summarize(m_pairs);
  endResetModel();
}

void PredictionAccuracyModel::clear() { setStore(nullptr); }

PredictionAccuracyModel::Summary PredictionAccuracyModel::summarize(const std::vector<Pair>& pairs) {
  Summary s;
  s.pairs = int(pairs.size());
  if (pairs.empty()) {
    s.r2Undefined = tr("no pairs");
    return s;
  }
  double absErr = 0, meanMeasured = 0;
  for (const Pair& p : pairs) {
    absErr += std::abs(p.errorPercent());
    meanMeasured += p.measuredMs;
  }
  s.maePercent = absErr / double(pairs.size());
  meanMeasured /= double(pairs.size());
  if (pairs.size() < 2) {
    s.r2Undefined = tr("needs at least 2 pairs");
    return s;
  }
  double ssRes = 0, ssTot = 0;
  for (const Pair& p : pairs) {
    ssRes += (p.predictedMs - p.measuredMs) * (p.predictedMs - p.measuredMs);
    ssTot += (p.measuredMs - meanMeasured) * (p.measuredMs - meanMeasured);
  }
  if (!(ssTot > 0)) {
    s.r2Undefined = tr("every measured ms/step is the same (no variance)");
    return s;
  }
  s.r2 = 1.0 - ssRes / ssTot;
  return s;
}

QString PredictionAccuracyModel::summaryText() const {
  const Summary& s = m_summary;
  if (s.pairs == 0) return tr("no predicted run has a measured run to compare with");
  QString text = s.pairs == 1 ? tr("1 pair") : tr("%1 pairs").arg(s.pairs);
  text += tr(" · MAE %1 %").arg(s.maePercent, 0, 'f', 2);
  text += s.r2Undefined.isEmpty() ? tr(" · R² %1").arg(s.r2, 0, 'f', 3) : tr(" · R² undefined: %1").arg(s.r2Undefined);
  return text;
}

QString PredictionAccuracyModel::runLabel(const RunInfo& run) {
  return QStringLiteral("%1 (#%2)").arg(QString::fromStdString(run.name)).arg(run.id);
}

int PredictionAccuracyModel::rowOfRun(int64_t runId) const {
  for (size_t i = 0; i < m_pairs.size(); ++i)
    if (m_pairs[i].predicted.id == runId || m_pairs[i].measured.id == runId) return int(i);
  return -1;
}

int PredictionAccuracyModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_pairs.size());
}

int PredictionAccuracyModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PredictionAccuracyModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this || index.row() >= rowCount() || index.column() >= ColumnCount)
    return {};
  const Pair& p = m_pairs[size_t(index.row())];
  if (role == PredictedRunRole) return qint64(p.predicted.id);
  if (role == MeasuredRunRole) return qint64(p.measured.id);
  if (role == Qt::ToolTipRole) {
    QString text = tr("%1 (predicted) against %2 (measured), paired by %3")
                       .arg(runLabel(p.predicted), runLabel(p.measured), matchText(p.match));
    if (p.measured.status != moebench::RunStatus::finished)
      text += tr("; the measured run is %1").arg(QString::fromLatin1(moebench::run_status_name(p.measured.status)));
    if (p.rates == "defaults")
      text += tr("; the prediction used moebench's default rates, not this machine's: simulate with a cluster file "
                 "(moebench calibrate) to compare");
    return text;
  }
  if (role == Qt::TextAlignmentRole)
    return index.column() >= PredictedMsColumn ? QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter))
                                               : QVariant();
  const bool display = role == Qt::DisplayRole;
  if (!display && role != Qt::UserRole) return {};
  switch (index.column()) {
    case PredictedColumn: return display ? runLabel(p.predicted) : QString::fromStdString(p.predicted.name);
    case MeasuredColumn: return display ? runLabel(p.measured) : QString::fromStdString(p.measured.name);
    case StrategyColumn: return QString::fromStdString(p.predicted.strategy);
    case MatchColumn: {
      const QString how = p.match == Match::Chosen ? QStringLiteral("chosen")
                          : p.match == Match::TraceRun ? QStringLiteral("trace_run")
                                                       : QStringLiteral("config");
      if (p.measured.status == moebench::RunStatus::finished) return how;
      return QStringLiteral("%1 (%2)").arg(how, QString::fromLatin1(moebench::run_status_name(p.measured.status)));
    }
    case ClusterColumn:
      return p.clusterFile.isEmpty() ? p.cluster : QStringLiteral("%1 (%2)").arg(p.cluster, p.clusterFile);
    case RatesColumn: return p.rates;
    case PredictedMsColumn: return display ? QVariant(QString::number(p.predictedMs, 'f', 3)) : QVariant(p.predictedMs);
    case MeasuredMsColumn: return display ? QVariant(QString::number(p.measuredMs, 'f', 3)) : QVariant(p.measuredMs);
    case ErrorColumn: {
      const double e = p.errorPercent();
      return display ? QVariant(QStringLiteral("%1%2 %").arg(e > 0 ? QStringLiteral("+") : QString()).arg(e, 0, 'f', 2))
                     : QVariant(e);
    }
    default: return {};
  }
}

QVariant PredictionAccuracyModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case PredictedColumn: return tr("Predicted run");
    case MeasuredColumn: return tr("Measured run");
    case StrategyColumn: return tr("Strategy");
    case MatchColumn: return tr("Paired by");
    case PredictedMsColumn: return tr("ms/step (predicted)");
    case MeasuredMsColumn: return tr("ms/step (measured)");
    case ErrorColumn: return tr("Error");
    case ClusterColumn: return tr("Cluster (predicted on)");
    case RatesColumn: return tr("Rates");
    default: return {};
  }
}
