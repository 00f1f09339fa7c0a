#pragma once
// Summary of a selected time range of the timeline (Perfetto's area selection): per span name,
// how many spans overlap the range and how much of their time lies inside it.
//
// The rule (summarizeRange): a span [start, end] (end = start + duration) overlaps the range
// [t0, t1] when start < t1 and end > t0; a zero-duration span when t0 <= start <= t1. Its time in
// the range is clipped to it: min(end, t1) - max(start, t0). Per name, over every rank and stream
// of the spans given: count = the overlapping spans, total = the sum of their clipped times,
// mean = total / count. Spans nested on one stream (a host "step" holding its phases) each
// count for themselves, so a name's total is busy time summed over ranks, not wall time. Rows by
// total, largest first, ties by name.
//
// TimelineRangeSummaryModel shows the rows as a table: Name, Count, Total, Mean; the display
// role formats times ("1.500 ms", formatDuration), Qt::UserRole holds the raw value (name,
// count, seconds) to sort by, numbers are right-aligned. No widgets; tested headless with
// QAbstractItemModelTester in tests/tst_timeline_tools.cpp.
#include <QAbstractTableModel>

#include <string>
#include <vector>

#include "moebench/store/run_store.h"

namespace moebench::gui {

struct RangeSummaryRow {
  std::string name;
  int count = 0;
  double total = 0;  // seconds inside the range, summed
  double mean = 0;   // total / count
};

std::vector<RangeSummaryRow> summarizeRange(const std::vector<SpanRow>& spans, double t0, double t1);

}  // namespace moebench::gui

class TimelineRangeSummaryModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { NameColumn, CountColumn, TotalColumn, MeanColumn, ColumnCount };

  explicit TimelineRangeSummaryModel(QObject* parent = nullptr);

  // Summarizes the spans overlapping [t0, t1] (either order); replaces the rows.
  void setRange(const std::vector<moebench::SpanRow>& spans, double t0, double t1);
  void clear();  // no range: no rows
  bool hasRange() const { return m_hasRange; }
  double rangeStart() const { return m_t0; }
  double rangeEnd() const { return m_t1; }
  const std::vector<moebench::gui::RangeSummaryRow>& rows() const { return m_rows; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<moebench::gui::RangeSummaryRow> m_rows;
  bool m_hasRange = false;
  double m_t0 = 0, m_t1 = 0;
};
