#pragma once
// HeatmapView: paints any table model as a heatmap (the traffic and expert-load tabs use it).
//   cell colour   HeatmapRoles::IntensityRole (0..1) through rampColor(): white -> dark blue;
//                 cells without an intensity are drawn empty (light grey)
//   cell text     Qt::DisplayRole, white on dark cells
//   headers       headerData(Qt::DisplayRole) of both orientations, left and top
//   tooltips      Qt::ToolTipRole of the cell, else "row / column: Qt::UserRole value"
//   links         cells whose HeatmapRoles::LinkRole is "inter_node" get a hatched overlay and a
//                 thick dark border; when the model has any link the legend says
//                 "intra-node" (plain cell) / "inter-node" (hatched cell)
//   marks         cells whose HeatmapRoles::MarkedRole is > 0 (ExpertLoadModel: shadowed experts)
//                 get an orange outline and a filled orange flag in their top-right corner
//   legend        the colour ramp "0" .. "max" (the largest Qt::UserRole value, as the model's
//                 DisplayRole of that cell shows it; "max X (shared)" with X the model's
//                 headerData(0, Horizontal, ScaleTextRole) when it gives one: a scale shared
//                 with other runs' heatmaps), plus the link swatches, plus when any cell
//                 is marked a marked swatch named by headerData(0, Horizontal, MarkLegendRole)
// Geometry (cellRect / cellAt) is public so tests and callers can hit cells.
#include <QModelIndex>
#include <QPointer>
#include <QWidget>

class QAbstractItemModel;
class QPainter;

class HeatmapView : public QWidget {
  Q_OBJECT

 public:
  explicit HeatmapView(QWidget* parent = nullptr);
  ~HeatmapView() override;

  void setModel(QAbstractItemModel* model);  // not owned; nullptr shows nothing
  QAbstractItemModel* model() const { return m_model; }

  QRect cellRect(int row, int column) const;  // empty for an invalid cell
  QModelIndex cellAt(const QPoint& pos) const;
  bool showsLinkLegend() const;                // the model has a non-empty LinkRole
  static QColor rampColor(double intensity);   // 0 -> near white, 1 -> dark blue
  static bool isInterNode(const QModelIndex& index);
  static bool isMarked(const QModelIndex& index);  // MarkedRole > 0
  static QColor markColor();
  bool showsMarkLegend() const;                     // some cell is marked
  QString markLegendText() const;                   // MarkLegendRole, else "marked"
  QString legendScaleText() const;                  // ScaleTextRole; empty for the model's own max

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct Metrics {
    int headerWidth = 0, headerHeight = 0, cellWidth = 0, cellHeight = 0, legendHeight = 0;
    int rows = 0, columns = 0;
  };
  Metrics metrics() const;     // for the current widget size
  static void paintMark(QPainter& p, const QRect& cell);
  static QRect cellRect(const Metrics& m, int row, int column);
  int contentCellWidth() const;  // widest cell/column header text + padding (cached)
  int legendWidth() const;       // the legend line's width, from the cells' left edge
  void modelChanged();

  QPointer<QAbstractItemModel> m_model;
  mutable int m_cellWidth = -1;  // contentCellWidth() until the model or the font changes
};
