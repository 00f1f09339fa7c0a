// ctest-labels: gui
// PredictionAccuracyModel on a store of measured and predicted runs with known step times
// (tests/prediction_fixture.h): the pairing rule (trace_run tag first, then the config without
// the ignored keys, the newest measurement), the means (warm-up step of measured runs), the
// relative errors, MAE and R² against the numbers worked out by hand in the fixture, the runs
// left unmatched, and R² undefined with one pair or no variance. QAbstractItemModelTester
// watches every reset. PredictionAccuracyView rendered headless: the scatter's points at
// (measured, predicted), equal axis ranges, the identity line across them, the MAE / R² label,
// point texts, table selection <-> highlighted point, messages; and its tab in the main window.
// Last, real runs: `moebench run` of the quickstart config and `moebench simulate` of the same
// config (paired by config), with --routing trace:<uuid> (paired by trace_run), and with another
// strategy (left unmatched).
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QScatterSeries>
#include <QTableView>
#include <QValueAxis>

#include "cli_support.h"
#include "mainwindow.h"
#include "widgets/predictionaccuracyview.h"

#include <cmath>
#include <memory>

#include "models/predictionaccuracymodel.h"
#include "prediction_fixture.h"

using namespace moebench;
namespace pf = moebench::test::prediction_fixture;
using Model = PredictionAccuracyModel;

namespace {
bool near(double a, double b, double eps = 1e-9) { return std::abs(a - b) <= eps * std::max(1.0, std::abs(b)); }
}  // namespace

