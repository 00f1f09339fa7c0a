// ctest-labels: gui
// RunListModel and MetricSeriesModel over a fixture run store: model consistency
// (QAbstractItemModelTester), grouping, display and sort values, series values and gaps.
#include <QAbstractItemModelTester>
#include <QDateTime>
#include <QFont>
#include <QGuiApplication>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <memory>

#include "models/metricseriesmodel.h"
#include "models/runlistmodel.h"
#include "moebench/store/run_store.h"

using moebench::MetricPoint;
using moebench::RunInfo;
using moebench::RunStatus;
using moebench::RunStore;

namespace {

constexpr double kStart = 1700000000.0;

int64_t addRun(RunStore& store, const std::string& name, const std::string& experiment,
               const std::string& strategy, double start, const std::vector<int64_t>& steps,
               const std::vector<double>& loss, const std::vector<double>& stepMs,
               const std::vector<double>& tokens, RunStatus status) {
  RunInfo info;
  info.name = name;
  info.experiment = experiment;
  info.strategy = strategy;
  info.start_time = start;
  const int64_t id = store.create_run(info).id;
  for (size_t i = 0; i < steps.size(); ++i) {
    std::vector<MetricPoint> m = {{"loss", steps[i], loss[i], 0},
                                  {"step_ms", steps[i], stepMs[i], 0},
                                  {"tokens_per_s", steps[i], tokens[i], 0}};
    store.log_step(id, m, {}, {}, {});
  }
  store.set_status(id, status, start + 60);
  return id;
}

QModelIndex childByName(const QAbstractItemModel& model, const QModelIndex& parent, const QString& name) {
  for (int r = 0; r < model.rowCount(parent); ++r) {
    QModelIndex i = model.index(r, 0, parent);
    if (i.data().toString() == name) return i;
  }
  return {};
}

}  // namespace

class TestGuiModels : public QObject {
  Q_OBJECT

 private slots:
  void init();
  void cleanup();
  void runListStructure();
  void runListDisplayAndRoles();
  void runListReload();
  void runListSorting();
  void runListEmptyAndNullStore();
  void runListMarksPredictedRuns();
  void runListMarksEmulatedRuns();
  void metricSeriesValues();
  void metricSeriesChanges();

 private:
  std::unique_ptr<QTemporaryDir> m_dir;
  std::shared_ptr<RunStore> m_store;
  int64_t m_a1 = 0, m_a2 = 0, m_b1 = 0;
};

void TestGuiModels::init() {
  m_dir = std::make_unique<QTemporaryDir>();
  QVERIFY(m_dir->isValid());
  m_store = std::make_shared<RunStore>(m_dir->filePath(QStringLiteral("runs.db")).toStdString());
  m_a1 = addRun(*m_store, "a1", "alpha", "ep", kStart, {1, 2, 3, 4}, {4, 3, 2, 1.5}, {100, 10, 20, 30},
                {1000, 2000, 3000, 4000}, RunStatus::finished);
  m_a2 = addRun(*m_store, "a2", "alpha", "dp", kStart + 10, {1, 2}, {5, 4.5}, {50, 70}, {500, 700},
                RunStatus::failed);
  m_b1 = addRun(*m_store, "b1", "beta", "ep", kStart + 20, {1, 3, 5}, {3, 2, 1}, {10, 40, 60},
                {100, 200, 300}, RunStatus::finished);
}

void TestGuiModels::cleanup() {
  m_store.reset();
  m_dir.reset();
}

