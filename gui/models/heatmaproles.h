#pragma once
// Item data roles shared by the heatmap models (TrafficMatrixModel, ExpertLoadModel) and the
// generic HeatmapView that paints them:
//   Qt::DisplayRole  cell text (formatted)
//   Qt::UserRole     the raw value (double)
//   Qt::ToolTipRole  the exact value with its unit, for the hover tooltip
//   IntensityRole    double in [0, 1]: the cell's raw value / the largest cell of the model
//                    (0 everywhere when every cell is 0); invalid for cells without a value
//   LinkRole         QString "intra_node" | "inter_node" | "" (no link, e.g. the diagonal);
//                    only models whose cells are rank pairs provide it
//   MarkedRole       int >= 0: how often the cell is marked (ExpertLoadModel: the steps in which
//                    FasterMoE shadowed the expert); > 0 draws the cell's mark (an outline and
//                    a corner flag); invalid in models without marks
//   MarkLegendRole   on headerData(0, Qt::Horizontal): QString, what a mark means in the
//                    legend ("shadowed"); the view says "marked" when the model gives none
#include <Qt>

namespace HeatmapRoles {
enum : int {
  IntensityRole = Qt::UserRole + 20,
  LinkRole = Qt::UserRole + 21,
  MarkedRole = Qt::UserRole + 22,
  MarkLegendRole = Qt::UserRole + 23
};
}
