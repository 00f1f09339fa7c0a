// ctest-labels: gui
// The analysis models (PhaseBreakdownModel, AblationModel, TrafficMatrixModel, ExpertLoadModel)
// on the GUI fixture store: model consistency (QAbstractItemModelTester), values against the
// fixture's generator functions and against summarize_run, cells computed by hand, baseline and
// step changes, bad input; ExpertLoadModel's shadowed cells (MarkedRole, tooltips) on a
// hand-built fastermoe run.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "gui_fixture.h"
#include "models/ablationmodel.h"
#include "models/byteformat.h"
#include "models/expertloadmodel.h"
#include "models/heatmaproles.h"
#include "models/phasebreakdownmodel.h"
#include "models/phaserunsmodel.h"
#include "models/trafficmatrixmodel.h"
#include "moebench/store/run_store.h"
#include "moebench/store/run_summary.h"
#include "cli_support.h"
#include "test_support.h"

using namespace moebench;
namespace fx = moebench::test::gui_fixture;
using moebench::test::error_message;

namespace {

bool near(double a, double b, double tol = 1e-9) { return std::fabs(a - b) <= tol * std::max(1.0, std::fabs(b)); }

#define QVERIFY_NEAR(a, b)                                                                                 \
  QVERIFY2(near((a), (b)), qPrintable(QStringLiteral("%1 = %2, expected %3").arg(#a).arg((a), 0, 'g', 15) \
                                          .arg((b), 0, 'g', 15)))

// Mean over the steps 2..kSteps (the fixture's step 1 is the warm-up summarize_run leaves out).
template <class F>
double warmMean(F f) {
  double sum = 0;
  for (int s = 2; s <= fx::kSteps; ++s) sum += f(s);
  return sum / (fx::kSteps - 1);
}

// Mean ms per (step, rank) of the spans of `stream` with `layer` from the fixture's generator.
double layerMs(int variant, const char* stream, int layer) {
  double sum = 0;
  int n = 0;
  for (int s = 2; s <= fx::kSteps; ++s)
    for (int r = 0; r < fx::kRanks; ++r) {
      for (const SpanRow& span : fx::stepSpans(variant, s, r))
        if (span.stream == stream && span.layer == layer) sum += span.duration;
      ++n;
    }
  return 1e3 * sum / n;
}

}  // namespace

class TestGuiAnalysisModels : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void cleanupTestCase();
  void phaseBreakdownValues();
  void phaseBreakdownEmptyAndErrors();
  void phaseRunsTable();
  void phaseBookingMeasuredAndPredicted();
  void heatmapSharedScale();
  void ablationValues();
  void ablationBaseline();
  void ablationVariantTagAndErrors();
  void trafficAllSteps();
  void trafficStepFilter();
  void trafficErrorsAndFormat();
  void expertLoadValues();
  void expertLoadStepFilter();
  void expertLoadExpertCount();
  void expertLoadShadowed();

 private:
  std::unique_ptr<QTemporaryDir> m_dir;
  std::shared_ptr<RunStore> m_store;
  int64_t m_ec = 0, m_hier = 0, m_dc = 0, m_broken = 0;
};

void TestGuiAnalysisModels::initTestCase() {
  m_dir = std::make_unique<QTemporaryDir>();
  QVERIFY(m_dir->isValid());
  const QString path = fx::write(*m_dir);
  m_store = std::make_shared<RunStore>(path.toStdString());
  m_ec = m_store->find_run("ec").id;
  m_hier = m_store->find_run("hier").id;
  m_dc = m_store->find_run("dc").id;
  m_broken = m_store->find_run("broken").id;
}

void TestGuiAnalysisModels::cleanupTestCase() {
  m_store.reset();
  m_dir.reset();
}

