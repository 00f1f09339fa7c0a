#include "models/runlistmodel.h"

#include <QDateTime>
#include <QFont>
#include <QLocale>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "models/stepmeans.h"

namespace {

constexpr quintptr kExperimentId = 0;  // internalId of experiment rows; runs: experiment + 1

int64_t distinctSteps(const std::vector<moebench::MetricPoint>& points) {
  std::set<int64_t> steps;
  for (const auto& p : points) steps.insert(p.step);
  return int64_t(steps.size());
}

QString formatNumber(double v, int precision) {
  if (std::isnan(v)) return {};
  return QString::number(v, 'f', precision);
}

QVariant rawNumber(double v) {
  if (std::isnan(v)) return {};
  return v;
}

}  // namespace

RunListModel::RunListModel(QObject* parent) : QAbstractItemModel(parent) {}
RunListModel::~RunListModel() = default;

void RunListModel::setStore(std::shared_ptr<moebench::RunStore> store) {
  setExperiments(store, store ? read(*store) : std::vector<Experiment>{});
}

void RunListModel::reload() {
  setExperiments(m_store, m_store ? read(*m_store) : std::vector<Experiment>{});
}

std::vector<RunListModel::Experiment> RunListModel::read(const moebench::RunStore& store) {
  std::vector<Experiment> experiments;
  std::map<std::string, std::vector<RunRow>> byName;
  for (auto& info : store.list_runs()) {
    RunRow row;
    row.info = std::move(info);
    const int64_t id = row.info.id;
    auto loss = store.metrics(id, "loss");
    auto stepMs = store.metrics(id, "step_ms");
    row.steps = loss.empty() ? distinctSteps(stepMs) : distinctSteps(loss);
    if (!loss.empty()) row.finalLoss = loss.back().value;  // metrics() is ordered by step
    row.stepMs = moebench::gui::warmupMean(stepMs);
    row.tokensPerS = moebench::gui::warmupMean(store.metrics(id, "tokens_per_s"));
    for (auto& [key, value] : store.params(id)) row.params[key] = std::move(value);
    for (auto& [key, value] : store.tags(id)) row.tags[key] = std::move(value);
    auto tag = [&row](const char* key) {
      auto it = row.tags.find(key);
      return it == row.tags.end() ? QString() : QString::fromStdString(it->second);
    };
    row.predicted = row.tags.count("predicted") > 0;
    row.predictedCluster = row.predicted ? tag("cluster") : QString();
    row.emulated = row.tags.count("emulated") > 0;
    row.emulatedCluster = tag("emulated.cluster");
    row.emulatedScale = tag("emulated.time_scale");
    row.userTags = tag("tags");
    row.note = tag("note");
    byName[row.info.experiment].push_back(std::move(row));
  }
  for (auto& [name, runs] : byName) experiments.push_back({QString::fromStdString(name), std::move(runs)});
  return experiments;
}

void RunListModel::setExperiments(std::shared_ptr<moebench::RunStore> store, std::vector<Experiment> experiments) {
  bool sameShape = experiments.size() == m_experiments.size();
  for (size_t e = 0; sameShape && e < experiments.size(); ++e) {
    const auto &a = experiments[e], &b = m_experiments[e];
    sameShape = a.name == b.name && a.runs.size() == b.runs.size();
    for (size_t r = 0; sameShape && r < a.runs.size(); ++r) sameShape = a.runs[r].info.id == b.runs[r].info.id;
  }
  if (sameShape) {
    m_store = std::move(store);
    m_experiments = std::move(experiments);
    const int last = columnCount() - 1;
    for (size_t e = 0; e < m_experiments.size(); ++e) {
      const QModelIndex exp = index(int(e), 0);
      emit dataChanged(exp, index(int(e), last));
      if (!m_experiments[e].runs.empty())
        emit dataChanged(index(0, 0, exp), index(int(m_experiments[e].runs.size()) - 1, last, exp));
    }
    return;
  }
  beginResetModel();
  m_store = std::move(store);
  m_experiments = std::move(experiments);
  endResetModel();
}

