#pragma once
// Item data roles shared by the heatmap models (TrafficMatrixModel, ExpertLoadModel) and the
// generic HeatmapView that paints them:
//   Qt::DisplayRole  cell text (formatted)
//   Qt::UserRole     the raw value (double)
//   Qt::ToolTipRole  the exact value with its unit, for the hover tooltip
//   IntensityRole    double in [0, 1]: the cell's raw value / the colour scale's top: the largest
//                    cell of the model, or a scale shared with other models (the views that show
//                    several runs side by side set one on every run's model so cells compare;
//                    0 everywhere when the top is 0); invalid for cells without a value
//   LinkRole         QString "intra_node" | "inter_node" | "" (no link, e.g. the diagonal);
//                    only models whose cells are rank pairs provide it
//   MarkedRole       int >= 0: how often the cell is marked (ExpertLoadModel: the steps in which
//                    FasterMoE shadowed the expert); > 0 draws the cell's mark (an outline and
//                    a corner flag); invalid in models without marks
//   MarkLegendRole   on headerData(0, Qt::Horizontal): QString, what a mark means in the
//                    legend ("shadowed"); the view says "marked" when the model gives none
//   ScaleTextRole    on headerData(0, Qt::Horizontal): QString, the colour scale's top as the
//                    cells show it ("1.23 kB"), given when the scale is shared (the legend then
//                    says "max <that> (shared)"); invalid for a model's own scale
#include <Qt>

namespace HeatmapRoles {
enum : int {
  IntensityRole = Qt::UserRole + 20,
  LinkRole = Qt::UserRole + 21,
  MarkedRole = Qt::UserRole + 22,
  MarkLegendRole = Qt::UserRole + 23,
  ScaleTextRole = Qt::UserRole + 24
};
}
