#pragma once
// Roofline chart geometry (plain functions, no widgets; tested in tests/tst_gui_roofline.cpp):
//   decadeRange   the log axis range RooflineView uses: whole decades around the values with a
//                 margin factor (10^floor(log10(lo / margin)), 10^ceil(log10(hi x margin)))
//   LogPlotFrame  data <-> pixel mapping of a plot with log10 axes on both sides
//   arrowPolyline the predicted -> measured arrow as one polyline in data coordinates:
//                 start, tip, head side 1, tip, head side 2, where start and tip lie on the
//                 segment from -> to, startGapPx / endGapPx pixels inside its ends (so that the
//                 arrow stops at the markers' edges instead of under them); the head is headPx
//                 pixels long at +-headDegrees around the shaft as it appears on screen (so it
//                 looks the same on any axis range and plot size)
#include <QPointF>

#include <vector>

namespace moebench::gui {

struct LogRange {
  double min = 1, max = 10;
};
// lo, hi > 0, margin >= 1.
LogRange decadeRange(double lo, double hi, double margin);

struct LogPlotFrame {
  double xmin = 0.1, xmax = 10, ymin = 0.1, ymax = 10;  // axis ranges, > 0
  double width = 600, height = 400;                      // plot area, pixels (> 0)
  // Pixels from the plot's bottom-left corner, y up.
  QPointF toPixels(const QPointF& data) const;
  QPointF toData(const QPointF& pixels) const;
};

struct ArrowStyle {
  double headPx = 9, headDegrees = 25;
  double startGapPx = 0, endGapPx = 0;
};
// Empty when less than half a pixel of shaft is left between the gaps (nothing to point along).
// The head is never longer than half the shaft.
std::vector<QPointF> arrowPolyline(const QPointF& from, const QPointF& to, const LogPlotFrame& frame,
                                   const ArrowStyle& style = {});

}  // namespace moebench::gui