void TestGuiModels::runListStructure() {
  RunListModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setStore(m_store);
  QCOMPARE(model.rowCount(), 2);
  QCOMPARE(model.columnCount(), 10);  // ... Started, Tags, Note
  QCOMPARE(model.runCount(), 3);
  const QModelIndex alpha = model.index(0, 0);
  const QModelIndex beta = model.index(1, 0);
  QCOMPARE(alpha.data().toString(), QStringLiteral("alpha"));
  QCOMPARE(beta.data().toString(), QStringLiteral("beta"));
  QVERIFY(model.isExperiment(alpha));
  QCOMPARE(model.rowCount(alpha), 2);
  QCOMPARE(model.rowCount(beta), 1);
  QCOMPARE(model.rowCount(model.index(0, 1)), 0);  // children only under column 0
  QCOMPARE(model.index(0, 1).data().toString(), QStringLiteral("2 runs"));
  QCOMPARE(model.index(1, 1).data().toString(), QStringLiteral("1 run"));
  QCOMPARE(model.index(0, 1).data(Qt::UserRole).toDouble(), 2.0);
  QCOMPARE(alpha.data(RunListModel::RunIdRole).toLongLong(), -1LL);

  const QModelIndex a1 = model.index(0, 0, alpha);
  QCOMPARE(a1.parent(), alpha);
  QCOMPARE(model.rowCount(a1), 0);
  QVERIFY(!model.isExperiment(a1));
  QCOMPARE(a1.data().toString(), QStringLiteral("a1"));
  QCOMPARE(model.index(1, 0, alpha).data().toString(), QStringLiteral("a2"));
  QCOMPARE(model.index(0, 0, beta).data().toString(), QStringLiteral("b1"));
  QCOMPARE(model.runAt(model.index(1, 3, alpha)).id, m_a2);
  QCOMPARE(model.runAt(alpha).id, int64_t(0));
  QCOMPARE(model.indexForRun(m_b1), model.index(0, 0, beta));
  QVERIFY(!model.indexForRun(9999).isValid());
  QVERIFY(!model.index(2, 0).isValid());
  QVERIFY(!model.index(0, RunListModel::ColumnCount).isValid());
  QVERIFY(!model.index(0, 0, a1).isValid());

  for (int c = 0; c < 8; ++c) QVERIFY(!model.headerData(c, Qt::Horizontal).toString().isEmpty());
  QCOMPARE(model.headerData(4, Qt::Horizontal).toString(), QStringLiteral("Final loss"));
}

void TestGuiModels::runListDisplayAndRoles() {
  RunListModel model;
  model.setStore(m_store);
  const QModelIndex alpha = model.index(0, 0);
  auto cell = [&](int row, int column, const QModelIndex& parent) { return model.index(row, column, parent); };

  // a1: 4 steps, final loss 1.5, step_ms mean of 10,20,30 (warm-up left out), tokens 3000
  QCOMPARE(cell(0, RunListModel::StatusColumn, alpha).data().toString(), QStringLiteral("FINISHED"));
  QCOMPARE(cell(0, RunListModel::StrategyColumn, alpha).data().toString(), QStringLiteral("ep"));
  QCOMPARE(cell(0, RunListModel::StepsColumn, alpha).data().toString(), QStringLiteral("4"));
  QCOMPARE(cell(0, RunListModel::StepsColumn, alpha).data(Qt::UserRole).toDouble(), 4.0);
  QCOMPARE(cell(0, RunListModel::FinalLossColumn, alpha).data().toString(), QStringLiteral("1.5000"));
  QCOMPARE(cell(0, RunListModel::FinalLossColumn, alpha).data(Qt::UserRole).toDouble(), 1.5);
  QCOMPARE(cell(0, RunListModel::StepMsColumn, alpha).data().toString(), QStringLiteral("20.0"));
  QCOMPARE(cell(0, RunListModel::StepMsColumn, alpha).data(Qt::UserRole).toDouble(), 20.0);
  QCOMPARE(cell(0, RunListModel::TokensPerSColumn, alpha).data().toString(), QStringLiteral("3000"));
  QCOMPARE(cell(0, RunListModel::TokensPerSColumn, alpha).data(Qt::UserRole).typeId(), int(QMetaType::Double));
  QCOMPARE(cell(0, RunListModel::StartedColumn, alpha).data(Qt::UserRole).toDouble(), kStart);
  QCOMPARE(cell(0, RunListModel::StartedColumn, alpha).data().toString(),
           QDateTime::fromSecsSinceEpoch(qint64(kStart)).toString(QStringLiteral("yyyy-MM-dd hh:mm:ss")));
  QCOMPARE(cell(0, 0, alpha).data(RunListModel::RunIdRole).toLongLong(), qint64(m_a1));
  QCOMPARE(cell(0, 5, alpha).data(RunListModel::RunIdRole).toLongLong(), qint64(m_a1));

  // a2: FAILED, 2 steps so no warm-up exclusion
  QCOMPARE(cell(1, RunListModel::StatusColumn, alpha).data().toString(), QStringLiteral("FAILED"));
  QCOMPARE(cell(1, RunListModel::StepsColumn, alpha).data().toString(), QStringLiteral("2"));
  QCOMPARE(cell(1, RunListModel::FinalLossColumn, alpha).data(Qt::UserRole).toDouble(), 4.5);
  QCOMPARE(cell(1, RunListModel::StepMsColumn, alpha).data(Qt::UserRole).toDouble(), 60.0);
  QCOMPARE(cell(1, RunListModel::TokensPerSColumn, alpha).data(Qt::UserRole).toDouble(), 600.0);
  QCOMPARE(model.runAt(cell(1, 0, alpha)).status, RunStatus::failed);

  // b1
  const QModelIndex beta = model.index(1, 0);
  QCOMPARE(cell(0, RunListModel::StepsColumn, beta).data().toString(), QStringLiteral("3"));
  QCOMPARE(cell(0, RunListModel::StepMsColumn, beta).data(Qt::UserRole).toDouble(), 50.0);
  QCOMPARE(cell(0, RunListModel::TokensPerSColumn, beta).data(Qt::UserRole).toDouble(), 250.0);
  QCOMPARE(cell(0, RunListModel::NameColumn, beta).data(Qt::UserRole).toString(), QStringLiteral("b1"));
}