void TestGuiAnalysisModels::phaseBreakdownValues() {
  PhaseBreakdownModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QCOMPARE(model.rowCount(), 0);
  for (int v = 0; v < 3; ++v) {
    const int64_t id = v == 0 ? m_ec : v == 1 ? m_hier : m_dc;
    model.setRun(m_store, id);
    QCOMPARE(model.runId(), id);
    QCOMPARE(model.rowCount(), fx::kLayers + 2);
    QCOMPARE(model.columnCount(), 4);
    QCOMPARE(model.samples(), int64_t((fx::kSteps - 1) * fx::kRanks));
    QVERIFY(model.warmupExcluded());
    for (int L = 0; L < fx::kLayers; ++L) {
      QCOMPARE(model.headerData(L, Qt::Vertical).toString(), QStringLiteral("layer %1").arg(L));
      QCOMPARE(model.layerAt(L), L);
      QVERIFY_NEAR(model.index(L, PhaseBreakdownModel::ComputeColumn).data(Qt::UserRole).toDouble(),
                   layerMs(v, "compute", L));
      QVERIFY_NEAR(model.valueMs(L, PhaseBreakdownModel::CommColumn), layerMs(v, "compute.comm", L));
      QVERIFY(!model.index(L, PhaseBreakdownModel::IdleColumn).data().isValid());
      QVERIFY_NEAR(model.valueMs(L, PhaseBreakdownModel::TotalColumn),
                   layerMs(v, "compute", L) + layerMs(v, "compute.comm", L));
    }
    const int other = fx::kLayers, whole = fx::kLayers + 1;
    QCOMPARE(model.headerData(other, Qt::Vertical).toString(), QStringLiteral("other"));
    QCOMPARE(model.headerData(whole, Qt::Vertical).toString(), QStringLiteral("whole step"));
    QCOMPARE(model.rowKind(whole), PhaseBreakdownModel::WholeStepRow);
    // whole step = summarize_run's split
    const RunSummary s = summarize_run(*m_store, m_store->find_run(std::to_string(id)));
    QVERIFY_NEAR(model.valueMs(whole, PhaseBreakdownModel::ComputeColumn), 1e3 * s.phases.compute_s);
    QVERIFY_NEAR(model.valueMs(whole, PhaseBreakdownModel::CommColumn), 1e3 * s.phases.comm_s);
    QVERIFY_NEAR(model.valueMs(whole, PhaseBreakdownModel::IdleColumn), 1e3 * s.phases.idle_s);
    QVERIFY_NEAR(model.valueMs(whole, PhaseBreakdownModel::TotalColumn), 1e3 * s.phases.step_s);
    // the fixture's step: mean stepMs over steps 2..6; compute 0.78 D, comm 0.12 D, idle 0.1 D
    const double D = warmMean([&](int st) { return fx::stepMs(v, st); });
    QVERIFY_NEAR(model.valueMs(whole, PhaseBreakdownModel::TotalColumn), D);
    QVERIFY_NEAR(model.valueMs(whole, PhaseBreakdownModel::CommColumn), 0.12 * D);
    // rows add up: layers + other = whole (compute and comm); + idle = the step
    double compute = 0, comm = 0;
    for (int r = 0; r <= other; ++r) {
      compute += model.valueMs(r, PhaseBreakdownModel::ComputeColumn);
      comm += model.valueMs(r, PhaseBreakdownModel::CommColumn);
    }
    QVERIFY_NEAR(compute, model.valueMs(whole, PhaseBreakdownModel::ComputeColumn));
    QVERIFY_NEAR(comm, model.valueMs(whole, PhaseBreakdownModel::CommColumn));
    QVERIFY_NEAR(compute + comm + model.valueMs(whole, PhaseBreakdownModel::IdleColumn),
                 model.valueMs(whole, PhaseBreakdownModel::TotalColumn));
  }
  // By hand, run "ec": mean step over steps 2..6 = (21 + 20 + 21 + 20 + 21) / 5 = 20.6 ms.
  //   layer 0 compute = (0.02 + 0.04) * mean work (1, 2, 1, 2 -> 1.5) * 20.6 = 1.854 ms
  //   layer 0 comm    = (0.01 + 0.01 + 0.015 + 0.015) * 20.6 = 1.03 ms
  //   whole compute   = (0.9 - 0.12) * 20.6 = 16.068; other compute = 16.068 - 2 * 1.854 = 12.36
  //   other comm      = grad.wait 0.02 * 20.6 = 0.412; whole idle = 0.1 * 20.6 = 2.06
  model.setRun(m_store, m_ec);
  QVERIFY_NEAR(model.valueMs(0, PhaseBreakdownModel::ComputeColumn), 1.854);
  QCOMPARE(model.index(0, PhaseBreakdownModel::ComputeColumn).data().toString(), QStringLiteral("1.854"));
  QVERIFY_NEAR(model.valueMs(0, PhaseBreakdownModel::CommColumn), 1.03);
  QVERIFY_NEAR(model.valueMs(2, PhaseBreakdownModel::ComputeColumn), 12.36);
  QVERIFY_NEAR(model.valueMs(2, PhaseBreakdownModel::CommColumn), 0.412);
  QVERIFY(!model.index(2, PhaseBreakdownModel::IdleColumn).data().isValid());
  QVERIFY_NEAR(model.valueMs(3, PhaseBreakdownModel::IdleColumn), 2.06);
  QCOMPARE(model.index(3, PhaseBreakdownModel::TotalColumn).data().toString(), QStringLiteral("20.600"));
  QCOMPARE(model.headerData(PhaseBreakdownModel::IdleColumn, Qt::Horizontal).toString(), QStringLiteral("idle ms"));
}

void TestGuiAnalysisModels::phaseBreakdownEmptyAndErrors() {
  PhaseBreakdownModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRun(m_store, m_ec);
  QCOMPARE(model.rowCount(), 4);
  const QString err = error_message<StoreError>([&] { model.setRun(m_store, 9999); });
  QVERIFY2(err.contains("9999"), qPrintable(err));
  QCOMPARE(model.rowCount(), 4);  // unchanged
  QCOMPARE(model.runId(), m_ec);
  model.setRun(m_store, m_broken);  // no spans
  QCOMPARE(model.rowCount(), 0);
  QVERIFY2(model.emptyReason().contains("broken") && model.emptyReason().contains("no step spans"),
           qPrintable(model.emptyReason()));
  model.setRun(nullptr, m_ec);
  QCOMPARE(model.rowCount(), 0);
  QCOMPARE(model.runId(), int64_t(-1));
  QVERIFY(model.emptyReason().isEmpty());
}

