#pragma once
// Span search of the timeline: which spans match a search text, in the order Enter steps
// through them, and the range to show to bring one into view. No widgets; tested headless in
// tests/tst_timeline_tools.cpp.
#include <QString>

#include <utility>
#include <vector>

#include "models/timelinegeometry.h"
#include "moebench/store/run_store.h"

namespace moebench::gui {

// Indices of the spans whose name contains text, ignoring case (QString's case folding); none for
// an empty text. Ordered by start time, ties by index (for spans in sortForTimeline order: by rank,
// then stream): the order "next match" steps through.
std::vector<int> matchingSpans(const std::vector<SpanRow>& spans, const QString& text);

// A flag per span: 1 for the indices given, else 0.
std::vector<char> matchFlags(size_t spanCount, const std::vector<int>& matches);

// The visible range [t0, t1] that shows the span [start, end] when jumping to it:
//  - the current range when the span already lies inside it with 10% of the range to spare on
//    each side and is at least minPixels wide;
//  - else the current zoom centred on the span, when it fits in the middle 80% and is at least
//    minPixels wide;
//  - else a range three times the span's duration (at least TimeAxis::kMinSpan) centred on it.
std::pair<double, double> focusRange(const TimeAxis& axis, double start, double end, double minPixels = 4);

}  // namespace moebench::gui