void TestGuiModels::runListMarksPredictedRuns() {
  // A simulated run (moebench simulate: tag predicted, its cluster) beside the measured ones.
  const int64_t p = addRun(*m_store, "b1 (predicted)", "beta", "ep", kStart + 500, {1}, {NAN}, {12.5}, {800},
                           RunStatus::finished);
  m_store->set_tag(p, "predicted", "simulator");
  m_store->set_tag(p, "cluster", "janus");
  m_store->set_tag(m_b1, "note", "measured");
  RunListModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setStore(m_store);
  const QModelIndex predicted = model.indexForRun(p, RunListModel::StatusColumn);
  const QModelIndex measured = model.indexForRun(m_b1, RunListModel::StatusColumn);
  QVERIFY(predicted.isValid() && measured.isValid());
  QCOMPARE(predicted.data(RunListModel::PredictedRole).toBool(), true);
  QCOMPARE(measured.data(RunListModel::PredictedRole).toBool(), false);
  QCOMPARE(predicted.data().toString(), QStringLiteral("FINISHED (predicted)"));
  QCOMPARE(measured.data().toString(), QStringLiteral("FINISHED"));
  QCOMPARE(predicted.data(Qt::ToolTipRole).toString(),
           QStringLiteral("Predicted by the simulator on cluster janus: nothing ran; every time is predicted"));
  QVERIFY(!measured.data(Qt::ToolTipRole).isValid());
  QVERIFY(model.indexForRun(p, RunListModel::NameColumn).data(Qt::FontRole).value<QFont>().italic());
  QVERIFY(!model.indexForRun(m_b1, RunListModel::NameColumn).data(Qt::FontRole).isValid());
  QCOMPARE(model.indexForRun(p, RunListModel::StepMsColumn).data(Qt::UserRole).toDouble(), 12.5);
}

void TestGuiModels::runListMarksEmulatedRuns() {
  // A run measured under the link emulator (moebench run with [emulate]: its tags).
  const int64_t e = addRun(*m_store, "b1 emulated", "beta", "ep", kStart + 600, {1, 2, 3}, {3.0, 2.5, 2.0},
                           {900, 910, 920}, {10, 10, 10}, RunStatus::finished);
  m_store->set_tag(e, "emulated", "1");
  m_store->set_tag(e, "emulated.cluster", "janus_4gpu");
  m_store->set_tag(e, "emulated.time_scale", "3103");
  RunListModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setStore(m_store);
  const QModelIndex emulated = model.indexForRun(e, RunListModel::StatusColumn);
  const QModelIndex measured = model.indexForRun(m_b1, RunListModel::StatusColumn);
  QCOMPARE(emulated.data(RunListModel::EmulatedRole).toBool(), true);
  QCOMPARE(emulated.data(RunListModel::PredictedRole).toBool(), false);
  QCOMPARE(measured.data(RunListModel::EmulatedRole).toBool(), false);
  QCOMPARE(emulated.data().toString(), QStringLiteral("FINISHED (emulated)"));
  QCOMPARE(emulated.data(Qt::ToolTipRole).toString(),
           QStringLiteral("Measured under the link emulator: every message paced over cluster janus_4gpu's links, "
                          "time scale x3103"));
  QVERIFY(!model.indexForRun(e, RunListModel::NameColumn).data(Qt::FontRole).isValid());  // measured: upright
  QCOMPARE(model.indexForRun(e, RunListModel::StepMsColumn).data(Qt::UserRole).toDouble(), 915.0);
}

