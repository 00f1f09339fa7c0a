#pragma once
// AblationVariantModel: the variants of an AblationModel, one row each, its repeats (runs with
// the same variant label) aggregated (AblationModel::variants()). It follows the source model:
// reset with it, the Speedup column changes with its baseline.
// Columns:
//   Variant        the label
//   Runs           n: the runs of the variant
//   ms/step        mean of the runs' ms/step (AblationModel's ms/step column: warm-up left out)
//   ± ms/step      sample standard deviation over the runs (n - 1); empty for fewer than 2
//   tokens/s       mean of the runs' tokens/s
//   ± tokens/s     its sample standard deviation
//   Speedup        baseline variant's mean ms/step / this variant's mean, "1.25x"
// Roles: DisplayRole text (ms/step 2 decimals, tokens/s 0, as AblationModel); Qt::UserRole raw
// number (Runs: int, the others double; invalid when missing); Qt::ToolTipRole for Variant: the
// run names; AblationModel::RunIdRole for Variant: the first run's id.
#include <QAbstractTableModel>
#include <QPointer>

class AblationModel;

class AblationVariantModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { VariantColumn, RunsColumn, StepMsColumn, StepMsSdColumn, TokensPerSColumn, TokensPerSSdColumn,
                SpeedupColumn, ColumnCount };

  explicit AblationVariantModel(AblationModel* source, QObject* parent = nullptr);
  ~AblationVariantModel() override;

  AblationModel* source() const { return m_source; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QPointer<AblationModel> m_source;
};
