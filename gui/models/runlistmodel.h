#pragma once
// RunListModel: the run store as a two-level tree for the run browser.
//   top level: experiments (sorted by name); column Name = experiment name, column Status =
//              "N runs" (UserRole: N as double)
//   children:  the experiment's runs, in list_runs order, with the columns below.
// Roles: Qt::DisplayRole = formatted text; Qt::UserRole = raw value for sorting (numbers as
// double, text as QString, invalid QVariant when missing so it sorts last); RunIdRole = the
// run's id (qint64), -1 for experiment rows; PredictedRole = whether the run was written by the
// simulator (tag "predicted"): such rows show their status as "FINISHED (predicted)", in italics,
// with a tooltip naming the cluster (tag "cluster"). EmulatedRole = whether the run ran under the
// link emulator (tag "emulated"): status "FINISHED (emulated)", a tooltip naming the emulated
// cluster and time scale (tags emulated.cluster, emulated.time_scale): measured, under emulation.
// read() takes list_runs() plus the "loss", "step_ms" and "tokens_per_s" metrics, the params and
// the tags of each run (five keyed queries per run; the span/traffic/routing part of
// summarize_run is skipped so hundreds of runs load quickly). ms/step and tokens/s follow
// summarize_run's rule: the mean over steps, the first step left out as warm-up when more than 2
// steps were recorded. read() touches no model: the live refresh calls it off the GUI thread.
// Columns after the fixed ones: Tags (tag "tags": the user's comma-separated labels), Note (tag
// "note"), then one column per chosen param key (setParamColumns: any flattened config key, e.g.
// "train.steps"; numbers sort as numbers).
#include <QAbstractItemModel>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "moebench/store/run_store.h"

class RunListModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Column { NameColumn, StatusColumn, StrategyColumn, StepsColumn, FinalLossColumn,
                StepMsColumn, TokensPerSColumn, StartedColumn, TagsColumn, NoteColumn, ColumnCount };
  enum Role { RunIdRole = Qt::UserRole + 1, PredictedRole, EmulatedRole };

  struct RunRow {
    moebench::RunInfo info;
    int64_t steps = 0;  // distinct steps with "loss" (else with step_ms)
    double finalLoss = std::numeric_limits<double>::quiet_NaN();
    double stepMs = std::numeric_limits<double>::quiet_NaN();
    double tokensPerS = std::numeric_limits<double>::quiet_NaN();
    bool predicted = false;    // tag "predicted": a simulated run
    QString predictedCluster;  // its tag "cluster"
    bool emulated = false;     // tag "emulated": measured under the link emulator
    QString emulatedCluster, emulatedScale;  // tags emulated.cluster, emulated.time_scale
    std::map<std::string, std::string> params;  // the flattened config
    std::map<std::string, std::string> tags;
    QString userTags, note;                     // tags "tags" and "note"
  };
  struct Experiment {
    QString name;
    std::vector<RunRow> runs;
  };

  explicit RunListModel(QObject* parent = nullptr);
  ~RunListModel() override;

  void setStore(std::shared_ptr<moebench::RunStore> store);  // and reload()
  std::shared_ptr<moebench::RunStore> store() const { return m_store; }
  // Re-reads the store. On a StoreError the model keeps its rows and rethrows.
  void reload();
  // The store's experiments and runs as this model shows them; throws StoreError. Thread-safe
  // (RunStore holds its lock per call).
  static std::vector<Experiment> read(const moebench::RunStore& store);
  // Shows rows read by read(). The same experiments with the same runs in the same order only
  // change values (dataChanged: selection and expansion stay); anything else resets the model.
  void setExperiments(std::shared_ptr<moebench::RunStore> store, std::vector<Experiment> experiments);
  const std::vector<Experiment>& experiments() const { return m_experiments; }
  // Every param key of the listed runs, sorted; the param columns shown after the fixed ones.
  QStringList paramKeys() const;
  void setParamColumns(const QStringList& keys);
  QStringList paramColumns() const { return m_paramColumns; }
  const RunRow* runRowAt(const QModelIndex& index) const { return rowAt(index); }

  // The run at a run row (any column); a default RunInfo (id 0) for other indexes.
  moebench::RunInfo runAt(const QModelIndex& index) const;
  bool isExperiment(const QModelIndex& index) const;
  QModelIndex indexForRun(int64_t runId, int column = 0) const;  // invalid when not listed
  int runCount() const;  // over all experiments

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QHash<int, QByteArray> roleNames() const override;

 private:
  const RunRow* rowAt(const QModelIndex& index) const;

  std::shared_ptr<moebench::RunStore> m_store;
  std::vector<Experiment> m_experiments;
  QStringList m_paramColumns;
};
