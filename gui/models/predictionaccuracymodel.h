#pragma once
// PredictionAccuracyModel: how close the simulator's predictions (`moebench simulate`, runs
// tagged "predicted") came to the measured runs they predict. One row per pair (predicted run,
// measured run) of the whole store, in the store's run order of the predicted runs, and a
// summary over the pairs.
//
// Pairing (each predicted run gets at most one measured run), chosen, never drifting as runs
// are added, and never with a KILLED, FAILED or RUNNING run unless a tag names that run:
//   1. tag "pair_run": the measured run the user paired it with (the run browser's "Pair
//      prediction with measured run"; PairRunTag), looked up with RunStore::find_run.
//   2. tag "trace_run": the run whose recorded routing the prediction replayed
//      (`simulate --routing trace:RUN` stores its uuid).
//   A named run that is not FINISHED is still paired, and the pair says its status.
//   3. else the config: the latest-started FINISHED measured run that started before the
//      prediction was made (so a later run never takes the pair over) and whose params equal the
//      predicted run's on every config key ("section.key") except those that say where a run is
//      recorded and for how long, not what one step does (kIgnoredConfigKeys: store.*, run.name,
//      run.out_dir, run.oversubscribe_ok, run.stop_grace_s, train.steps, train.eval_every,
//      train.eval_batches, train.checkpoint_every). The cluster, rank count, strategy and routing
//      must be equal: a prediction for another cluster or routing does not predict that
//      measurement. Params that are not config keys (no '.': peak_gflops, ...) are not compared.
//   A measured run is one without the tag "predicted" that has a "step_ms" metric. Predicted runs
//   without one are listed in unmatched() with the reason.
// Per pair the cluster the prediction used (tags "cluster", "cluster_file") and its rates (tag
// "rates", written by `moebench simulate`): "calibrated on HOST" (a `moebench calibrate` file),
// "described" (another cluster file: datasheet or assumed rates), "defaults" (moebench's built-in
// rates: the prediction says nothing about this machine), "unknown" (a run from before the tag).
// Numbers, per pair:
//   predicted ms/step  mean "step_ms" over every step of the predicted run (the simulator has no
//                      warm-up: each simulated step stands on its own)
//   measured ms/step   mean "step_ms" of the measured run, the first step left out as warm-up when
//                      more than 2 steps were recorded (summarize_run's rule, models/stepmeans.h):
//                      the same number as the run browser's ms/step column and `runs show`
//   error %            100 (predicted - measured) / measured (signed: > 0 predicted too slow)
// Summary (summary()):
//   MAE  mean absolute relative error, %: mean over pairs of |error %|
//   R²   coefficient of determination of predicted against measured ms/step:
//        1 - sum (p - m)^2 / sum (m - mean m)^2; undefined (NaN, with the reason) with fewer than
//        2 pairs or when every measured ms/step is the same (zero variance). It may be negative:
//        worse than predicting the mean.
//
// Roles: Qt::DisplayRole = text; Qt::UserRole = raw value (double for numbers, QString for
// text); PredictedRunRole / MeasuredRunRole = the pair's run ids (qint64) on every column;
// Qt::ToolTipRole = both runs and how they were paired.
#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "moebench/store/run_store.h"

class PredictionAccuracyModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    PredictedColumn,     // "name (#id)" of the predicted run
    MeasuredColumn,      // "name (#id)" of the measured run
    StrategyColumn,
    MatchColumn,         // "trace_run" | "config"
    PredictedMsColumn,   // predicted ms/step
    MeasuredMsColumn,    // measured ms/step
    ErrorColumn,         // relative error, %
    ClusterColumn,       // "name (file)" the prediction used
    RatesColumn,         // calibrated on HOST | described | defaults | unknown
    ColumnCount
  };
  enum Role { PredictedRunRole = Qt::UserRole + 1, MeasuredRunRole };
  enum class Match { Chosen, TraceRun, Config };
  static constexpr const char* PairRunTag = "pair_run";

  struct Pair {
    moebench::RunInfo predicted, measured;
    Match match = Match::Config;
    QString cluster, clusterFile, rates;
    double predictedMs = std::numeric_limits<double>::quiet_NaN();
    double measuredMs = std::numeric_limits<double>::quiet_NaN();
    double errorPercent() const { return 100.0 * (predictedMs - measuredMs) / measuredMs; }
  };
  struct Unmatched {
    moebench::RunInfo predicted;
    QString reason;  // "no measured run has its config (cluster, ranks, strategy, routing, ...)"
  };
  struct Summary {
    int pairs = 0;
    double maePercent = std::numeric_limits<double>::quiet_NaN();  // NaN without pairs
    double r2 = std::numeric_limits<double>::quiet_NaN();          // NaN when undefined
    QString r2Undefined;  // why R² is undefined ("needs at least 2 pairs", ...); empty when defined
  };

  // Config keys that do not take part in the config match (a trailing '*' is a section).
  static const std::vector<const char*> kIgnoredConfigKeys;

  explicit PredictionAccuracyModel(QObject* parent = nullptr);
  ~PredictionAccuracyModel() override;

  // Pairs the store's runs (model reset). Throws StoreError with the model unchanged; a null
  // store empties the model.
  void setStore(std::shared_ptr<moebench::RunStore> store);
  void clear();

  const std::vector<Pair>& pairs() const { return m_pairs; }
  const std::vector<Unmatched>& unmatched() const { return m_unmatched; }
  const Summary& summary() const { return m_summary; }
  // "3 pairs · MAE 4.20 % · R² 0.931" / "1 pair · MAE 5.00 % · R² undefined: needs at least 2 pairs"
  QString summaryText() const;
  int rowOfRun(int64_t runId) const;  // the row whose predicted or measured run this is; -1

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // The summary of any list of pairs (exposed for the view's selection and for tests).
  static Summary summarize(const std::vector<Pair>& pairs);
  // "ec (#3)"
  static QString runLabel(const moebench::RunInfo& run);

 private:
  std::vector<Pair> m_pairs;
  std::vector<Unmatched> m_unmatched;
  Summary m_summary;
};