QStringList RunListModel::paramKeys() const {
  std::set<std::string> keys;
  for (const auto& e : m_experiments)
    for (const auto& r : e.runs)
      for (const auto& [key, value] : r.params) keys.insert(key);
  QStringList out;
  for (const auto& k : keys) out << QString::fromStdString(k);
  return out;
}

void RunListModel::setParamColumns(const QStringList& keys) {
  if (keys == m_paramColumns) return;
  beginResetModel();
  m_paramColumns = keys;
  endResetModel();
}

const RunListModel::RunRow* RunListModel::rowAt(const QModelIndex& index) const {
  if (!index.isValid() || index.model() != this || index.internalId() == kExperimentId) return nullptr;
  const size_t e = size_t(index.internalId() - 1);
  if (e >= m_experiments.size()) return nullptr;
  const auto& runs = m_experiments[e].runs;
  if (index.row() < 0 || size_t(index.row()) >= runs.size()) return nullptr;
  return &runs[size_t(index.row())];
}

moebench::RunInfo RunListModel::runAt(const QModelIndex& index) const {
  const RunRow* row = rowAt(index);
  return row ? row->info : moebench::RunInfo{};
}

bool RunListModel::isExperiment(const QModelIndex& index) const {
  return index.isValid() && index.model() == this && index.internalId() == kExperimentId;
}

QModelIndex RunListModel::indexForRun(int64_t runId, int column) const {
  for (size_t e = 0; e < m_experiments.size(); ++e) {
    const auto& runs = m_experiments[e].runs;
    for (size_t r = 0; r < runs.size(); ++r)
      if (runs[r].info.id == runId) return createIndex(int(r), column, quintptr(e + 1));
  }
  return {};
}

int RunListModel::runCount() const {
  int n = 0;
  for (const auto& e : m_experiments) n += int(e.runs.size());
  return n;
}

QModelIndex RunListModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= columnCount()) return {};
  if (!parent.isValid()) {
    if (size_t(row) >= m_experiments.size()) return {};
    return createIndex(row, column, kExperimentId);
  }
  if (!isExperiment(parent) || parent.column() != 0) return {};
  const size_t e = size_t(parent.row());
  if (e >= m_experiments.size() || size_t(row) >= m_experiments[e].runs.size()) return {};
  return createIndex(row, column, quintptr(e + 1));
}

QModelIndex RunListModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kExperimentId) return {};
  return createIndex(int(child.internalId() - 1), 0, kExperimentId);
}

int RunListModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return int(m_experiments.size());
  if (!isExperiment(parent) || parent.column() != 0) return 0;
  const size_t e = size_t(parent.row());
  return e < m_experiments.size() ? int(m_experiments[e].runs.size()) : 0;
}

int RunListModel::columnCount(const QModelIndex&) const { return ColumnCount + int(m_paramColumns.size()); }

