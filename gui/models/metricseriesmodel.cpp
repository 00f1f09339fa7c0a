#include "models/metricseriesmodel.h"

#include <algorithm>
#include <map>
#include <utility>

MetricSeriesModel::MetricSeriesModel(QObject* parent) : QAbstractTableModel(parent) {}
MetricSeriesModel::~MetricSeriesModel() = default;

MetricSeriesModel::Data MetricSeriesModel::read(const moebench::RunStore& store, std::vector<int64_t> runIds,
                                                const QString& key) {
  Data d;
  d.key = key;
  std::vector<std::map<int64_t, double>> series;
  const std::string k = key.toStdString();
  for (int64_t id : runIds) {
    auto info = store.find_run(std::to_string(id));
    d.runNames.push_back(QString::fromStdString(info.name));
    bool predicted = false;
    for (const auto& [tag, value] : store.tags(id)) predicted = predicted || tag == "predicted";
    d.predicted.push_back(predicted);
    std::map<int64_t, double> s;
    for (const auto& p : store.metrics(id, k)) s[p.step] = p.value;  // a later row wins
    for (const auto& [step, value] : s) d.steps.push_back(step);
    series.push_back(std::move(s));
  }
  d.runIds = std::move(runIds);
  std::sort(d.steps.begin(), d.steps.end());
  d.steps.erase(std::unique(d.steps.begin(), d.steps.end()), d.steps.end());
  d.values.assign(d.steps.size(), std::vector<std::optional<double>>(series.size()));
  for (size_t c = 0; c < series.size(); ++c)
    for (const auto& [step, value] : series[c]) {
      const size_t r = size_t(std::lower_bound(d.steps.begin(), d.steps.end(), step) - d.steps.begin());
      d.values[r][c] = value;
    }
  return d;
}

void MetricSeriesModel::setData(std::shared_ptr<moebench::RunStore> store, Data data) {
  beginResetModel();
  m_store = std::move(store);
  m_key = std::move(data.key);
  m_runIds = std::move(data.runIds);
  m_runNames = std::move(data.runNames);
  m_predicted = std::move(data.predicted);
  m_steps = std::move(data.steps);
  m_values = std::move(data.values);
  endResetModel();
}

void MetricSeriesModel::setRuns(std::shared_ptr<moebench::RunStore> store, std::vector<int64_t> runIds,
                                QString key) {
  Data d;
  d.key = key;
  if (store) d = read(*store, std::move(runIds), key);
  setData(std::move(store), std::move(d));
}

bool MetricSeriesModel::isPredicted(int column) const {
  return column >= 0 && size_t(column) < m_predicted.size() && m_predicted[size_t(column)];
}

void MetricSeriesModel::clear() { setRuns(nullptr, {}, {}); }

int64_t MetricSeriesModel::stepAt(int row) const {
  return row >= 0 && size_t(row) < m_steps.size() ? m_steps[size_t(row)] : -1;
}

int64_t MetricSeriesModel::runIdAt(int column) const {
  return column >= 0 && size_t(column) < m_runIds.size() ? m_runIds[size_t(column)] : -1;
}

std::optional<double> MetricSeriesModel::valueAt(int row, int column) const {
  if (row < 0 || column < 0 || size_t(row) >= m_values.size() || size_t(column) >= m_runIds.size()) return {};
  return m_values[size_t(row)][size_t(column)];
}

int MetricSeriesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_steps.size());
}

int MetricSeriesModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_runIds.size());
}

QVariant MetricSeriesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || (role != Qt::DisplayRole && role != Qt::UserRole)) return {};
  auto v = valueAt(index.row(), index.column());
  return v ? QVariant(*v) : QVariant();
}

QVariant MetricSeriesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Horizontal) {
    if (section < 0 || size_t(section) >= m_runIds.size()) return {};
    if (role == Qt::DisplayRole) return m_runNames[size_t(section)];
    if (role == Qt::UserRole) return qint64(m_runIds[size_t(section)]);
    return {};
  }
  if (section < 0 || size_t(section) >= m_steps.size()) return {};
  if (role == Qt::DisplayRole || role == Qt::UserRole) return qint64(m_steps[size_t(section)]);
  return {};
}
