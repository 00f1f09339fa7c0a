#pragma once
// AblationModel: the variants of an ablation side by side, with speedups against a chosen
// baseline run (issue: "ablation view for an experiment (bars per variant, speedup labels
// against a chosen baseline)").
// Rows: the given runs, in the order given. Columns (all from summarize_run, so they match
// `moebench runs show/compare`):
//   Variant     the run's tag "ablation.variant" (set by `moebench ablate`, e.g.
//               "strategy.name=hier_a2a"), else the run name
//   Strategy    the run's strategy
//   ms/step     mean_step_ms: mean of the "step_ms" metric over the steps, the first step left out
//               as warm-up when more than 2 steps were recorded
//   tokens/s    mean_tokens_per_s: mean of the "tokens_per_s" metric, same rule
//   Final loss  the last "loss" value
//   Speedup     the baseline variant's mean ms/step / this run's ms/step, shown "1.25x" (a
//               baseline run without repeats "1.00x"); above 1 = faster than the baseline.
//               Empty when either is missing.
//   Comm share  phases.comm_share: mean compute-thread comm time / mean step time over
//               (step, rank), from the spans, shown "12.3%"; empty without step spans
// Roles: DisplayRole text; Qt::UserRole raw double (comm share as a fraction; invalid when
// missing); Qt::ToolTipRole for Variant: run name, id and the variant tag; RunIdRole (qint64).
//
// Variants and repeats: runs with the same label (`moebench ablate --repeats N` tags N runs with
// the same ablation.variant) are the repeats of one variant. variants() lists them in the order
// of their first run, each with n, mean and sample standard deviation (n - 1 in the
// denominator; NaN for n < 2) of ms/step and of tokens/s over its runs that have the value. The
// baseline is a variant: the one of the chosen baseline run; the Speedup column (per run) and
// variantSpeedup (per variant) divide the baseline variant's mean ms/step by the run's ms/step
// or the variant's mean; without repeats that is the old run-against-run speedup.
// A label is "key=value key=value ..." (ablate's tag); parseVariantLabel splits it into its
// pairs (a word without "=" before the first pair is the config's name, key ""; a word without
// "=" after a pair continues that pair's value, so "moe.moe_layers=[0, 1]" stays one value).
// variedKeys() are the keys whose value differs between the variants (a key a variant lacks
// counts as the value ""), in order of first appearance.
#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "moebench/store/run_store.h"

class AblationModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { VariantColumn, StrategyColumn, StepMsColumn, TokensPerSColumn, FinalLossColumn,
                SpeedupColumn, CommShareColumn, ColumnCount };
  enum Role { RunIdRole = Qt::UserRole + 1 };

  explicit AblationModel(QObject* parent = nullptr);
  ~AblationModel() override;

  // Reads the runs (model reset). Throws StoreError for an unknown run id (model unchanged).
  // The baseline stays when it is among the new runs, else it becomes the first run. A null store
  // or no runs empties the model.
  void setRuns(std::shared_ptr<moebench::RunStore> store, const std::vector<int64_t>& runIds);
  void clear();
  // Throws std::invalid_argument ("run 42 is not one of the 3 runs compared") when the run is
  // not a row. Emits dataChanged for the speedup column and baselineChanged.
  void setBaseline(int64_t runId);
  int64_t baselineRunId() const;  // -1 when empty
  int baselineRow() const;        // -1 when empty

  int64_t runIdAt(int row) const;  // -1 out of range
  int rowOf(int64_t runId) const;  // -1 when not a row
  QString labelAt(int row) const;
  QString runNameAt(int row) const;
  double stepMsAt(int row) const;     // NaN when missing
  double tokensPerSAt(int row) const;
  double speedupAt(int row) const;
  static QString formatSpeedup(double speedup);  // "1.25x"; empty for NaN

  // n, mean and sample standard deviation of the finite values (mean NaN for n = 0, sd NaN for
  // n < 2).
  struct Spread {
    int n = 0;
    double mean, sd;
  };
  static Spread spread(const std::vector<double>& values);
  using KeyValues = std::vector<std::pair<QString, QString>>;
  static KeyValues parseVariantLabel(const QString& label);
  struct Variant {
    QString label;
    KeyValues keys;         // parseVariantLabel(label)
    std::vector<int> rows;  // its runs' rows, in order
    Spread stepMs, tokensPerS;
  };
  const std::vector<Variant>& variants() const { return m_variants; }
  int variantCount() const { return int(m_variants.size()); }
  int variantOfRow(int row) const;  // -1 out of range
  int baselineVariant() const;      // -1 when empty
  // Baseline variant's mean ms/step / this variant's mean ms/step; NaN when either is missing.
  double variantSpeedup(int variant) const;
  QStringList variedKeys() const;
  // The value of `key` in the variant's label ("" when it has none).
  QString variantValue(int variant, const QString& key) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void baselineChanged(int64_t runId);

 private:
  struct Row {
    int64_t id = 0;
    QString label, name, variantTag, strategy;
    double stepMs, tokensPerS, finalLoss, commShare;
  };
  void buildVariants();

  std::vector<Row> m_rows;
  std::vector<Variant> m_variants;
  std::vector<int> m_variantOfRow;
  int m_baseline = -1;
};