// The Phases table with several runs side by side: every run's rows, run after run.
void TestGuiAnalysisModels::phaseRunsTable() {
  PhaseRunsModel table;
  QAbstractItemModelTester tester(&table, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QCOMPARE(table.rowCount(), 0);
  QCOMPARE(table.columnCount(), int(PhaseRunsModel::ColumnCount));
  PhaseBreakdownModel ec, dc, broken;
  ec.setRun(m_store, m_ec);
  dc.setRun(m_store, m_dc);
  broken.setRun(m_store, m_store->find_run("broken").id);
  table.setRuns({{m_dc, "#3 dc", QColor(Qt::red), &dc}, {m_ec, "#1 ec", QColor(Qt::blue), &ec}, {-1, "none", {}, nullptr},
                 {9, "#9 broken", QColor(Qt::green), &broken}});
  const int rows = fx::kLayers + 2;
  QCOMPARE(table.rowCount(), 2 * rows);  // broken and the null model have no rows
  QCOMPARE(table.headerData(PhaseRunsModel::RunColumn, Qt::Horizontal).toString(), QStringLiteral("Run"));
  QCOMPARE(table.headerData(PhaseRunsModel::CommColumn, Qt::Horizontal).toString(), QStringLiteral("comm ms"));
  QCOMPARE(table.index(0, PhaseRunsModel::RunColumn).data().toString(), QStringLiteral("#3 dc"));
  QCOMPARE(table.index(0, PhaseRunsModel::RunColumn).data(Qt::DecorationRole).value<QColor>(), QColor(Qt::red));
  QCOMPARE(table.index(rows, PhaseRunsModel::RunColumn).data().toString(), QStringLiteral("#1 ec"));
  QCOMPARE(table.runIdAt(rows), m_ec);
  QCOMPARE(table.sourceRowAt(rows + 3), 3);
  QCOMPARE(table.index(rows + 3, PhaseRunsModel::RowColumn).data().toString(), QStringLiteral("whole step"));
  // the values are each run's model's: dc layer 0 compute 0.09 * 12.6 = 1.134, ec's 1.854
  QCOMPARE(table.index(0, PhaseRunsModel::ComputeColumn).data().toString(), QStringLiteral("1.134"));
  QVERIFY_NEAR(table.index(rows, PhaseRunsModel::ComputeColumn).data(Qt::UserRole).toDouble(), 1.854);
  QVERIFY_NEAR(table.index(rows + 3, PhaseRunsModel::IdleColumn).data(Qt::UserRole).toDouble(), 2.06);
  QVERIFY(!table.index(rows, PhaseRunsModel::IdleColumn).data().isValid());  // a layer has no idle
  QCOMPARE(table.runIdAt(99), int64_t(-1));
  table.clear();
  QCOMPARE(table.rowCount(), 0);
}

// Issue 35, point 5: "Phases charges predicted dense-layer comm differently from measured runs".
// A real `moebench run` of the quickstart and its `moebench simulate`: both record the tasks of
// the same step graph (add_training_step), each span with its task's layer, so the same task
// lands in the same row: the dense blocks 0 and 2 are layer rows in both (their compute and the
// all-reduce of their gradient bucket), the MoE exchanges are their block's, the unlabelled
// gradient buckets and the optimizer are "other".
void TestGuiAnalysisModels::phaseBookingMeasuredAndPredicted() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString config = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml");
  const QString db = dir.filePath("runs.db");
  auto cli = [&](const QStringList& args) { return test::run_cli_into_db(args, db, dir.path()); };
  QCOMPARE(cli({"run", config, "--set", "train.steps=3"}), 0);
  QCOMPARE(cli({"simulate", config, "--steps", "2"}), 0);
  auto store = std::make_shared<RunStore>(db.toStdString(), RunStore::Mode::read_only);
  const int64_t measured = store->find_run("quickstart").id, predicted = store->find_run("quickstart (predicted)").id;
  // task name -> the layers its spans carry, for the comm and the compute-stream spans
  auto booking = [&](int64_t run) {
    std::map<std::string, std::set<int>> out;
    for (const SpanRow& s : store->spans(run))
      if (s.category == "comm" || (s.stream == "compute" && s.category == "compute")) out[s.name].insert(s.layer);
    return out;
  };
  const auto m = booking(measured), p = booking(predicted);
  int common = 0;
  for (const auto& [name, layers] : m)
    if (const auto it = p.find(name); it != p.end()) {
      ++common;
      QVERIFY2(layers == it->second, name.c_str());
    }
  QVERIFY(common > 20);
  // dense-layer comm: the gradient bucket of each dense block, labelled with the block, in both
  const std::set<int> allLayers = {-1, 0, 1, 2, 3};
  QVERIFY(m.at("grad.allreduce") == allLayers);
  QVERIFY(p.at("grad.allreduce") == allLayers);
  QVERIFY(m.at("moe.dispatch") == (std::set<int>{1, 3}));
  // the rows: layers 0..3 (dense 0, 2 and MoE 1, 3), other, whole step, in both; every layer row
  // with compute and comm
  for (int64_t id : {measured, predicted}) {
    PhaseBreakdownModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRun(store, id);
    QStringList labels;
    for (int r = 0; r < model.rowCount(); ++r) labels << model.rowLabel(r);
    QCOMPARE(labels, (QStringList{"layer 0", "layer 1", "layer 2", "layer 3", "other", "whole step"}));
    for (int r = 0; r < 4; ++r) {
      QVERIFY2(model.valueMs(r, PhaseBreakdownModel::ComputeColumn) > 0, qPrintable(labels[r]));
      QVERIFY2(model.valueMs(r, PhaseBreakdownModel::CommColumn) > 0, qPrintable(labels[r]));
    }
  }
}

