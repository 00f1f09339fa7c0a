#include "models/ablationvariantmodel.h"

#include <QStringList>

#include <cmath>

#include "models/ablationmodel.h"

namespace {
QVariant raw(double v) { return std::isfinite(v) ? QVariant(v) : QVariant(); }
QString text(double v, int precision) { return std::isfinite(v) ? QString::number(v, 'f', precision) : QString(); }
}  // namespace

AblationVariantModel::AblationVariantModel(AblationModel* source, QObject* parent)
    : QAbstractTableModel(parent), m_source(source) {
  connect(source, &QAbstractItemModel::modelAboutToBeReset, this, [this] { beginResetModel(); });
  connect(source, &QAbstractItemModel::modelReset, this, [this] { endResetModel(); });
  connect(source, &AblationModel::baselineChanged, this, [this] {
    if (rowCount() > 0) emit dataChanged(index(0, SpeedupColumn), index(rowCount() - 1, SpeedupColumn));
  });
}

AblationVariantModel::~AblationVariantModel() = default;

int AblationVariantModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !m_source ? 0 : m_source->variantCount();
}

int AblationVariantModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant AblationVariantModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this || index.row() >= rowCount()) return {};
  const AblationModel::Variant& v = m_source->variants()[size_t(index.row())];
  if (role == AblationModel::RunIdRole)
    return index.column() == VariantColumn ? QVariant(qint64(m_source->runIdAt(v.rows.front()))) : QVariant();
  if (role == Qt::TextAlignmentRole) {
    if (index.column() >= RunsColumn) return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    return {};
  }
  if (role == Qt::ToolTipRole) {
    if (index.column() != VariantColumn) return {};
    QStringList names;
    for (int r : v.rows) names << tr("%1 (id %2)").arg(m_source->runNameAt(r)).arg(m_source->runIdAt(r));
    const QString runs = v.rows.size() == 1 ? tr("1 run") : tr("%1 runs").arg(v.rows.size());
    return tr("%1: %2: %3").arg(v.label, runs, names.join(QStringLiteral(", ")));
  }
  const bool display = role == Qt::DisplayRole;
  if (!display && role != Qt::UserRole) return {};
  switch (index.column()) {
    case VariantColumn: return v.label;
    case RunsColumn: return display ? QVariant(QString::number(v.rows.size())) : QVariant(int(v.rows.size()));
    case StepMsColumn: return display ? QVariant(text(v.stepMs.mean, 2)) : raw(v.stepMs.mean);
    case StepMsSdColumn: return display ? QVariant(text(v.stepMs.sd, 2)) : raw(v.stepMs.sd);
    case TokensPerSColumn: return display ? QVariant(text(v.tokensPerS.mean, 0)) : raw(v.tokensPerS.mean);
    case TokensPerSSdColumn: return display ? QVariant(text(v.tokensPerS.sd, 0)) : raw(v.tokensPerS.sd);
    case SpeedupColumn: {
      const double s = m_source->variantSpeedup(index.row());
      return display ? QVariant(AblationModel::formatSpeedup(s)) : raw(s);
    }
    default: return {};
  }
}

QVariant AblationVariantModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section >= 0 && section < rowCount() ? QVariant(section + 1) : QVariant();
  switch (section) {
    case VariantColumn: return tr("Variant");
    case RunsColumn: return tr("Runs");
    case StepMsColumn: return tr("ms/step");
    case StepMsSdColumn: return tr("± ms/step");
    case TokensPerSColumn: return tr("tokens/s");
    case TokensPerSSdColumn: return tr("± tokens/s");
    case SpeedupColumn: return tr("Speedup");
    default: return {};
  }
}