class TstPredictionAccuracy : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;
  std::shared_ptr<RunStore> m_store;

  int64_t id(const char* name) const { return m_store->find_run(name).id; }

 private slots:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    QVERIFY_THROWS_NO_EXCEPTION(m_store = pf::open(m_dir));
  }

  void pairs_and_numbers() {
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(m_store);
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), int(Model::ColumnCount));
    struct Want {
      const char* predicted;
      const char* measured;
      const char* match;
      double predictedMs, measuredMs, errorPercent;
    };
    // In the predicted runs' order (run ids).
    const Want want[] = {{"ec (predicted)", "ec", "config", 13.5, 12.0, 12.5},
                         {"hier (predicted)", "hier", "trace_run", 18.0, 20.0, -10.0},
                         {"dc (predicted)", "dc", "config", 31.5, 30.0, 5.0}};
    for (int r = 0; r < 3; ++r) {
      const Want& w = want[r];
      auto cell = [&](int column, int role = Qt::DisplayRole) { return model.data(model.index(r, column), role); };
      QCOMPARE(cell(0, Model::PredictedRunRole).toLongLong(), id(w.predicted));
      QCOMPARE(cell(Model::ErrorColumn, Model::MeasuredRunRole).toLongLong(), id(w.measured));
      QCOMPARE(cell(Model::PredictedColumn).toString(), QStringLiteral("%1 (#%2)").arg(w.predicted).arg(id(w.predicted)));
      QCOMPARE(cell(Model::MeasuredColumn).toString(), QStringLiteral("%1 (#%2)").arg(w.measured).arg(id(w.measured)));
      QCOMPARE(cell(Model::MatchColumn).toString(), QString(w.match));
      QVERIFY(near(cell(Model::PredictedMsColumn, Qt::UserRole).toDouble(), w.predictedMs));
      QVERIFY(near(cell(Model::MeasuredMsColumn, Qt::UserRole).toDouble(), w.measuredMs));
      QVERIFY(near(cell(Model::ErrorColumn, Qt::UserRole).toDouble(), w.errorPercent));
      QVERIFY(cell(0, Qt::ToolTipRole).toString().contains(QStringLiteral("(predicted) against")));
    }
    QCOMPARE(model.data(model.index(0, Model::ErrorColumn)).toString(), QStringLiteral("+12.50 %"));
    QCOMPARE(model.data(model.index(1, Model::ErrorColumn)).toString(), QStringLiteral("-10.00 %"));
    QCOMPARE(model.data(model.index(1, Model::PredictedMsColumn)).toString(), QStringLiteral("18.000"));
    QCOMPARE(model.data(model.index(2, Model::StrategyColumn)).toString(), QStringLiteral("data_centric"));
    QVERIFY(model.headerData(Model::PredictedMsColumn, Qt::Horizontal).toString().contains("predicted"));
    QVERIFY(model.headerData(Model::MeasuredMsColumn, Qt::Horizontal).toString().contains("measured"));

    const Model::Summary& s = model.summary();
    QCOMPARE(s.pairs, 3);
    QVERIFY(near(s.maePercent, pf::kMae));
    QVERIFY(near(s.maePercent, 9.166666666666666));
    QVERIFY(near(s.r2, pf::kR2));
    QVERIFY(near(s.r2, 0.9477459016393442));
    QVERIFY(s.r2Undefined.isEmpty());
    QCOMPARE(model.summaryText(), QStringLiteral("3 pairs · MAE 9.17 % · R² 0.948"));
    QCOMPARE(model.rowOfRun(id("hier")), 1);
    QCOMPARE(model.rowOfRun(id("dc (predicted)")), 2);
    QCOMPARE(model.rowOfRun(id("dc old")), -1);
  }

  void unmatched_runs_say_why() {
    Model model;
    model.setStore(m_store);
    QCOMPARE(int(model.unmatched().size()), 2);
    QCOMPARE(model.unmatched()[0].predicted.name, std::string("big (predicted)"));
    QVERIFY(model.unmatched()[0].reason.startsWith("no FINISHED measured run started before it has its config"));
    QCOMPARE(model.unmatched()[1].predicted.name, std::string("lost (predicted)"));
    QVERIFY2(model.unmatched()[1].reason.startsWith(QStringLiteral("its trace_run %1 is not in the store; no FINISHED measured")
                                                        .arg(QString(32, 'f'))),
             qPrintable(model.unmatched()[1].reason));
  }

  // The config rule on its own: a store with only "ec" measured twice (the second started later,
  // an ignored key changed) and one prediction pairs with the later one; changing a compared key
  // (the cluster) leaves it unmatched.
  void config_rule_picks_the_latest_equal_config() {
    QTemporaryDir dir;
    const QString path = dir.filePath("rule.db");
    {
      RunStore store(path.toStdString());
      Config later = pf::config("expert_centric", 4);
      later.train.eval_every = 7;  // ignored
      Config otherCluster = pf::config("expert_centric", 4, "[cluster]\nnodes = 2\n");
      const std::vector<std::pair<std::string, std::string>> tags = {{"predicted", "simulator"}};
      pf::writeRun(store, {"first", pf::config("expert_centric", 4), {10, 10, 10}, {}, false, 0}, 100);
      pf::writeRun(store, {"second", later, {5, 20, 20}, {}, false, 0}, 200);
      pf::writeRun(store, {"p", pf::config("expert_centric", 4), {22}, tags, false, 0}, 300);
      pf::writeRun(store, {"p other cluster", otherCluster, {22}, tags, false, 0}, 400);
    }
    auto store = std::make_shared<RunStore>(path.toStdString(), RunStore::Mode::read_only);
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(store);
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.pairs()[0].measured.name, std::string("second"));
    QVERIFY(near(model.pairs()[0].measuredMs, 20.0));
    QVERIFY(near(model.pairs()[0].errorPercent(), 10.0));
    QCOMPARE(int(model.unmatched().size()), 1);
    QCOMPARE(model.unmatched()[0].predicted.name, std::string("p other cluster"));
    // One pair: MAE defined, R² not.
    QVERIFY(near(model.summary().maePercent, 10.0));
    QVERIFY(std::isnan(model.summary().r2));
    QCOMPARE(model.summaryText(), QStringLiteral("1 pair · MAE 10.00 % · R² undefined: needs at least 2 pairs"));
  }

  void r2_undefined_without_variance() {
    Model model;
    model.setStore(m_store);
    std::vector<Model::Pair> pairs = model.pairs();
    for (Model::Pair& p : pairs) p.measuredMs = 20.0;  // every measurement the same
    const Model::Summary s = Model::summarize(pairs);
    QVERIFY(std::isnan(s.r2));
    QVERIFY(s.r2Undefined.contains("no variance"));
    // MAE from |13.5 - 20|, |18 - 20|, |31.5 - 20| over 20: (32.5 + 10 + 57.5) / 3 %.
    QVERIFY(near(s.maePercent, 100.0 / 3.0));
    // A perfect prediction: R² = 1, MAE = 0.
    for (Model::Pair& p : pairs) p.predictedMs = p.measuredMs = 10.0 + p.predicted.id;
    const Model::Summary perfect = Model::summarize(pairs);
    QCOMPARE(perfect.r2, 1.0);
    QCOMPARE(perfect.maePercent, 0.0);
  }

  void null_store_and_reload() {
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(m_store);
    QCOMPARE(model.rowCount(), 3);
    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.summary().pairs, 0);
    QVERIFY(model.unmatched().empty());
    QCOMPARE(model.summaryText(), QStringLiteral("no predicted run has a measured run to compare with"));
  }

  void view_scatter_identity_and_summary() {
    PredictionAccuracyView view;
    view.resize(900, 700);
    view.setRuns(m_store, {id("dc")});
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.summaryText(), QStringLiteral("3 pairs · MAE 9.17 % · R² 0.948"));
    QVERIFY2(view.message().contains(QStringLiteral("No measured run for big (predicted) (#%1)").arg(id("big (predicted)"))),
             qPrintable(view.message()));
    QVERIFY(view.message().contains("lost (predicted)"));

    QScatterSeries* points = nullptr;
    QScatterSeries* selected = nullptr;
    QLineSeries* identity = nullptr;
    for (QAbstractSeries* s : view.chart()->series()) {
      if (s->name().startsWith("pairs")) points = qobject_cast<QScatterSeries*>(s);
      else if (s->name() == "selected") selected = qobject_cast<QScatterSeries*>(s);
      else if (s->name().startsWith("identity")) identity = qobject_cast<QLineSeries*>(s);
    }
    QVERIFY(points && selected && identity);
    // One point per pair at (measured, predicted).
    QCOMPARE(points->count(), 3);
    QCOMPARE(points->at(0), QPointF(12.0, 13.5));
    QCOMPARE(points->at(1), QPointF(20.0, 18.0));
    QCOMPARE(points->at(2), QPointF(30.0, 31.5));
    // Same ms scale on both axes; the identity line from corner to corner of that range, so it
    // spans every point.
    auto* x = qobject_cast<QValueAxis*>(view.chart()->axes(Qt::Horizontal).value(0));
    auto* y = qobject_cast<QValueAxis*>(view.chart()->axes(Qt::Vertical).value(0));
    QVERIFY(x && y);
    QCOMPARE(x->min(), y->min());
    QCOMPARE(x->max(), y->max());
    QVERIFY(x->min() <= 12.0 && x->max() >= 31.5);
    QCOMPARE(identity->count(), 2);
    QCOMPARE(identity->at(0), QPointF(x->min(), x->min()));
    QCOMPARE(identity->at(1), QPointF(x->max(), x->max()));
    QVERIFY(x->titleText().contains("measured") && y->titleText().contains("predicted"));

    // The browser's selection ("dc") selects its pair; its point is ringed.
    QCOMPARE(view.table()->selectionModel()->selectedRows().size(), 1);
    QCOMPARE(view.table()->selectionModel()->selectedRows().front().row(), 2);
    QCOMPARE(selected->count(), 1);
    QCOMPARE(selected->at(0), QPointF(30.0, 31.5));
    view.selectPair(1);
    QCOMPARE(selected->count(), 1);
    QCOMPARE(selected->at(0), QPointF(20.0, 18.0));
    // A point's text names both runs (what hovering shows).
    const QString text = view.pointText(1);
    QVERIFY2(text.contains(QStringLiteral("hier (predicted) (#%1): predicted 18.000 ms/step").arg(id("hier (predicted)"))),
             qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("hier (#%1): measured 20.000 ms/step").arg(id("hier"))));
    QVERIFY(text.contains("error -10.00 %"));
    // A click on a point selects its row.
    emit points->clicked(QPointF(12.1, 13.4));
    QCOMPARE(view.table()->selectionModel()->selectedRows().front().row(), 0);
    const QPixmap shot = view.grab();
    QVERIFY(!shot.isNull());
    if (qEnvironmentVariableIsSet("MOEBENCH_GUI_SHOTS"))  // to look at
      shot.save(qEnvironmentVariable("MOEBENCH_GUI_SHOTS") + "/prediction-accuracy.png");

    view.setRuns(nullptr, {});
    QVERIFY(view.message().contains("No run store"));
    QVERIFY(view.chart()->series().isEmpty());
  }

  void main_window_tab() {
    MainWindow w;
    w.setAskBeforeClose(false);
    QVERIFY(w.openStore(QString::fromStdString(m_store->path())));
    w.show();
    w.selectRuns({id("ec")});
    QVERIFY(w.showTab("Predicted vs measured"));
    auto* view = w.findChild<PredictionAccuracyView*>();
    QVERIFY(view);
    QTRY_COMPARE(view->model()->rowCount(), 3);
    QCOMPARE(view->table()->selectionModel()->selectedRows().front().row(), 0);
  }

  void pairs_real_moebench_runs() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString config = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml");
    const QString db = dir.filePath("runs.db");
    auto cli = [&](const QStringList& args) { return test::run_cli_into_db(args, db, dir.path()); };
    QCOMPARE(cli({"run", config, "--set", "train.steps=3"}), 0);
    QCOMPARE(cli({"simulate", config, "--steps", "2"}), 0);
    const QString uuid = QString::fromStdString(RunStore(db.toStdString(), RunStore::Mode::read_only).find_run("quickstart").uuid);
    QCOMPARE(cli({"simulate", config, "--steps", "2", "--routing", "trace:" + uuid}), 0);
    QCOMPARE(cli({"simulate", config, "--steps", "1", "--set", "strategy.name=hier_a2a"}), 0);

    auto store = std::make_shared<RunStore>(db.toStdString(), RunStore::Mode::read_only);
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(store);
    QCOMPARE(model.rowCount(), 2);
    const int64_t measured = store->find_run("quickstart").id;
    QCOMPARE(model.pairs()[0].measured.id, measured);
    QCOMPARE(model.pairs()[0].match, Model::Match::Config);
    QCOMPARE(model.pairs()[1].measured.id, measured);
    QCOMPARE(model.pairs()[1].match, Model::Match::TraceRun);
    // The measured ms/step: the run's step_ms without its first (warm-up) step.
    const auto ms = store->metrics(measured, "step_ms");
    QCOMPARE(int(ms.size()), 3);
    QVERIFY(near(model.pairs()[0].measuredMs, (ms[1].value + ms[2].value) / 2));
    for (const Model::Pair& p : model.pairs()) QVERIFY(p.predictedMs > 0);
    QCOMPARE(int(model.unmatched().size()), 1);
    QCOMPARE(model.unmatched()[0].predicted.strategy, std::string("hier_a2a"));
    // The quickstart's [cluster] names no file: the prediction used the default rates, said in
    // the Rates column and the tooltip; its ceiling is its own cluster's device rate.
    const QModelIndex rates = model.index(0, Model::RatesColumn);
    QCOMPARE(rates.data().toString(), QString("defaults"));
    QVERIFY(rates.data(Qt::ToolTipRole).toString().contains("default rates"));
    QCOMPARE(model.index(0, Model::ClusterColumn).data().toString(), QString("local"));
    std::map<std::string, std::string> params;
    for (auto& [k, v] : store->params(model.pairs()[0].predicted.id)) params[k] = v;
    QCOMPARE(params["peak_gflops"], std::string("120"));  // ClusterSpec::device_flops default 1.2e11
    QVERIFY(params["peak_gflops_source"].find("cluster local") == 0);
    // With a cluster file: described; with a `moebench calibrate` file: calibrated, on its host.
    const QString described = QStringLiteral(MOEBENCH_SOURCE_DIR "/sample_configs/clusters/janus_4gpu.toml");
    QCOMPARE(cli({"simulate", config, "--steps", "1", "--cluster", described}), 0);
    QFile calibrated(dir.filePath("calibrated.toml"));
    QVERIFY(calibrated.open(QIODevice::WriteOnly));
    QFile src(described);
    QVERIFY(src.open(QIODevice::ReadOnly));
    calibrated.write("# This machine (box-7), measured by `moebench calibrate --ranks 2`.\n" + src.readAll());
    calibrated.close();
    QCOMPARE(cli({"simulate", config, "--steps", "1", "--cluster", calibrated.fileName()}), 0);
    std::vector<std::string> kinds;
    for (const auto& r : store->list_runs())
      for (auto& [k, v] : store->tags(r.id))
        if (k == "rates") kinds.push_back(v);
    QCOMPARE(kinds, (std::vector<std::string>{"defaults", "defaults", "defaults", "described", "calibrated on box-7"}));
  }

  // Pairs do not drift: a KILLED or FAILED run is never paired by config, a run started after the
  // prediction never takes the pair over, and a pair chosen in the browser (tag pair_run) wins,
  // saying the chosen run's status when it did not finish.
  void pairs_are_chosen_and_do_not_drift() {
    QTemporaryDir dir;
    const QString path = pf::write(dir);
    const Config A = pf::config("expert_centric", 4);
    int64_t killed = 0, later = 0;
    {
      RunStore store(path.toStdString());
      const double predictedStart = store.find_run("ec (predicted)").start_time;
      // An equal-config run that was KILLED, started just before the prediction.
      const RunInfo k = pf::writeRun(store, {"ec killed", A, {30, 30, 30}, {}, false, 0}, predictedStart - 1);
      store.set_status(k.id, RunStatus::killed, 0);
      killed = k.id;
      // An equal-config FINISHED run started after the prediction.
      later = pf::writeRun(store, {"ec later", A, {99, 99, 99}, {}, false, 0}, predictedStart + 5000).id;
    }
    auto store = std::make_shared<RunStore>(path.toStdString(), RunStore::Mode::read_only);
    auto id = [&](const char* name) { return store->find_run(name).id; };
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(store);
    const int row = model.rowOfRun(id("ec (predicted)"));
    QCOMPARE(model.pairs()[size_t(row)].measured.id, id("ec"));  // neither the KILLED nor the later run
    QCOMPARE(model.index(row, Model::MatchColumn).data().toString(), QString("config"));
    QCOMPARE(model.index(row, Model::RatesColumn).data().toString(), QString("unknown"));  // no tag: older run

    // The user pairs the prediction with the KILLED run: shown, with its status.
    MainWindow w;
    w.setAskBeforeClose(false);
    QVERIFY(w.openStore(path));
    QVERIFY(!w.pairPrediction(killed, id("ec (predicted)")));  // the wrong way round: refused
    QVERIFY(w.pairPrediction(id("ec (predicted)"), killed));
    model.setStore(std::make_shared<RunStore>(path.toStdString(), RunStore::Mode::read_only));
    const int r2 = model.rowOfRun(id("ec (predicted)"));
    QCOMPARE(model.pairs()[size_t(r2)].measured.id, killed);
    QCOMPARE(model.pairs()[size_t(r2)].match, Model::Match::Chosen);
    QCOMPARE(model.index(r2, Model::MatchColumn).data().toString(), QString("chosen (KILLED)"));
    QVERIFY(model.index(r2, 0).data(Qt::ToolTipRole).toString().contains("the measured run is KILLED"));
    Q_UNUSED(later);
  }
};

QTEST_MAIN(TstPredictionAccuracy)
#include "tst_gui_prediction_accuracy.moc"