// The shared colour scale of the side-by-side heatmaps: IntensityRole = cell / the scale, the
// scale's text on headerData(0, Horizontal, ScaleTextRole), kept across setStep.
void TestGuiAnalysisModels::heatmapSharedScale() {
  TrafficMatrixModel traffic;
  QAbstractItemModelTester t1(&traffic, QAbstractItemModelTester::FailureReportingMode::QtTest);
  traffic.setScaleMax(100);  // an empty model: nothing to emit over
  traffic.setRun(m_store, m_ec);
  QCOMPARE(traffic.scaleMax(), 100.0);
  traffic.setScaleMax(0);
  QCOMPARE(traffic.scaleMax(), traffic.maxBytes());
  QCOMPARE(traffic.maxBytes(), 422.5);
  QVERIFY(!traffic.headerData(0, Qt::Horizontal, HeatmapRoles::ScaleTextRole).isValid());  // its own scale
  QSignalSpy changed(&traffic, &QAbstractItemModel::dataChanged);
  traffic.setScaleMax(2422.5);  // dc's largest cell
  QCOMPARE(changed.size(), 1);
  QCOMPARE(traffic.scaleMax(), 2422.5);
  QVERIFY_NEAR(traffic.index(3, 2).data(HeatmapRoles::IntensityRole).toDouble(), 422.5 / 2422.5);
  QCOMPARE(traffic.headerData(0, Qt::Horizontal, HeatmapRoles::ScaleTextRole).toString(), moebench::gui::compactBytes(2422.5));
  QVERIFY(!traffic.headerData(1, Qt::Horizontal, HeatmapRoles::ScaleTextRole).isValid());
  traffic.setStep(5);
  QCOMPARE(traffic.scaleMax(), 2422.5);
  QVERIFY_NEAR(traffic.index(3, 2).data(HeatmapRoles::IntensityRole).toDouble(), 424.0 / 2422.5);
  traffic.setScaleMax(200);  // a scale below a cell: clamped to 1
  QCOMPARE(traffic.index(3, 2).data(HeatmapRoles::IntensityRole).toDouble(), 1.0);

  ExpertLoadModel load;
  QAbstractItemModelTester t2(&load, QAbstractItemModelTester::FailureReportingMode::QtTest);
  load.setRun(m_store, m_ec);
  QCOMPARE(load.scaleMax(), int64_t(396));
  load.setScaleMax(792);
  QCOMPARE(load.scaleMax(), int64_t(792));
  QVERIFY_NEAR(load.index(1, 3).data(HeatmapRoles::IntensityRole).toDouble(), 0.5);
  QCOMPARE(load.headerData(0, Qt::Horizontal, HeatmapRoles::ScaleTextRole).toString(), QStringLiteral("792"));
  load.setStep(2);
  QCOMPARE(load.scaleMax(), int64_t(792));
  QVERIFY_NEAR(load.index(1, 3).data(HeatmapRoles::IntensityRole).toDouble(), 66.0 / 792.0);
  load.setScaleMax(0);
  QCOMPARE(load.scaleMax(), load.maxTokens());
  QCOMPARE(load.index(1, 3).data(HeatmapRoles::IntensityRole).toDouble(), 1.0);
}

void TestGuiAnalysisModels::ablationValues() {
  AblationModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRuns(m_store, {m_ec, m_hier, m_dc, m_broken});
  QCOMPARE(model.rowCount(), 4);
  QCOMPARE(model.columnCount(), 7);
  QCOMPARE(model.baselineRunId(), m_ec);  // default: the first run
  for (int v = 0; v < 3; ++v) {
    QCOMPARE(model.index(v, AblationModel::VariantColumn).data().toString(), QString(fx::kRunNames[v]));
    QCOMPARE(model.index(v, AblationModel::StrategyColumn).data().toString(), QString(fx::kStrategies[v]));
    const double ms = warmMean([&](int s) { return fx::stepMs(v, s); });
    const double tps = warmMean([&](int s) { return fx::tokensPerS(v, s); });
    QVERIFY_NEAR(model.index(v, AblationModel::StepMsColumn).data(Qt::UserRole).toDouble(), ms);
    QVERIFY_NEAR(model.index(v, AblationModel::TokensPerSColumn).data(Qt::UserRole).toDouble(), tps);
    QVERIFY_NEAR(model.index(v, AblationModel::FinalLossColumn).data(Qt::UserRole).toDouble(),
                 fx::loss(v, fx::kSteps));
    const double base = warmMean([&](int s) { return fx::stepMs(0, s); });
    QVERIFY_NEAR(model.index(v, AblationModel::SpeedupColumn).data(Qt::UserRole).toDouble(), base / ms);
    // comm share: compute.comm 0.12 D of every step D
    QVERIFY_NEAR(model.index(v, AblationModel::CommShareColumn).data(Qt::UserRole).toDouble(), 0.12);
    QCOMPARE(model.index(v, AblationModel::CommShareColumn).data().toString(), QStringLiteral("12.0%"));
    QCOMPARE(model.index(v, 0).data(AblationModel::RunIdRole).toLongLong(), qint64(model.runIdAt(v)));
  }
  // By hand: ms/step ec 20.6, hier 16.6, dc 12.6; speedups 20.6 / 16.6 = 1.2410 -> "1.24x",
  // 20.6 / 12.6 = 1.6349 -> "1.63x"; final loss ec = 4 - 0.2 * 5 = 3.
  QCOMPARE(model.index(0, AblationModel::StepMsColumn).data().toString(), QStringLiteral("20.60"));
  QCOMPARE(model.index(0, AblationModel::SpeedupColumn).data().toString(), QStringLiteral("1.00x"));
  QCOMPARE(model.index(1, AblationModel::SpeedupColumn).data().toString(), QStringLiteral("1.24x"));
  QCOMPARE(model.index(2, AblationModel::SpeedupColumn).data().toString(), QStringLiteral("1.63x"));
  QCOMPARE(model.index(0, AblationModel::FinalLossColumn).data().toString(), QStringLiteral("3.0000"));
  // the broken run: a final loss, no speed, no spans
  QCOMPARE(model.index(3, AblationModel::FinalLossColumn).data(Qt::UserRole).toDouble(), 4.4);
  QVERIFY(!model.index(3, AblationModel::StepMsColumn).data(Qt::UserRole).isValid());
  QVERIFY(!model.index(3, AblationModel::SpeedupColumn).data(Qt::UserRole).isValid());
  QCOMPARE(model.index(3, AblationModel::SpeedupColumn).data().toString(), QString());
  QVERIFY(!model.index(3, AblationModel::CommShareColumn).data(Qt::UserRole).isValid());
}

