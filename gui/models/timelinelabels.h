#pragma once
// Where the timeline's text goes so that no two labels draw over each other: span names inside
// their spans, and the ruler's tick labels. No widgets (QFontMetricsF measures the text); tested
// headless in tests/tst_timeline_tools.cpp.
#include <QRectF>
#include <QString>

#include <vector>

#include "models/timelinegeometry.h"
#include "models/timelinetext.h"

class QFontMetricsF;

namespace moebench::gui {

// A span's name placed inside its item: rect in pixels (x) and layout coordinates (y: the item's
// sub-lane), text the name or its elided form ("moe.disp…").
struct SpanLabel {
  int item = 0;  // index into the items
  QRectF rect;
  QString text;
};

// Labels for the single-span items (count == 1) of visibleItems, sub-lane by sub-lane. On a
// sub-lane the items are taken by x (ties: the later-drawn one, which paints over the other,
// last). A label may use its item's visible part (clipped to the axis) less `padding` on each
// side, up to `padding` before the next item on the sub-lane (a nested or following span paints
// over what lies beyond), and starts at least `padding` after the previous label. The name is
// drawn whole when it fits there, else elided (Qt::ElideRight); no label when not even one
// character and the ellipsis fit, or when the room is under minRoom px. So labels never overlap one another and stay inside their
// spans.
std::vector<SpanLabel> spanLabels(const std::vector<DrawItem>& items, const TimeAxis& axis, const QFontMetricsF& fm,
                                  double padding = 3, double minRoom = 0);

// The ruler: tick marks and their labels ("12.5", ms, tickLabel), each label `offset` px right of
// its tick, top 0, `height` tall.
struct RulerLabel {
  double time = 0;  // seconds
  QRectF rect;
  QString text;
};
struct RulerLayout {
  RulerTicks ticks;                // every tick mark
  std::vector<RulerLabel> labels;  // the labelled ticks, left to right
};
// Ticks at least minPixels apart (rulerTicks), spaced wider when the widest label plus `gap`
// needs more room, so neighbouring labels are always at least `gap` apart; a label that would
// reach past the axis' right end is left out (its tick stays).
RulerLayout rulerLayout(const TimeAxis& axis, const QFontMetricsF& fm, double height, double minPixels,
                        double offset = 3, double gap = 6);

}  // namespace moebench::gui
