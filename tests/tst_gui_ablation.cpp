// ctest-labels: unit gui
// Ablation with repeats (issue 35): AblationModel's per-variant aggregation (n, mean and sample
// standard deviation of ms/step and tokens/s over the runs of one variant label, speedups on
// the means) and AblationVariantModel under QAbstractItemModelTester with hand-computed values;
// parseVariantLabel and variedKeys; AblationView's grouped bars (one category per value of the
// group key, one coloured bar set per value of the other key), error bars, notes, baseline and
// group chooser; and that no axis label or title is elided, with many long labels.
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "models/ablationmodel.h"
#include "models/ablationvariantmodel.h"
#include "moebench/store/run_store.h"
#include "widgets/ablationview.h"

using namespace moebench;

namespace {

// A run of 3 steps with a constant step time (so summarize_run's mean, first step left out, is
// that time) and tokens/s = 100 x ms.
struct Spec {
  const char* variant;  // the ablation.variant tag; nullptr: none
  const char* name;
  double ms;
};

// The repeats store: 2 x 2 variants, 3 + 2 + 1 + 2 runs.
//   v0 strategy.name=expert_centric moe.top_k=1  ms 10, 12, 14  -> mean 12, sd 2
//   v1 strategy.name=expert_centric moe.top_k=2  ms 9, 11       -> mean 10, sd sqrt(2)
//   v2 strategy.name=hier_a2a moe.top_k=1        ms 8           -> mean 8, no sd
//   v3 strategy.name=hier_a2a moe.top_k=2        ms 6, 6        -> mean 6, sd 0
// Speedups on the means against v0: 1, 1.2, 1.5, 2.
const std::vector<Spec> kRepeats = {
    {"strategy.name=expert_centric moe.top_k=1", "abl.1.1", 10}, {"strategy.name=expert_centric moe.top_k=1", "abl.1.2", 12},
    {"strategy.name=expert_centric moe.top_k=2", "abl.2.1", 9},  {"strategy.name=expert_centric moe.top_k=1", "abl.1.3", 14},
    {"strategy.name=expert_centric moe.top_k=2", "abl.2.2", 11}, {"strategy.name=hier_a2a moe.top_k=1", "abl.3.1", 8},
    {"strategy.name=hier_a2a moe.top_k=2", "abl.4.1", 6},        {"strategy.name=hier_a2a moe.top_k=2", "abl.4.2", 6},
};

std::vector<int64_t> writeStore(const QString& path, const std::vector<Spec>& specs) {
  RunStore store(path.toStdString());
  std::vector<int64_t> ids;
  for (size_t i = 0; i < specs.size(); ++i) {
    RunInfo info;
    info.name = specs[i].name;
    info.experiment = "abl";
    info.strategy = "expert_centric";
    info.ranks = 1;
    info.start_time = 1700000000.0 + double(i);
    const int64_t id = store.create_run(info).id;
    for (int step = 1; step <= 3; ++step)
      store.log_step(id,
                     {{"loss", step, 4.0 - 0.1 * step, 0},
                      {"step_ms", step, specs[i].ms, 0},
                      {"tokens_per_s", step, 100 * specs[i].ms, 0}},
                     {}, {}, {});
    if (specs[i].variant) store.set_tag(id, "ablation.variant", specs[i].variant);
    store.set_status(id, RunStatus::finished, info.start_time + 1);
    ids.push_back(id);
  }
  return ids;
}

QString cell(const QAbstractItemModel& m, int row, int column, int role = Qt::DisplayRole) {
  return m.index(row, column).data(role).toString();
}

}  // namespace