void TestGuiAnalysisModels::ablationBaseline() {
  AblationModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRuns(m_store, {m_ec, m_hier, m_dc});
  QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
  QSignalSpy baseline(&model, &AblationModel::baselineChanged);
  model.setBaseline(m_dc);
  QCOMPARE(baseline.count(), 1);
  QCOMPARE(baseline.at(0).at(0).value<int64_t>(), m_dc);
  QCOMPARE(changed.count(), 1);
  QCOMPARE(changed.at(0).at(0).toModelIndex().column(), int(AblationModel::SpeedupColumn));
  QCOMPARE(changed.at(0).at(1).toModelIndex().row(), 2);
  QCOMPARE(model.baselineRow(), 2);
  // By hand: 12.6 / 20.6 = 0.6117 -> "0.61x", 12.6 / 16.6 = 0.7590 -> "0.76x"
  QCOMPARE(model.index(0, AblationModel::SpeedupColumn).data().toString(), QStringLiteral("0.61x"));
  QCOMPARE(model.index(1, AblationModel::SpeedupColumn).data().toString(), QStringLiteral("0.76x"));
  QCOMPARE(model.index(2, AblationModel::SpeedupColumn).data().toString(), QStringLiteral("1.00x"));
  QVERIFY_NEAR(model.speedupAt(0), 12.6 / 20.6);
  // the baseline stays when the runs change but keep it; else it falls back to the first run
  model.setRuns(m_store, {m_hier, m_dc});
  QCOMPARE(model.baselineRunId(), m_dc);
  QCOMPARE(model.index(0, AblationModel::SpeedupColumn).data().toString(), QStringLiteral("0.76x"));
  model.setRuns(m_store, {m_hier, m_ec});
  QCOMPARE(model.baselineRunId(), m_hier);
  QCOMPARE(model.index(1, AblationModel::SpeedupColumn).data().toString(), QStringLiteral("0.81x"));  // 16.6/20.6
  // a run that is not compared
  const QString err = error_message<std::invalid_argument>([&] { model.setBaseline(m_dc); });
  QVERIFY2(err.contains(QString::number(m_dc)) && err.contains("not one of the 2 runs"), qPrintable(err));
  QCOMPARE(model.baselineRunId(), m_hier);
}

void TestGuiAnalysisModels::ablationVariantTagAndErrors() {
  QTemporaryDir dir;
  const QString path = fx::write(dir);
  {
    RunStore writer(path.toStdString());
    writer.set_tag(writer.find_run("hier").id, "ablation.variant", "strategy.name=hier_a2a");
  }
  auto store = std::make_shared<RunStore>(path.toStdString(), RunStore::Mode::read_only);
  const int64_t ec = store->find_run("ec").id, hier = store->find_run("hier").id;
  AblationModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRuns(store, {hier, ec});
  QCOMPARE(model.index(0, AblationModel::VariantColumn).data().toString(), QStringLiteral("strategy.name=hier_a2a"));
  QCOMPARE(model.index(1, AblationModel::VariantColumn).data().toString(), QStringLiteral("ec"));  // no tag: the name
  QVERIFY(model.index(0, AblationModel::VariantColumn).data(Qt::ToolTipRole).toString().contains("hier"));
  // bad run id: clear error, model unchanged
  const QString err = error_message<StoreError>([&] { model.setRuns(store, {ec, 4242}); });
  QVERIFY2(err.contains("4242"), qPrintable(err));
  QCOMPARE(model.rowCount(), 2);
  QCOMPARE(model.runIdAt(0), hier);
  model.clear();
  QCOMPARE(model.rowCount(), 0);
  QCOMPARE(model.baselineRunId(), int64_t(-1));
}