QVariant RunListModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this) return {};
  if (isExperiment(index)) {
    if (size_t(index.row()) >= m_experiments.size()) return {};
    const auto& exp = m_experiments[size_t(index.row())];
    const int count = int(exp.runs.size());
    if (role == RunIdRole) return qint64(-1);
    if (role == Qt::DisplayRole) {
      if (index.column() == NameColumn) return exp.name;
      if (index.column() == StatusColumn) return count == 1 ? tr("1 run") : tr("%1 runs").arg(count);
    } else if (role == Qt::UserRole) {
      if (index.column() == NameColumn) return exp.name;
      if (index.column() == StatusColumn) return double(count);
    }
    return {};
  }
  const RunRow* row = rowAt(index);
  if (!row) return {};
  const auto& info = row->info;
  if (role == RunIdRole) return qint64(info.id);
  if (role == PredictedRole) return row->predicted;
  if (role == EmulatedRole) return row->emulated;
  if (role == Qt::FontRole) {
    if (!row->predicted) return {};
    QFont italic;
    italic.setItalic(true);
    return italic;
  }
  if (role == Qt::ToolTipRole) {
    if (row->emulated)
      return tr("Measured under the link emulator: every message paced over cluster %1's links, time scale x%2")
          .arg(row->emulatedCluster, row->emulatedScale);
    if (!row->predicted) return {};
    return row->predictedCluster.isEmpty()
               ? tr("Predicted by the simulator: nothing ran; every time is predicted")
               : tr("Predicted by the simulator on cluster %1: nothing ran; every time is predicted")
                     .arg(row->predictedCluster);
  }
  if (role == Qt::TextAlignmentRole) {
    if (index.column() >= StepsColumn && index.column() <= TokensPerSColumn)
      return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    return {};
  }
  const bool display = role == Qt::DisplayRole;
  if (!display && role != Qt::UserRole) return {};
  switch (index.column()) {
    case NameColumn: return QString::fromStdString(info.name);
    case StatusColumn: {
      const QString status = QString::fromLatin1(moebench::run_status_name(info.status));
      if (row->predicted) return tr("%1 (predicted)").arg(status);
      return row->emulated ? tr("%1 (emulated)").arg(status) : status;
    }
    case StrategyColumn: return QString::fromStdString(info.strategy);
    case StepsColumn: return display ? QVariant(QString::number(row->steps)) : QVariant(double(row->steps));
    case FinalLossColumn: return display ? QVariant(formatNumber(row->finalLoss, 4)) : rawNumber(row->finalLoss);
    case StepMsColumn: return display ? QVariant(formatNumber(row->stepMs, 1)) : rawNumber(row->stepMs);
    case TokensPerSColumn: return display ? QVariant(formatNumber(row->tokensPerS, 0)) : rawNumber(row->tokensPerS);
    case StartedColumn:
      if (info.start_time <= 0) return display ? QVariant(QString()) : QVariant();
      if (!display) return info.start_time;
      return QDateTime::fromMSecsSinceEpoch(qint64(std::llround(info.start_time * 1000.0)))
          .toString(QStringLiteral("yyyy-MM-dd hh:mm:ss"));
    case TagsColumn: return row->userTags;
    case NoteColumn: return display ? QVariant(row->note.section(QLatin1Char('\n'), 0, 0)) : QVariant(row->note);
    default: break;
  }
  const int p = index.column() - ColumnCount;
  if (p < 0 || p >= m_paramColumns.size()) return {};
  auto it = row->params.find(m_paramColumns[p].toStdString());
  if (it == row->params.end()) return display ? QVariant(QString()) : QVariant();
  const QString value = QString::fromStdString(it->second);
  if (display) return value;
  bool number = false;
  const double v = value.toDouble(&number);
  return number ? QVariant(v) : QVariant(value);
}

QVariant RunListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case NameColumn: return tr("Name");
    case StatusColumn: return tr("Status");
    case StrategyColumn: return tr("Strategy");
    case StepsColumn: return tr("Steps");
    case FinalLossColumn: return tr("Final loss");
    case StepMsColumn: return tr("ms/step");
    case TokensPerSColumn: return tr("tokens/s");
    case StartedColumn: return tr("Started");
    case TagsColumn: return tr("Tags");
    case NoteColumn: return tr("Note");
    default: break;
  }
  const int p = section - ColumnCount;
  return p >= 0 && p < m_paramColumns.size() ? QVariant(m_paramColumns[p]) : QVariant();
}

Qt::ItemFlags RunListModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (!isExperiment(index)) f |= Qt::ItemNeverHasChildren;
  return f;
}

QHash<int, QByteArray> RunListModel::roleNames() const {
  auto names = QAbstractItemModel::roleNames();
  names.insert(Qt::UserRole, "sortValue");
  names.insert(RunIdRole, "runId");
  names.insert(PredictedRole, "predicted");
  names.insert(EmulatedRole, "emulated");
  return names;
}