class TestGuiAblation : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    m_ids = writeStore(m_dir.filePath("repeats.db"), kRepeats);
    m_store = std::make_shared<RunStore>(m_dir.filePath("repeats.db").toStdString(), RunStore::Mode::read_only);
  }

  void parseLabels() {
    using KV = AblationModel::KeyValues;
    QCOMPARE(AblationModel::parseVariantLabel("strategy.name=hier_a2a moe.top_k=2"),
             (KV{{"strategy.name", "hier_a2a"}, {"moe.top_k", "2"}}));
    // a config's name first (several configs), a value holding a space and "="
    QCOMPARE(AblationModel::parseVariantLabel("ppmoe_a moe.moe_layers=[0, 1] data.path=a=b"),
             (KV{{"", "ppmoe_a"}, {"moe.moe_layers", "[0, 1]"}, {"data.path", "a=b"}}));
    QCOMPARE(AblationModel::parseVariantLabel("ec"), (KV{{"", "ec"}}));
    QCOMPARE(AblationModel::parseVariantLabel(""), (KV{{"", ""}}));
    const AblationModel::Spread s = AblationModel::spread({10, 12, 14, NAN});
    QCOMPARE(s.n, 3);
    QCOMPARE(s.mean, 12.0);
    QCOMPARE(s.sd, 2.0);
    QVERIFY(std::isnan(AblationModel::spread({8}).sd));
    QVERIFY(std::isnan(AblationModel::spread({}).mean));
  }

  void variantAggregation() {
    AblationModel model;
    QAbstractItemModelTester runTester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    AblationVariantModel variants(&model);
    QAbstractItemModelTester variantTester(&variants, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRuns(m_store, m_ids);
    QCOMPARE(model.rowCount(), 8);
    QCOMPARE(model.variantCount(), 4);
    QCOMPARE(variants.rowCount(), 4);
    QCOMPARE(variants.columnCount(), 7);
    QCOMPARE(model.variedKeys(), (QStringList{"strategy.name", "moe.top_k"}));
    QCOMPARE(model.variantValue(2, "strategy.name"), QStringLiteral("hier_a2a"));
    QCOMPARE(model.variantValue(2, "moe.routing"), QString());
    // rows of each variant, in run order (the third run is v1's first)
    QCOMPARE(model.variants()[0].rows, (std::vector<int>{0, 1, 3}));
    QCOMPARE(model.variants()[1].rows, (std::vector<int>{2, 4}));
    QCOMPARE(model.variantOfRow(3), 0);
    QCOMPARE(model.variantOfRow(7), 3);
    // the exact numbers, by hand (see kRepeats)
    const QStringList header = {"Variant", "Runs", "ms/step", "± ms/step", "tokens/s", "± tokens/s", "Speedup"};
    for (int c = 0; c < 7; ++c) QCOMPARE(variants.headerData(c, Qt::Horizontal).toString(), header[c]);
    const QList<QStringList> want = {
        {"strategy.name=expert_centric moe.top_k=1", "3", "12.00", "2.00", "1200", "200", "1.00x"},
        {"strategy.name=expert_centric moe.top_k=2", "2", "10.00", "1.41", "1000", "141", "1.20x"},
        {"strategy.name=hier_a2a moe.top_k=1", "1", "8.00", "", "800", "", "1.50x"},
        {"strategy.name=hier_a2a moe.top_k=2", "2", "6.00", "0.00", "600", "0", "2.00x"},
    };
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 7; ++c) QCOMPARE(cell(variants, r, c), want[r][c]);
    using V = AblationVariantModel;
    QCOMPARE(variants.index(0, V::StepMsColumn).data(Qt::UserRole).toDouble(), 12.0);
    QCOMPARE(variants.index(0, V::StepMsSdColumn).data(Qt::UserRole).toDouble(), 2.0);
    QCOMPARE(variants.index(1, V::StepMsSdColumn).data(Qt::UserRole).toDouble(), std::sqrt(2.0));
    QCOMPARE(variants.index(1, V::TokensPerSSdColumn).data(Qt::UserRole).toDouble(), 100 * std::sqrt(2.0));
    QVERIFY(!variants.index(2, V::StepMsSdColumn).data(Qt::UserRole).isValid());  // n = 1
    QCOMPARE(variants.index(3, V::StepMsSdColumn).data(Qt::UserRole).toDouble(), 0.0);
    QCOMPARE(variants.index(0, V::RunsColumn).data(Qt::UserRole).toInt(), 3);
    QCOMPARE(variants.index(3, V::SpeedupColumn).data(Qt::UserRole).toDouble(), 2.0);
    QCOMPARE(variants.index(1, V::VariantColumn).data(AblationModel::RunIdRole).toLongLong(), qint64(m_ids[2]));
    QCOMPARE(cell(variants, 0, V::VariantColumn, Qt::ToolTipRole),
             QStringLiteral("strategy.name=expert_centric moe.top_k=1: 3 runs: abl.1.1 (id %1), abl.1.2 (id %2), "
                            "abl.1.3 (id %3)")
                 .arg(m_ids[0])
                 .arg(m_ids[1])
                 .arg(m_ids[3]));
    // per run: the baseline variant's mean (12) over the run's ms/step
    QCOMPARE(cell(model, 0, AblationModel::SpeedupColumn), QStringLiteral("1.20x"));  // 12 / 10
    QCOMPARE(cell(model, 1, AblationModel::SpeedupColumn), QStringLiteral("1.00x"));  // 12 / 12
    QCOMPARE(cell(model, 3, AblationModel::SpeedupColumn), QStringLiteral("0.86x"));  // 12 / 14
    QCOMPARE(model.speedupAt(7), 2.0);

    // another repeat of the baseline variant as baseline: nothing changes but the baseline run
    QSignalSpy changed(&variants, &QAbstractItemModel::dataChanged);
    model.setBaseline(m_ids[3]);
    QCOMPARE(model.baselineVariant(), 0);
    QCOMPARE(cell(variants, 1, V::SpeedupColumn), QStringLiteral("1.20x"));
    // v3 as baseline: speedups 6 / 12, 6 / 10, 6 / 8, 1
    model.setBaseline(m_ids[7]);
    QCOMPARE(model.baselineVariant(), 3);
    QVERIFY(changed.count() >= 1);
    QCOMPARE(changed.last().at(0).toModelIndex().column(), int(V::SpeedupColumn));
    QStringList speedups;
    for (int r = 0; r < 4; ++r) speedups << cell(variants, r, V::SpeedupColumn);
    QCOMPARE(speedups, (QStringList{"0.50x", "0.60x", "0.75x", "1.00x"}));
    QCOMPARE(model.variantSpeedup(2), 0.75);
    // fewer runs: the variant model follows the reset
    model.setRuns(m_store, {m_ids[0], m_ids[5]});
    QCOMPARE(variants.rowCount(), 2);
    QCOMPARE(cell(variants, 0, V::RunsColumn), QStringLiteral("1"));
    QCOMPARE(model.variedKeys(), QStringList{"strategy.name"});  // both have moe.top_k=1
    model.clear();
    QCOMPARE(variants.rowCount(), 0);
    QCOMPARE(model.baselineVariant(), -1);
  }

  void groupedBarsWithErrorBars() {
    AblationView view;
    view.setRuns(m_store, m_ids);
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
    if (qEnvironmentVariableIsSet("MOEBENCH_GUI_SHOTS"))  // to look at
      view.grab().save(qEnvironmentVariable("MOEBENCH_GUI_SHOTS") + "/ablation-repeats.png");
    QCOMPARE(view.groupKey(), QStringLiteral("strategy.name"));
    QVERIFY(view.groupChooser()->isVisible());
    QCOMPARE(view.groupChooser()->count(), 2);
    QCOMPARE(view.categoryLabels(), (QStringList{"strategy.name=expert_centric", "strategy.name=hier_a2a"}));
    QCOMPARE(view.barSetNames(), (QStringList{"moe.top_k=1", "moe.top_k=2"}));
    QChart* chart = view.chartView()->chart();
    QVERIFY(chart->legend()->isVisible());
    QBarSeries* bars = nullptr;
    QList<QLineSeries*> errors;
    for (QAbstractSeries* s : chart->series()) {
      if (auto* b = qobject_cast<QBarSeries*>(s)) bars = b;
      if (auto* l = qobject_cast<QLineSeries*>(s)) errors << l;
    }
    QVERIFY(bars);
    // bars: the means, set = moe.top_k, category = strategy
    QCOMPARE(bars->barSets().at(0)->at(0), 12.0);
    QCOMPARE(bars->barSets().at(1)->at(0), 10.0);
    QCOMPARE(bars->barSets().at(0)->at(1), 8.0);
    QCOMPARE(bars->barSets().at(1)->at(1), 6.0);
    QVERIFY(bars->barSets().at(0)->color() != bars->barSets().at(1)->color());
    // error bars: v0 and v1 (v2 has n = 1, v3 sd 0), at their bar's centre: category - 0.4 +
    // (set + 0.5) * 0.8 / 2, from mean - sd to mean + sd
    QCOMPARE(errors.size(), 2);
    const QList<QPointF> e0 = errors[0]->points();
    QCOMPARE(e0.size(), 6);
    QCOMPARE(e0[2], QPointF(-0.2, 14));
    QCOMPARE(e0[3], QPointF(-0.2, 10));
    const QList<QPointF> e1 = errors[1]->points();
    QCOMPARE(e1[2].x(), 0.2);
    QCOMPARE(e1[2].y(), 10 + std::sqrt(2.0));
    QCOMPARE(e1[3].y(), 10 - std::sqrt(2.0));
    for (QLineSeries* l : errors) QVERIFY(!chart->legend()->markers(l).first()->isVisible());
    QCOMPARE(view.speedupLabels(), (QStringList{"1.00x", "1.20x", "1.50x", "2.00x"}));
    QCOMPARE(view.barNotes(), (QStringList{"1.00x baseline\n12.00 ± 2.00\nn = 3", "1.20x\n10.00 ± 1.41\nn = 2",
                                           "1.50x\n8.00\nn = 1", "2.00x\n6.00 ± 0.00\nn = 2"}));
    QCOMPARE(view.chartTitle(), QStringLiteral("ms/step per variant: mean over its runs ± one standard deviation\n"
                                               "speedup on the mean ms/step against strategy.name=expert_centric "
                                               "moe.top_k=1"));
    // the baseline chooser lists variants
    QCOMPARE(view.baselineChooser()->count(), 4);
    QCOMPARE(view.baselineChooser()->itemText(0), QStringLiteral("strategy.name=expert_centric moe.top_k=1 (3 runs)"));
    QCOMPARE(view.baselineChooser()->itemText(2), QStringLiteral("strategy.name=hier_a2a moe.top_k=1 (abl.3.1)"));
    view.baselineChooser()->setCurrentIndex(3);
    QCOMPARE(view.speedupLabels(), (QStringList{"0.50x", "0.60x", "0.75x", "1.00x"}));
    QVERIFY(view.setBaseline(m_ids[1]));  // a repeat of v0: v0 is the baseline
    QCOMPARE(view.baselineChooser()->currentIndex(), 0);
    QCOMPARE(view.speedupLabels().at(3), QStringLiteral("2.00x"));
    // tokens/s: the same grouping, the means 1200 / 1000 / 800 / 600, speedups still on ms/step
    view.setMetric(AblationView::TokensPerS);
    bars = qobject_cast<QBarSeries*>(chart->series().first());
    QCOMPARE(bars->barSets().at(0)->at(0), 1200.0);
    QCOMPARE(view.barNotes().at(1), QStringLiteral("1.20x\n1000 ± 141\nn = 2"));
    // group by moe.top_k: categories and colours swap
    QVERIFY(view.setGroupKey("moe.top_k"));
    QVERIFY(!view.setGroupKey("train.lr"));
    QCOMPARE(view.categoryLabels(), (QStringList{"moe.top_k=1", "moe.top_k=2"}));
    QCOMPARE(view.barSetNames(), (QStringList{"strategy.name=expert_centric", "strategy.name=hier_a2a"}));
    bars = qobject_cast<QBarSeries*>(chart->series().first());
    QCOMPARE(bars->barSets().at(1)->at(0), 800.0);   // hier_a2a, top_k 1
    QCOMPARE(bars->barSets().at(0)->at(1), 1000.0);  // expert_centric, top_k 2
    // one varied key: one bar set, no legend, no group chooser, the categories are the labels
    view.setRuns(m_store, {m_ids[0], m_ids[2], m_ids[1]});  // v0, v1, v0
    QCOMPARE(view.model()->variedKeys(), QStringList{"moe.top_k"});
    QVERIFY(!view.groupChooser()->isVisible());
    QCOMPARE(view.categoryLabels(), (QStringList{"moe.top_k=1", "moe.top_k=2"}));
    QCOMPARE(view.barSetNames(), QStringList{"tokens/s"});
    QVERIFY(!chart->legend()->isVisible());
    QVERIFY2(view.chartTitle().endsWith("\nevery variant: strategy.name=expert_centric"), qPrintable(view.chartTitle()));
    // one variant (nothing varies): its whole label, wrapped at a space, read back whole
    view.setRuns(m_store, {m_ids[0], m_ids[1]});
    QCOMPARE(view.model()->variedKeys(), QStringList());
    QCOMPARE(view.categoryLabels(), QStringList{"strategy.name=expert_centric moe.top_k=1"});
    QCOMPARE(view.barNotes(), QStringList{"1.00x baseline\n1100 ± 141\nn = 2"});  // tokens/s still shown
  }

  // Issue 35: the category labels were elided ("strategy…."), the title cut off. Ten variants
  // with long labels in a 900 px wide view: every label and the title are drawn whole (a scroll
  // bar instead), in the chart's own text items as well as in the axis.
  void labelsAndTitleAreNeverElided() {
    QTemporaryDir dir;
    const QStringList strategies = {"expert_centric", "hier_a2a", "data_centric", "fastermoe", "janus",
                                    "pipeline_moe", "moesys", "monta", "expert_centric_overlap", "hier_a2a_topo"};
    std::vector<std::string> labels;
    std::vector<Spec> specs;
    for (int i = 0; i < strategies.size(); ++i)
      labels.push_back("strategy.name=" + strategies[i].toStdString() + " moe.routing=zipf:1.2 train.lr=1e-3");
    for (int i = 0; i < strategies.size(); ++i) {
      specs.push_back({labels[size_t(i)].c_str(), "r", 10.0 + i});
      specs.push_back({labels[size_t(i)].c_str(), "r", 11.0 + i});
    }
    const std::vector<int64_t> ids = writeStore(dir.filePath("long.db"), specs);
    auto store = std::make_shared<RunStore>(dir.filePath("long.db").toStdString(), RunStore::Mode::read_only);
    AblationView view;
    view.resize(900, 600);
    view.setRuns(store, ids);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QApplication::processEvents();
    QCOMPARE(view.model()->variedKeys(), QStringList{"strategy.name"});
    QStringList want;
    for (const QString& s : strategies) want << "strategy.name=" + s;
    QCOMPARE(view.categoryLabels(), want);
    QChart* chart = view.chartView()->chart();
    auto* axis = qobject_cast<QBarCategoryAxis*>(chart->axes(Qt::Horizontal).value(0));
    QVERIFY(axis);
    if (qEnvironmentVariableIsSet("MOEBENCH_GUI_SHOTS")) {
      view.chartView()->grab().save(qEnvironmentVariable("MOEBENCH_GUI_SHOTS") + "/ablation-long-chart.png");
    }
    QVERIFY(!axis->labelsTruncated());
    for (QAbstractAxis* a : chart->axes()) QVERIFY2(!a->labelsTruncated(), qPrintable(a->titleText()));
    for (const QString& c : axis->categories()) QVERIFY2(!c.contains("...") && !c.contains(u'…'), qPrintable(c));
    // the chart is wider than the view: it scrolls rather than elides
    QVERIFY2(view.chartView()->width() > 900, qPrintable(QString::number(view.chartView()->width())));
    // every text the chart draws is whole: the title, the axis titles and each category line
    QStringList drawn;
    for (QGraphicsItem* item : chart->scene()->items())
      if (auto* text = dynamic_cast<QGraphicsTextItem*>(item); text && text->isVisible())
        drawn << text->toPlainText().replace(QChar::Nbsp, u' ');
    for (const QString& t : drawn) QVERIFY2(!t.contains("...") && !t.contains(u'…'), qPrintable(t));
    QVERIFY2(drawn.contains(view.chartTitle()), qPrintable(drawn.join(" | ")));
    QVERIFY(view.chartTitle().contains("against strategy.name=expert_centric"));
    QVERIFY(view.chartTitle().endsWith("every variant: moe.routing=zipf:1.2 train.lr=1e-3"));
    // each category's lines, joined, are its label (wrapped after "=" here)
    for (const QString& w : want)
      QVERIFY2(drawn.contains(AblationView::wrapLabel(w).join(u'\n')), qPrintable(w + " not in " + drawn.join(" | ")));
    QCOMPARE(view.barNotes().at(9), QStringLiteral("0.54x\n19.50 ± 0.71\nn = 2"));  // 10.5 / 19.5 = 0.538
  }

  void wrapLabel() {
    QCOMPARE(AblationView::wrapLabel("strategy.name=expert_centric moe.top_k=1", 24),
             (QStringList{"strategy.name=", "expert_centric ", "moe.top_k=1"}));
    QCOMPARE(AblationView::wrapLabel("short", 24), QStringList{"short"});
    QCOMPARE(AblationView::wrapLabel("a_very_long_word_without_breaks_at_all", 10),
             QStringList{"a_very_long_word_without_breaks_at_all"});
  }

 private:
  QTemporaryDir m_dir;
  std::vector<int64_t> m_ids;
  std::shared_ptr<RunStore> m_store;
};

QTEST_MAIN(TestGuiAblation)
#include "tst_gui_ablation.moc"