void TestGuiModels::runListReload() {
  RunListModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setStore(m_store);
  QSignalSpy resets(&model, &QAbstractItemModel::modelReset);

  // a run without metrics, in a new experiment sorted first, and one more beta run
  RunInfo info;
  info.name = "c1";
  info.experiment = "aaa";
  const int64_t c1 = m_store->create_run(info).id;
  const int64_t b2 = addRun(*m_store, "b2", "beta", "dp", kStart + 30, {1}, {9}, {7}, {70}, RunStatus::killed);
  model.reload();
  QCOMPARE(resets.count(), 1);
  QCOMPARE(model.rowCount(), 3);
  QCOMPARE(model.runCount(), 5);
  QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("aaa"));
  const QModelIndex c1Index = model.indexForRun(c1);
  QVERIFY(c1Index.isValid());
  QCOMPARE(c1Index.parent(), model.index(0, 0));
  QCOMPARE(model.index(c1Index.row(), RunListModel::StatusColumn, c1Index.parent()).data().toString(),
           QStringLiteral("RUNNING"));
  const QModelIndex noLoss = model.index(c1Index.row(), RunListModel::FinalLossColumn, c1Index.parent());
  QCOMPARE(noLoss.data().toString(), QString());
  QVERIFY(!noLoss.data(Qt::UserRole).isValid());
  QCOMPARE(model.index(c1Index.row(), RunListModel::StepsColumn, c1Index.parent()).data().toString(),
           QStringLiteral("0"));
  const QModelIndex beta = model.index(2, 0);
  QCOMPARE(model.rowCount(beta), 2);
  QCOMPARE(model.runAt(model.indexForRun(b2)).status, RunStatus::killed);

  m_store->delete_run(c1);
  m_store->delete_run(m_a2);
  model.reload();
  QCOMPARE(model.rowCount(), 2);
  QCOMPARE(model.runCount(), 3);
  QCOMPARE(model.rowCount(model.index(0, 0)), 1);
  QVERIFY(!model.indexForRun(m_a2).isValid());
}

void TestGuiModels::runListSorting() {
  RunListModel model;
  model.setStore(m_store);
  QSortFilterProxyModel proxy;
  proxy.setSourceModel(&model);
  proxy.setSortRole(Qt::UserRole);
  QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);

  // experiments by run count: beta (1) before alpha (2)
  proxy.sort(RunListModel::StatusColumn, Qt::AscendingOrder);
  QCOMPARE(proxy.index(0, 0).data().toString(), QStringLiteral("beta"));
  QCOMPARE(proxy.index(1, 0).data().toString(), QStringLiteral("alpha"));

  // runs of alpha by final loss: a1 (1.5) before a2 (4.5); descending the other way round
  proxy.sort(RunListModel::FinalLossColumn, Qt::AscendingOrder);
  QModelIndex alpha = childByName(proxy, {}, QStringLiteral("alpha"));
  QVERIFY(alpha.isValid());
  QCOMPARE(proxy.index(0, 0, alpha).data().toString(), QStringLiteral("a1"));
  QCOMPARE(proxy.index(1, 0, alpha).data().toString(), QStringLiteral("a2"));
  proxy.sort(RunListModel::FinalLossColumn, Qt::DescendingOrder);
  alpha = childByName(proxy, {}, QStringLiteral("alpha"));
  QCOMPARE(proxy.index(0, 0, alpha).data().toString(), QStringLiteral("a2"));

  // numeric, not text: step_ms 60 vs 20 ("60.0" > "20.0" either way), tokens 600 vs 3000
  proxy.sort(RunListModel::TokensPerSColumn, Qt::AscendingOrder);
  alpha = childByName(proxy, {}, QStringLiteral("alpha"));
  QCOMPARE(proxy.index(0, 0, alpha).data().toString(), QStringLiteral("a2"));  // 600 < 3000
  QCOMPARE(proxy.index(0, 0, alpha).data(RunListModel::RunIdRole).toLongLong(), qint64(m_a2));

  // still consistent after a source reload
  addRun(*m_store, "a3", "alpha", "ep", kStart + 40, {1}, {0.5}, {5}, {10000}, RunStatus::finished);
  model.reload();
  alpha = childByName(proxy, {}, QStringLiteral("alpha"));
  QCOMPARE(proxy.rowCount(alpha), 3);
  QCOMPARE(proxy.index(2, 0, alpha).data().toString(), QStringLiteral("a3"));  // 10000 tokens/s
}

void TestGuiModels::runListEmptyAndNullStore() {
  RunListModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QCOMPARE(model.rowCount(), 0);
  model.reload();  // no store
  QCOMPARE(model.rowCount(), 0);
  auto empty = std::make_shared<RunStore>(m_dir->filePath(QStringLiteral("empty.db")).toStdString());
  model.setStore(empty);
  QCOMPARE(model.rowCount(), 0);
  model.setStore(m_store);
  QCOMPARE(model.rowCount(), 2);
  model.setStore(nullptr);
  QCOMPARE(model.rowCount(), 0);
}