void TestGuiAnalysisModels::trafficAllSteps() {
  TrafficMatrixModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  for (int v = 0; v < 3; ++v) {
    const int64_t id = v == 0 ? m_ec : v == 1 ? m_hier : m_dc;
    model.setRun(m_store, id);
    QCOMPARE(model.rowCount(), fx::kRanks);
    QCOMPARE(model.columnCount(), fx::kRanks);
    QCOMPARE(model.step(), TrafficMatrixModel::kAllSteps);
    QCOMPARE(model.stepsPerMean(), int64_t(fx::kSteps));
    QCOMPARE(int(model.steps().size()), fx::kSteps);
    double intra = 0, inter = 0, max = 0;
    for (int r = 0; r < fx::kRanks; ++r)
      for (int p = 0; p < fx::kRanks; ++p) {
        double mean = 0;
        for (int s = 1; s <= fx::kSteps; ++s) mean += double(fx::trafficBytes(v, s, r, p)) / fx::kSteps;
        max = std::max(max, mean);
        const QModelIndex i = model.index(r, p);
        QVERIFY_NEAR(i.data(Qt::UserRole).toDouble(), mean);
        const QString link = r == p ? QString() : fx::sameNode(r, p) ? "intra_node" : "inter_node";
        QCOMPARE(i.data(HeatmapRoles::LinkRole).toString(), link);
        if (link == "intra_node") intra += mean;
        if (link == "inter_node") inter += mean;
      }
    QVERIFY_NEAR(model.maxBytes(), max);
    QVERIFY_NEAR(model.intraBytes(), intra);
    QVERIFY_NEAR(model.interBytes(), inter);
    // the totals are summarize_run's per-step bytes
    const RunSummary s = summarize_run(*m_store, m_store->find_run(std::to_string(id)));
    QVERIFY_NEAR(model.intraBytes(), s.bytes_intra_per_step);
    QVERIFY_NEAR(model.interBytes(), s.bytes_inter_per_step);
  }
  // By hand, run "ec": rank 0 -> 3: 100 + 30 + (step - 1), mean over steps 1..6 = 132.5 (inter-node);
  // rank 1 -> 0: 200 + 0 + 2.5 = 202.5 (intra-node); the largest cell 3 -> 2: 400 + 20 + 2.5 = 422.5
  model.setRun(m_store, m_ec);
  QCOMPARE(model.index(0, 3).data(Qt::UserRole).toDouble(), 132.5);
  QCOMPARE(model.index(0, 3).data(HeatmapRoles::LinkRole).toString(), QStringLiteral("inter_node"));
  QCOMPARE(model.index(1, 0).data(Qt::UserRole).toDouble(), 202.5);
  QCOMPARE(model.index(1, 0).data(HeatmapRoles::LinkRole).toString(), QStringLiteral("intra_node"));
  QCOMPARE(model.maxBytes(), 422.5);
  QCOMPARE(model.index(3, 2).data(HeatmapRoles::IntensityRole).toDouble(), 1.0);
  QVERIFY_NEAR(model.index(0, 3).data(HeatmapRoles::IntensityRole).toDouble(), 132.5 / 422.5);
  // the diagonal: no traffic, no link, no text
  QCOMPARE(model.index(2, 2).data(Qt::UserRole).toDouble(), 0.0);
  QCOMPARE(model.index(2, 2).data().toString(), QString());
  QCOMPARE(model.index(2, 2).data(HeatmapRoles::IntensityRole).toDouble(), 0.0);
  QCOMPARE(model.headerData(3, Qt::Horizontal).toString(), QStringLiteral("rank 3"));
  QCOMPARE(model.headerData(1, Qt::Vertical).toString(), QStringLiteral("rank 1"));
  QVERIFY(model.index(0, 3).data(Qt::ToolTipRole).toString().contains("inter-node"));
}

void TestGuiAnalysisModels::trafficStepFilter() {
  TrafficMatrixModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRun(m_store, m_hier, 4);
  QCOMPARE(model.step(), int64_t(4));
  // By hand, run "hier" (variant 1), step 4: rank 0 -> 3 = 100 + 30 + 3 + 1000 = 1133 -> "1.13 kB"
  QCOMPARE(model.index(0, 3).data(Qt::UserRole).toDouble(), 1133.0);
  QCOMPARE(model.index(0, 3).data().toString(), QStringLiteral("1.13 kB"));
  QCOMPARE(model.index(1, 0).data().toString(), QStringLiteral("1.20 kB"));  // 200 + 0 + 3 + 1000 = 1203
  QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
  for (int step : {1, 6}) {
    model.setStep(step);
    for (int r = 0; r < fx::kRanks; ++r)
      for (int p = 0; p < fx::kRanks; ++p)
        QCOMPARE(model.bytesAt(r, p), double(fx::trafficBytes(1, step, r, p)));
  }
  QCOMPARE(changed.count(), 2);
  QCOMPARE(model.index(0, 3).data(Qt::UserRole).toDouble(), 1135.0);
  QVERIFY(model.index(0, 3).data(Qt::ToolTipRole).toString().contains("step 6"));
  model.setStep(TrafficMatrixModel::kAllSteps);
  QCOMPARE(model.index(0, 3).data(Qt::UserRole).toDouble(), 1132.5);
  QCOMPARE(changed.count(), 3);
}

void TestGuiAnalysisModels::trafficErrorsAndFormat() {
  TrafficMatrixModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRun(m_store, m_ec);
  QString err = error_message<std::invalid_argument>([&] { model.setStep(17); });
  QVERIFY2(err.contains("ec") && err.contains("step 17"), qPrintable(err));
  QCOMPARE(model.step(), TrafficMatrixModel::kAllSteps);
  err = error_message<StoreError>([&] { model.setRun(m_store, 777); });
  QVERIFY2(err.contains("777"), qPrintable(err));
  QCOMPARE(model.runId(), m_ec);
  err = error_message<std::invalid_argument>([&] { model.setRun(m_store, m_hier, 99); });
  QVERIFY2(err.contains("step 99"), qPrintable(err));
  QCOMPARE(model.runId(), m_ec);
  model.setRun(m_store, m_broken);  // no traffic: its one rank, nothing sent
  QVERIFY(model.steps().empty());
  QCOMPARE(model.intraBytes() + model.interBytes(), 0.0);
  model.clear();
  QCOMPARE(model.rowCount(), 0);
  QCOMPARE(moebench::gui::compactBytes(999), QStringLiteral("999 B"));
  QCOMPARE(moebench::gui::compactBytes(1234), QStringLiteral("1.23 kB"));
  QCOMPARE(moebench::gui::compactBytes(45.6e6), QStringLiteral("45.6 MB"));
  QCOMPARE(moebench::gui::compactBytes(999999), QStringLiteral("1.00 MB"));
  QCOMPARE(moebench::gui::compactBytes(2.5e9), QStringLiteral("2.50 GB"));
}

