#include "models/timelinerangesummary.h"

#include <algorithm>
#include <map>

#include "models/timelinetext.h"

namespace moebench::gui {

std::vector<RangeSummaryRow> summarizeRange(const std::vector<SpanRow>& spans, double t0, double t1) {
  if (t1 < t0) std::swap(t0, t1);
  std::map<std::string, RangeSummaryRow> byName;
  for (const SpanRow& s : spans) {
    const double end = s.start + s.duration;
    const bool overlaps = s.duration > 0 ? s.start < t1 && end > t0 : s.start >= t0 && s.start <= t1;
    if (!overlaps) continue;
    RangeSummaryRow& r = byName[s.name];
    r.count += 1;
    r.total += std::max(0.0, std::min(end, t1) - std::max(s.start, t0));
  }
  std::vector<RangeSummaryRow> rows;
  rows.reserve(byName.size());
  for (auto& [name, r] : byName) {
    r.name = name;
    r.mean = r.total / r.count;
    rows.push_back(std::move(r));
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const RangeSummaryRow& a, const RangeSummaryRow& b) { return a.total > b.total; });
  return rows;
}

}  // namespace moebench::gui

TimelineRangeSummaryModel::TimelineRangeSummaryModel(QObject* parent) : QAbstractTableModel(parent) {}

void TimelineRangeSummaryModel::setRange(const std::vector<moebench::SpanRow>& spans, double t0, double t1) {
  beginResetModel();
  m_hasRange = true;
  m_t0 = std::min(t0, t1);
  m_t1 = std::max(t0, t1);
  m_rows = moebench::gui::summarizeRange(spans, m_t0, m_t1);
  endResetModel();
}

void TimelineRangeSummaryModel::clear() {
  beginResetModel();
  m_hasRange = false;
  m_t0 = m_t1 = 0;
  m_rows.clear();
  endResetModel();
}

int TimelineRangeSummaryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_rows.size());
}

int TimelineRangeSummaryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TimelineRangeSummaryModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const moebench::gui::RangeSummaryRow& r = m_rows[size_t(index.row())];
  const int c = index.column();
  if (role == Qt::DisplayRole) {
    switch (c) {
      case NameColumn: return QString::fromStdString(r.name);
      case CountColumn: return r.count;
      case TotalColumn: return moebench::gui::formatDuration(r.total);
      case MeanColumn: return moebench::gui::formatDuration(r.mean);
      default: return {};
    }
  }
  if (role == Qt::UserRole) {
    switch (c) {
      case NameColumn: return QString::fromStdString(r.name);
      case CountColumn: return r.count;
      case TotalColumn: return r.total;
      case MeanColumn: return r.mean;
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole && c != NameColumn) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant TimelineRangeSummaryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case NameColumn: return tr("Name");
    case CountColumn: return tr("Count");
    case TotalColumn: return tr("Total");
    case MeanColumn: return tr("Mean");
    default: return {};
  }
}