void TestGuiModels::metricSeriesValues() {
  MetricSeriesModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRuns(m_store, {m_a1, m_b1}, QStringLiteral("loss"));
  QCOMPARE(model.metricKey(), QStringLiteral("loss"));
  QCOMPARE(model.rowCount(), 5);  // union of steps 1..4 and 1,3,5
  QCOMPARE(model.columnCount(), 2);
  QCOMPARE(model.headerData(0, Qt::Horizontal).toString(), QStringLiteral("a1"));
  QCOMPARE(model.headerData(1, Qt::Horizontal).toString(), QStringLiteral("b1"));
  QCOMPARE(model.headerData(1, Qt::Horizontal, Qt::UserRole).toLongLong(), qint64(m_b1));
  for (int r = 0; r < 5; ++r) {
    QCOMPARE(model.headerData(r, Qt::Vertical).toLongLong(), qint64(r + 1));
    QCOMPARE(model.stepAt(r), int64_t(r + 1));
  }
  const double a1[] = {4, 3, 2, 1.5};
  for (int r = 0; r < 4; ++r) QCOMPARE(model.index(r, 0).data().toDouble(), a1[r]);
  QVERIFY(!model.index(4, 0).data().isValid());  // a1 has no step 5
  QCOMPARE(model.index(0, 1).data().toDouble(), 3.0);
  QVERIFY(!model.index(1, 1).data().isValid());
  QCOMPARE(model.index(2, 1).data().toDouble(), 2.0);
  QVERIFY(!model.index(3, 1).data().isValid());
  QCOMPARE(model.index(4, 1).data().toDouble(), 1.0);
  QVERIFY(!model.valueAt(1, 1).has_value());
  QCOMPARE(*model.valueAt(4, 1), 1.0);
  QCOMPARE(model.runIdAt(0), m_a1);
  QCOMPARE(model.runIdAt(2), int64_t(-1));
  QCOMPARE(model.stepAt(5), int64_t(-1));
}

void TestGuiModels::metricSeriesChanges() {
  MetricSeriesModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QCOMPARE(model.rowCount(), 0);
  QCOMPARE(model.columnCount(), 0);
  model.setRuns(m_store, {m_a1, m_b1}, QStringLiteral("loss"));
  QCOMPARE(model.rowCount(), 5);

  model.setRuns(m_store, {m_a2}, QStringLiteral("step_ms"));
  QCOMPARE(model.rowCount(), 2);
  QCOMPARE(model.columnCount(), 1);
  QCOMPARE(model.index(1, 0).data().toDouble(), 70.0);
  QCOMPARE(model.headerData(0, Qt::Horizontal).toString(), QStringLiteral("a2"));

  model.setRuns(m_store, {m_b1, m_a2, m_a1}, QStringLiteral("tokens_per_s"));
  QCOMPARE(model.columnCount(), 3);
  QCOMPARE(model.rowCount(), 5);
  QCOMPARE(model.index(4, 0).data().toDouble(), 300.0);
  QVERIFY(!model.index(4, 1).data().isValid());

  model.setRuns(m_store, {m_a1}, QStringLiteral("no_such_metric"));  // a column, no rows
  QCOMPARE(model.columnCount(), 1);
  QCOMPARE(model.rowCount(), 0);

  model.setRuns(m_store, {m_a1}, QStringLiteral("loss"));
  QVERIFY_THROWS_EXCEPTION(moebench::StoreError, model.setRuns(m_store, {m_a1, 9999}, QStringLiteral("loss")));
  QCOMPARE(model.rowCount(), 4);  // unchanged
  QCOMPARE(model.runIdAt(0), m_a1);

  // NaN logged is a value (NaN), not a gap
  m_store->log_step(m_a1, {{"loss", 7, std::nan(""), 0}}, {}, {}, {});
  model.setRuns(m_store, {m_a1}, QStringLiteral("loss"));
  QCOMPARE(model.rowCount(), 5);
  QVERIFY(model.index(4, 0).data().isValid());
  QVERIFY(std::isnan(model.index(4, 0).data().toDouble()));

  model.clear();
  QCOMPARE(model.rowCount(), 0);
  QCOMPARE(model.columnCount(), 0);
}

QTEST_MAIN(TestGuiModels)
#include "tst_gui_models.moc"