void TestGuiAnalysisModels::expertLoadValues() {
  ExpertLoadModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRun(m_store, m_ec);
  QCOMPARE(model.rowCount(), fx::kLayers);
  QCOMPARE(model.columnCount(), fx::kExperts);
  QCOMPARE(int(model.steps().size()), fx::kSteps);
  QCOMPARE(model.step(), ExpertLoadModel::kAllSteps);
  int64_t max = 0;
  for (int L = 0; L < fx::kLayers; ++L) {
    QCOMPARE(model.headerData(L, Qt::Vertical).toString(), QStringLiteral("layer %1").arg(L));
    for (int e = 0; e < fx::kExperts; ++e) {
      int64_t sum = 0;
      for (int s = 1; s <= fx::kSteps; ++s)
        for (int r = 0; r < fx::kRanks; ++r) sum += fx::routedTokens(s, L, r, e);
      QCOMPARE(model.index(L, e).data(Qt::UserRole).toDouble(), double(sum));
      max = std::max(max, sum);
    }
  }
  QCOMPARE(model.maxTokens(), max);
  // the same numbers as summarize_run's expert load
  const RunSummary s = summarize_run(*m_store, m_store->find_run("ec"));
  QCOMPARE(int(s.expert_load.size()), fx::kLayers);
  for (int L = 0; L < fx::kLayers; ++L) {
    for (int e = 0; e < fx::kExperts; ++e) QCOMPARE(model.tokensAt(L, e), s.expert_load[size_t(L)].tokens[size_t(e)]);
    QVERIFY_NEAR(model.imbalance(L), s.expert_load[size_t(L)].imbalance);
    QCOMPARE(model.busiestExpert(L), s.expert_load[size_t(L)].busiest_expert);
  }
  // By hand: layer 0 expert 0 per step = sum over ranks (8 + rank + (step - 1) % 3) = 38 + 4 ((step - 1) % 3);
  // over steps 1..6: 6 * 38 + 4 * (0+1+2+0+1+2) = 252. Layer 0 expert e: 252 + 24 e -> mean 288,
  // max 324, imbalance 1.125. Largest cell: layer 1 expert 3: 6 * (4 * 14 + 6) + 24 = 396.
  QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("252"));
  QCOMPARE(model.maxTokens(), int64_t(396));
  QVERIFY_NEAR(model.index(0, 0).data(HeatmapRoles::IntensityRole).toDouble(), 252.0 / 396.0);
  QCOMPARE(model.index(1, 3).data(HeatmapRoles::IntensityRole).toDouble(), 1.0);
  QVERIFY_NEAR(model.imbalance(0), 1.125);
  QCOMPARE(model.busiestExpert(0), 3);
  QCOMPARE(model.headerData(2, Qt::Horizontal).toString(), QStringLiteral("expert 2"));
  QVERIFY(model.index(0, 0).data(Qt::ToolTipRole).toString().contains("252 tokens"));
  QVERIFY(!model.index(0, 0).data(HeatmapRoles::LinkRole).isValid());  // no links in this model
}

void TestGuiAnalysisModels::expertLoadStepFilter() {
  ExpertLoadModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRun(m_store, m_dc);
  QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
  for (int step = 1; step <= fx::kSteps; ++step) {
    model.setStep(step);
    QCOMPARE(model.step(), int64_t(step));
    int64_t max = 0;
    for (int L = 0; L < fx::kLayers; ++L)
      for (int e = 0; e < fx::kExperts; ++e) {
        int64_t sum = 0;
        for (int r = 0; r < fx::kRanks; ++r) sum += fx::routedTokens(step, L, r, e);
        QCOMPARE(model.tokensAt(L, e), sum);
        max = std::max(max, sum);
      }
    QCOMPARE(model.maxTokens(), max);
  }
  QCOMPARE(changed.count(), fx::kSteps);
  // By hand: step 3, layer 0, expert 0: 4 * 8 + (0+1+2+3) + 4 * 2 = 46
  model.setStep(3);
  QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("46"));
  QVERIFY(model.index(0, 0).data(Qt::ToolTipRole).toString().contains("step 3"));
  model.setStep(ExpertLoadModel::kAllSteps);
  QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("252"));
  // bad input
  QString err = error_message<std::invalid_argument>([&] { model.setStep(7); });
  QVERIFY2(err.contains("dc") && err.contains("step 7"), qPrintable(err));
  err = error_message<std::invalid_argument>([&] { model.setStep(0); });  // steps are 1-based
  QVERIFY2(err.contains("dc") && err.contains("step 0"), qPrintable(err));
  QCOMPARE(model.step(), ExpertLoadModel::kAllSteps);
  const QString err2 = error_message<StoreError>([&] { model.setRun(m_store, 31337); });
  QVERIFY2(err2.contains("31337"), qPrintable(err2));
  QCOMPARE(model.runId(), m_dc);
  model.setRun(m_store, m_broken);
  QCOMPARE(model.rowCount(), 0);
  QVERIFY2(model.emptyReason().contains("no routing"), qPrintable(model.emptyReason()));
  model.setRun(nullptr, m_ec);
  QCOMPARE(model.rowCount(), 0);
  QCOMPARE(model.columnCount(), 0);
}

void TestGuiAnalysisModels::expertLoadExpertCount() {
  // moe_experts_per_layer reads the config (fixture config: blocks 0 and 1 with 4 experts)
  const auto fromConfig = moe_experts_per_layer(fx::configJson());
  QCOMPARE(fromConfig.size(), size_t(2));
  QCOMPARE(fromConfig.at(0), 4);
  QCOMPARE(fromConfig.at(1), 4);
  const auto perBlock = moe_experts_per_layer(R"({"moe": {"moe_layers": [1, 3], "experts": [8, 16]}})");
  QCOMPARE(perBlock.at(1), 8);
  QCOMPARE(perBlock.at(3), 16);
  QVERIFY(moe_experts_per_layer("not json").empty());

  // A run that routed only to experts 0 and 1 of block 0 (config: 4 experts) and to experts 0..5
  // of block 7 (not in the config): 6 columns; block 0 shows 4 experts (2 and 3 with 0 tokens),
  // its cells 4 and 5 are empty.
  QTemporaryDir dir;
  auto store = std::make_shared<RunStore>(dir.filePath("runs.db").toStdString());
  RunInfo info;
  info.name = "sparse";
  info.config_json = fx::configJson();
  const int64_t id = store->create_run(info).id;
  std::vector<RoutingRow> routing = {{1, 0, 0, 0, 5}, {1, 0, 1, 1, 7}};  // step 1
  for (int e = 0; e < 6; ++e) routing.push_back({1, 7, 0, e, 1 + e});
  store->log_step(id, {{"loss", 1, 1.0, 0}}, {}, {}, routing);
  ExpertLoadModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRun(store, id, 1);
  QCOMPARE(model.rowCount(), 2);
  QCOMPARE(model.columnCount(), 6);
  QCOMPARE(model.layerAt(1), 7);
  QCOMPARE(model.expertsAt(0), 4);
  QCOMPARE(model.expertsAt(1), 6);
  QCOMPARE(model.index(0, 1).data().toString(), QStringLiteral("7"));
  QCOMPARE(model.index(0, 3).data().toString(), QStringLiteral("0"));
  QVERIFY(!model.index(0, 4).data().isValid());
  QVERIFY(!model.index(0, 4).data(HeatmapRoles::IntensityRole).isValid());
  // layer 0: max 7, mean 12 / 4 = 3 -> 2.333; the same as summarize_run
  QVERIFY_NEAR(model.imbalance(0), 7.0 / 3.0);
  const RunSummary s = summarize_run(*store, store->find_run("sparse"));
  QVERIFY_NEAR(model.imbalance(0), s.expert_load[0].imbalance);
  QCOMPARE(s.expert_load[0].experts, 4);
}

void TestGuiAnalysisModels::expertLoadShadowed() {
  // fx::addShadowedRun: expert 3 of block 0 shadowed in steps 1, 2, 4, expert 1 in step 2,
  // expert 0 of block 2 in step 3 (4 steps with routing).
  QTemporaryDir dir;
  auto store = std::make_shared<RunStore>(dir.filePath("runs.db").toStdString());
  const int64_t id = fx::addShadowedRun(*store);
  ExpertLoadModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRun(store, id);
  QCOMPARE(model.rowCount(), 2);
  QCOMPARE(model.layerAt(1), 2);
  QVERIFY(model.hasShadowing());
  QCOMPARE(model.headerData(0, Qt::Horizontal, HeatmapRoles::MarkLegendRole).toString(),
           QStringLiteral("shadowed (FasterMoE)"));
  // all steps: the number of steps shadowed (tokens: 4 ranks x (5 + e) x 4 steps, 4 x 7 x 4)
  const int all[2][4] = {{0, 1, 0, 3}, {1, 0, -1, -1}};
  for (int r = 0; r < 2; ++r)
    for (int e = 0; e < 4; ++e) {
      const QVariant marked = model.index(r, e).data(HeatmapRoles::MarkedRole);
      if (all[r][e] < 0) {
        QVERIFY(!marked.isValid());  // block 2 has 2 experts: an empty cell
        continue;
      }
      QCOMPARE(marked.toInt(), all[r][e]);
      QCOMPARE(model.shadowedSteps(r, e), all[r][e]);
    }
  QCOMPARE(model.index(0, 3).data(Qt::ToolTipRole).toString(),
           QStringLiteral("layer 0, expert 3: 128 tokens (all 4 steps); shadowed in 3 of 4 steps"));
  QCOMPARE(model.index(0, 0).data(Qt::ToolTipRole).toString(), QStringLiteral("layer 0, expert 0: 80 tokens (all 4 steps)"));
  // one step: 1 when shadowed in it
  const int perStep[4][2][4] = {{{0, 0, 0, 1}, {0, 0}},
                                {{0, 1, 0, 1}, {0, 0}},
                                {{0, 0, 0, 0}, {1, 0}},
                                {{0, 0, 0, 1}, {0, 0}}};
  for (int step = 1; step <= 4; ++step) {
    model.setStep(step);
    for (int r = 0; r < 2; ++r)
      for (int e = 0; e < model.expertsAt(r); ++e)
        QCOMPARE(model.index(r, e).data(HeatmapRoles::MarkedRole).toInt(), perStep[step - 1][r][e]);
  }
  model.setStep(2);
  QCOMPARE(model.index(0, 1).data(Qt::ToolTipRole).toString(),
           QStringLiteral("layer 0, expert 1: 24 tokens (step 2); shadowed in this step"));
  QVERIFY(!model.index(0, 2).data(Qt::ToolTipRole).toString().contains("shadowed"));
  // A run without shadow metrics: no marks, no legend.
  model.setRun(m_store, m_ec);
  QVERIFY(!model.hasShadowing());
  QVERIFY(!model.index(0, 0).data(HeatmapRoles::MarkedRole).isValid());
  QVERIFY(!model.headerData(0, Qt::Horizontal, HeatmapRoles::MarkLegendRole).isValid());
  QCOMPARE(model.shadowedSteps(0, 0), 0);
}

QTEST_MAIN(TestGuiAnalysisModels)
#include "tst_gui_analysis_models.moc"
